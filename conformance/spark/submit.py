"""A driver program for the user's own ``spark-submit``: check a stored trace on the cluster spark-submit names.

    spark-submit --master spark://HOST:7077 [--conf spark.executor.memory=4g ...] \\
        "$(python -c 'import conformance.spark.submit as m; print(m.__file__)')" TRACE [--parts N] [--json]

``keyshared check --engine spark`` starts its own Spark driver (local, or ``--spark-master spark://...``); where a
cluster is reached only through ``spark-submit`` (YARN, Kubernetes, a site's own launch settings), this script is
the driver: it takes the session spark-submit made (its master, deploy mode and ``--conf`` settings), chooses the
part count by the executors' memory as ``keyshared check`` does (:func:`conformance.spark.parts.choose_for_context`;
``--parts`` overrides), runs :func:`conformance.spark.check_with_spark` and prints the verdict (``--json``: the JSON
of ``keyshared check --json``) followed by the part choice, exiting as ``keyshared check`` does (0 valid, 1
invalid, 4 unknown).

TRACE is a path the driver and every executor read at the same place (a shared file system: the tasks read it
with pyarrow), ``file://`` for the same, or a URI only Spark reads (``hdfs://``, ``s3a://``: Spark reads it, a
slower path; ``docs/checker.md``, "Running on Spark").  Nothing here is Spark-specific beyond the session.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

__all__ = ["main", "parts_for"]


def parts_for(context: Any, trace: Any) -> Any:
    """The part choice (:class:`~conformance.spark.parts.PartChoice`) for a stored trace on a started context, as
    ``keyshared check`` makes it: by the trace's events (from its Parquet metadata or its bucketed manifest;
    unknown for JSON Lines and URIs) and the executors' memory."""
    from conformance.spark.parts import choose_for_context, layout_choice

    choice = choose_for_context(context, str(context.master), _events(trace))
    if not isinstance(trace, str) and trace.format == "bucketed":
        return layout_choice(choice, trace.layout)
    return choice


def _events(trace: Any) -> int | None:
    return None if isinstance(trace, str) else trace.known_events()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="conformance.spark.submit", description=__doc__.split("\n\n")[0])
    parser.add_argument("trace", help="a path every executor reads at the same place, file://..., or a URI")
    parser.add_argument("--parts", type=int, default=None, help="parts to split the trace into (default: by memory)")
    parser.add_argument("--profile", default=None, help="a checker profile (as keyshared check --profile)")
    parser.add_argument("--json", action="store_true", help="print the verdict as JSON")
    args = parser.parse_args(argv)
    from pyspark.sql import SparkSession

    from conformance.spark import check_with_spark
    from conformance.spark.engine import _local_path
    from conformance.trace.reader import open_trace

    spark = SparkSession.builder.getOrCreate()  # the master and settings spark-submit gave
    try:
        local = _local_path(args.trace)
        trace: Any = open_trace(local) if local is not None else args.trace
        choice = parts_for(spark.sparkContext, trace)
        parts = args.parts if args.parts is not None else choice.parts
        verdict = check_with_spark(trace, args.profile, spark=spark, parts=parts)
        if not isinstance(trace, str):
            from conformance.checks.api import with_event_checks

            verdict = with_event_checks(verdict, trace)  # (a failover run's replication check, as the CLI)
        extra = {**verdict.extra, "part_choice": {**choice.as_extra(), "given": args.parts}}
        if args.json:
            print(json.dumps({**verdict.to_json(), "extra": extra}, indent=2))
        else:
            print(verdict.render())
            print(f"Spark parts: {parts} ({'given' if args.parts is not None else choice.reason()})")
        return int(verdict.exit_code)
    finally:
        spark.stop()


if __name__ == "__main__":
    sys.exit(main())
