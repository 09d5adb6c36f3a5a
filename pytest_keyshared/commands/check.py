"""``keyshared check TRACE``: judge a stored trace (JSON Lines, gzip, Parquet, or a directory of Parquet chunks)
and print the verdict.

Exit codes: 0 valid, 1 invalid, 2 unreadable or malformed trace, unknown profile or engine (one line on
stderr naming the file, the line and the problem).  ``--json`` prints the verdict as one JSON object;
without it a readable summary with the explanations.  ``--engine spark`` starts a Spark session
(``--spark-master``, default ``local[*]``: any master URL pyspark accepts, e.g. ``spark://host:7077``) for this
run and stops it afterwards; with it, TRACE may also be a URI only Spark reads (``hdfs://``, ``s3a://`` with the
user's connectors), which Spark's executors read directly (not validated by the Python reader first).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["add_parser", "run"]

PROFILE_HELP = (
    "contract profile: pip379, classic, out-of-order, sticky, shared, strict or lenient"
    " (default: derived from the trace header)"
)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "check",
        help="check a stored trace and print the verdict",
        description="Check a delivery trace against the Key_Shared, delivery and deduplication contracts.",
    )
    parser.add_argument(
        "trace",
        metavar="TRACE",
        help="trace: .jsonl, .jsonl.gz, .parquet, a directory of .parquet chunks,"
        " or (--engine spark) a URI Spark can read",
    )
    parser.add_argument("--engine", choices=("python", "spark"), default="python", help="checker engine")
    parser.add_argument("--profile", metavar="NAME", default=None, help=PROFILE_HELP)
    parser.add_argument("--json", action="store_true", help="print the verdict as JSON")
    parser.add_argument(
        "--spark-master", metavar="URL", default="local[*]", help="Spark master for --engine spark (default local[*])"
    )
    parser.add_argument(
        "--spark-parts",
        type=int,
        default=None,
        metavar="N",
        help="parts a trace is split into on Spark (default: 1 below 200k events, else spark.sql.shuffle.partitions)",
    )
    parser.add_argument(
        "--max-examples", type=int, default=5, metavar="N", help="explanations shown per kind (default 5)"
    )
    parser.set_defaults(handler=run)
    return parser


def run(args: argparse.Namespace) -> int:
    from conformance.checks import check_trace, get_profile
    from conformance.trace.reader import open_trace
    from reference_model.errors import InvalidArgument

    profile = None if args.profile is None else get_profile(args.profile)
    if args.spark_parts is not None and args.spark_parts < 1:
        raise InvalidArgument(f"--spark-parts must be at least 1, not {args.spark_parts}")
    if args.engine == "spark" and _remote(args.trace):
        verdict = _check_on_spark(args.trace, profile, args.spark_master, args.spark_parts)
    elif args.engine == "spark":
        verdict = _check_on_spark(open_trace(_local(args.trace)), profile, args.spark_master, args.spark_parts)
    else:
        source = open_trace(_local(args.trace))
        verdict = check_trace(source, profile=profile, engine="python")
    if args.json:
        print(verdict.to_json_text())
    else:
        print(verdict.render(max_per_kind=max(args.max_examples, 0)))
    return 0 if verdict.valid else 1


def _remote(trace: str) -> bool:
    """A URI with a scheme other than ``file://``: only Spark reads it."""
    scheme, sep, _rest = trace.partition("://")
    return bool(sep) and scheme.isidentifier() and scheme != "file"


def _local(trace: str) -> str:
    return trace[len("file://") :] if trace.startswith("file://") else trace


#: Below this many events a trace is checked in one part on Spark (splitting costs more than it saves).
SMALL_TRACE = 200_000


def _events_in(source: Any) -> int | None:
    """How many events a local trace holds, from Parquet metadata (None when it would take a read)."""
    if isinstance(source, str) or source.format != "parquet":
        return None
    import pyarrow.parquet as pq

    return int(sum(pq.ParquetFile(f).metadata.num_rows for f in source.files))


def _check_on_spark(source: Any, profile: Any, master: str, parts: int | None) -> Any:
    from conformance.spark import build_session, check_with_spark
    from reference_model.errors import InvalidArgument

    events = _events_in(source)
    small = events is not None and events < SMALL_TRACE
    if not isinstance(source, str) and (small or events is None):
        for _ in source.batches():  # a malformed trace fails here, before the JVM starts
            pass
    if parts is None and small:
        parts = 1
    try:
        spark = build_session(master, small=small)
    except ImportError:  # pragma: no cover - pyspark is an optional extra
        raise InvalidArgument("--engine spark needs pyspark: pip install 'pytest-keyshared[spark]'") from None
    try:
        # a large Parquet trace is validated while Spark checks it (a problem cancels the job)
        return check_with_spark(source, profile, spark=spark, validate=not small and events is not None, parts=parts)
    finally:
        spark.stop()
        sys.stdout.flush()
