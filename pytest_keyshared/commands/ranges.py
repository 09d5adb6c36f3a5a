"""``keyshared ranges``: each consumer's hash ranges, as that Pulsar version's topic stats print them.

A thin shell over :func:`reference_model.selectors.make_selector` and ``Selector.ranges()``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from pytest_keyshared.commands._selector_args import (
    Membership,
    add_selector_options,
    build_membership,
    describe,
    format_range,
    hash_range_shown,
    parse_consumer_specs,
    stats_field,
)
from reference_model.selectors import HashRange, merge_ranges

__all__ = ["add_parser", "run"]

_EPILOG = """\
examples:
  keyshared ranges c1 c2 c3
  keyshared ranges --pulsar-version 3.0 --points 3 --json consumer1 consumer2
  keyshared ranges --selector auto-split c1 c2 c3
  keyshared ranges --selector sticky c1=0-32767 c2=32768-65535
  keyshared ranges --selector sticky c1=0-99,400-65535 c2=100-399

Consumers join in the order given.  A repeated name is shown as NAME#2, NAME#3, ... (also as JSON key).
"""


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "ranges",
        help="print each consumer's hash ranges, as a Pulsar version's topic stats print them",
        description="Print each consumer's Key_Shared hash ranges as the chosen Pulsar version reports them in"
        " topic stats (4.x keyHashRangeArrays: merged; 2.x/3.x keyHashRanges: one range per ring point).",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_selector_options(parser)
    parser.add_argument(
        "consumers",
        nargs="+",
        metavar="CONSUMER",
        help="consumer names in join order; with --selector sticky: NAME=START-END[,START-END...]",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    specs = parse_consumer_specs(args.consumers, sticky=args.selector == "sticky", split_commas=False)
    membership = build_membership(args, specs)
    ranges = membership.selector.ranges()
    if args.json:
        print(json.dumps({membership.labels[c]: [[s, e] for s, e in r] for c, r in ranges.items()}))
    else:
        print(render(membership, ranges, args))
    return 0


def _slots_within(ranges: list[HashRange], low: int, high: int) -> int:
    return sum(min(e, high) - max(s, low) + 1 for s, e in merge_ranges(ranges) if min(e, high) >= max(s, low))


def _wrap(items: list[str], width: int) -> list[str]:
    """Lay the range texts out on lines of at most ``width`` characters, never splitting one."""
    lines: list[str] = []
    for item in items:
        if lines and len(lines[-1]) + 1 + len(item) <= width:
            lines[-1] += " " + item
        else:
            lines.append(item)
    return lines or ["-"]


def render(membership: Membership, ranges: dict[Any, list[HashRange]], args: argparse.Namespace) -> str:
    """A table: one row per consumer, its ranges wrapped under the last column."""
    selector = membership.selector
    low, high = hash_range_shown(selector)
    size = high - low + 1
    lines = [f"{describe(selector, args)}; stats field {stats_field(selector, args.classic)}"]
    header = ("CONSUMER", "ID", "RANGES", "SLOTS", "SHARE")
    rows = []
    range_texts: list[list[str]] = []
    for consumer in membership.consumers:
        own = ranges[consumer]
        slots = _slots_within(own, low, high)
        rows.append(
            (
                membership.labels[consumer],
                str(consumer.consumer_id),
                str(len(own)),
                str(slots),
                f"{100.0 * slots / size:.2f}%",
            )
        )
        range_texts.append([format_range(r) for r in own])
    widths = [max(len(header[i]), *(len(row[i]) for row in rows)) for i in range(len(header))]
    indent = sum(widths) + 2 * len(widths)
    wrap_at = max(40, 120 - indent)

    def cells(values: tuple[str, ...]) -> str:
        first = values[0].ljust(widths[0])
        return "  ".join([first, *(v.rjust(w) for v, w in zip(values[1:], widths[1:], strict=True))])

    lines.append(cells(header) + "  HASH RANGES (inclusive)")
    for row, texts in zip(rows, range_texts, strict=True):
        wrapped = _wrap(texts, wrap_at)
        lines.append(cells(row) + "  " + wrapped[0])
        lines.extend(" " * indent + more for more in wrapped[1:])
    everyone = [r for own in ranges.values() for r in own]
    unreported = size - _slots_within(everyone, low, high)
    if unreported:
        lines.append(f"{unreported} slot(s) of [{low}, {high}] are in no printed range.")
    return "\n".join(lines)
