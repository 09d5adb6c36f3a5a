"""``keyshared check TRACE``: judge a stored trace (JSON Lines, gzip or Parquet) and print the verdict.

Exit codes: 0 valid, 1 invalid, 2 unreadable or malformed trace, unknown profile or engine (one line on
stderr naming the file, the line and the problem), 4 verdict unknown (a forbidden kind could not be judged, or
a check crashed: the check and the exception are in the notes).  ``--json`` prints the verdict as one JSON object;
without it a readable summary with the explanations.  ``--engine spark`` starts a Spark session
(``--spark-master``, default ``local[*]``) for this run and stops it afterwards.
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
    parser.add_argument("trace", metavar="TRACE", help="trace file: .jsonl, .jsonl.gz or .parquet")
    parser.add_argument("--engine", choices=("python", "spark"), default="python", help="checker engine")
    parser.add_argument("--profile", metavar="NAME", default=None, help=PROFILE_HELP)
    parser.add_argument("--json", action="store_true", help="print the verdict as JSON")
    parser.add_argument(
        "--spark-master", metavar="URL", default="local[*]", help="Spark master for --engine spark (default local[*])"
    )
    parser.add_argument(
        "--max-examples", type=int, default=5, metavar="N", help="explanations shown per kind (default 5)"
    )
    parser.set_defaults(handler=run)
    return parser


def run(args: argparse.Namespace) -> int:
    from conformance.checks import check_trace, get_profile
    from conformance.trace.reader import open_trace

    profile = None if args.profile is None else get_profile(args.profile)
    source = open_trace(args.trace)
    if args.engine == "spark":
        verdict = _check_on_spark(source, profile, args.spark_master)
    else:
        verdict = check_trace(source, profile=profile, engine="python")
    if args.json:
        print(verdict.to_json_text())
    else:
        print(verdict.render(max_per_kind=max(args.max_examples, 0)))
    return int(verdict.exit_code)


def _check_on_spark(source: Any, profile: Any, master: str) -> Any:
    from conformance.spark import build_session, check_with_spark
    from reference_model.errors import InvalidArgument

    for _ in source.batches():  # a malformed trace fails here, before the JVM starts
        pass
    try:
        spark = build_session(master)
    except ImportError:  # pragma: no cover - pyspark is an optional extra
        raise InvalidArgument("--engine spark needs pyspark: pip install 'pytest-keyshared[spark]'") from None
    try:
        from conformance.checks.api import with_event_checks

        return with_event_checks(check_with_spark(source, profile, spark=spark, validate=False), source)
    finally:
        spark.stop()
        sys.stdout.flush()
