"""``keyshared convert``: a stored trace rewritten in the bucketed layout (trace format 2), made for checking in
parts (each part from its own files: ``docs/trace-format.md``, "The bucketed layout").

A thin shell over :func:`conformance.trace.buckets.convert_to_buckets`.
"""

from __future__ import annotations

import argparse
from typing import Any

from pytest_keyshared.commands._errors import look_at
from pytest_keyshared.commands._layout import positive_int
from reference_model.errors import InvalidArgument

__all__ = ["add_parser", "run"]

_EPILOG = """\
examples:
  keyshared convert trace.parquet trace-buckets --buckets 16
  keyshared check trace-buckets          # checked bucket by bucket
"""


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "convert",
        help="rewrite a trace in the bucketed layout, for checking in parts",
        description="Rewrite a stored trace (JSON Lines, Parquet or a directory of chunks) as a directory in the"
        " bucketed layout: the events of each message-key bucket, the cross-key events once, and the identity"
        " evidence by (producer, seq), so that each part is checked from its own files.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("trace", metavar="TRACE", help="the trace to convert")
    parser.add_argument("out", metavar="OUT", help="the directory to write (new or empty)")
    parser.add_argument("--buckets", type=positive_int, default=16, metavar="N", help="how many buckets (default: 16)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from conformance.trace.buckets import convert_to_buckets

    look_at(args.out)
    try:
        layout = convert_to_buckets(args.trace, args.out, args.buckets)
    except ValueError as exc:
        raise InvalidArgument(str(exc)) from None
    largest = max(layout.bucket_events)
    print(
        f"{args.out}: {layout.events:,} events in {layout.buckets} buckets (largest {largest:,}),"
        f" {layout.shared:,} shared{'' if layout.exact else '; the split is not exact: checked whole'}"
    )
    return 0
