"""``--trace-layout flat|bucketed`` and ``--buckets N`` of the commands that write traces (``keyshared run``,
``keyshared soak``): whether the ended trace is also stored in the bucketed layout (trace format 2,
``docs/trace-format.md``), by the converter's writer (:func:`conformance.trace.buckets.write_bucketed_copy`).

The choices are spelt here (the CLI imports no ``conformance`` module to build its parsers); a test holds them
equal to :data:`conformance.trace.buckets.TRACE_LAYOUTS` and :data:`~conformance.trace.buckets.DEFAULT_BUCKETS`.
"""

from __future__ import annotations

import argparse
from typing import Any

from reference_model.errors import InvalidArgument

__all__ = ["LAYOUT_CHOICES", "LAYOUT_DEFAULT_BUCKETS", "add_layout_options", "buckets_from_args"]

LAYOUT_CHOICES = ("flat", "bucketed")
LAYOUT_DEFAULT_BUCKETS = 16


def add_layout_options(parser: Any, *, what: str) -> None:
    """The two options, on ``parser``; ``what``: the trace the command writes (for the help)."""
    parser.add_argument(
        "--trace-layout",
        choices=LAYOUT_CHOICES,
        default="flat",
        help=f"bucketed: also store {what} in the bucketed layout (trace-buckets/, for checking in parts) once the"
        " trace has ended; flat (default): only as recorded",
    )
    parser.add_argument(
        "--buckets",
        type=positive_int,
        default=None,
        metavar="N",
        help=f"buckets of --trace-layout bucketed (default: {LAYOUT_DEFAULT_BUCKETS})",
    )


def positive_int(text: str) -> int:
    """argparse's type for a whole number of at least 1 (``--buckets``)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not at least 1")
    return value


def buckets_from_args(args: argparse.Namespace) -> int | None:
    """The bucket count of the bucketed copy, or None (flat).  ``--buckets`` without ``--trace-layout bucketed``
    is bad input (it would do nothing)."""
    buckets: int | None = getattr(args, "buckets", None)
    if getattr(args, "trace_layout", "flat") != "bucketed":
        if buckets is not None:
            raise InvalidArgument(
                f"--buckets {buckets} applies to --trace-layout bucketed; add --trace-layout bucketed or drop --buckets"
            )
        return None
    return LAYOUT_DEFAULT_BUCKETS if buckets is None else buckets
