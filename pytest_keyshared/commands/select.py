"""``keyshared select``: which consumer each key goes to, with the key's hash and slot.

For people debugging "why did key X go to consumer Y?": the same sticky-key hashing and selector rules the
reference model uses, for the chosen Pulsar version.  Keys are taken as UTF-8 text (a message's partition key or
ordering key).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from pytest_keyshared.commands._selector_args import (
    add_selector_options,
    build_membership,
    describe,
    lookup_slot,
    parse_consumer_specs,
)
from reference_model.hashing import make_hash

__all__ = ["add_parser", "run"]

_EPILOG = """\
examples:
  keyshared select --consumers c1,c2,c3 key-0 key-1 key-2
  keyshared select --consumers c1,c2 --pulsar-version 3.0 --json order-17
  keyshared select --selector sticky --consumers c1=0-32767,c2=32768-65535 key-0
  keyshared select --selector sticky --consumers c1=0-99,400-65535,c2=100-399 key-0

--consumers is comma-separated (repeat it to add more).  With --selector sticky an item without '=' continues the
previous consumer's ranges.  A repeated name is shown as NAME#2, NAME#3, ...; a key no consumer covers prints '-'
(JSON null).
"""


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "select",
        help="print the consumer each key goes to under a Pulsar version's selector",
        description="Print the consumer each sticky key is dispatched to, with its Murmur3 hash and slot.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_selector_options(parser)
    parser.add_argument(
        "--consumers",
        action="append",
        required=True,
        metavar="C1,C2,...",
        help="consumers in join order; with --selector sticky NAME=START-END[,START-END...]",
    )
    parser.add_argument("keys", nargs="+", metavar="KEY", help="sticky keys (UTF-8 text)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    specs = parse_consumer_specs(args.consumers, sticky=args.selector == "sticky", split_commas=True)
    membership = build_membership(args, specs)
    selector = membership.selector
    rows = []
    for key in args.keys:
        data = key.encode("utf-8", "surrogateescape")
        chosen = selector.select_key(data)
        label = None if chosen is None else membership.labels[chosen]
        rows.append((key, make_hash(data), lookup_slot(selector, data), label))
    if args.json:
        print(json.dumps({key: label for key, _, _, label in rows}))
        return 0
    table = [("KEY", "HASH", "SLOT", "CONSUMER")] + [(k or '""', str(h), str(s), lab or "-") for k, h, s, lab in rows]
    widths = [max(len(row[i]) for row in table) for i in range(4)]
    print(describe(selector, args))
    for row in table:
        print(f"{row[0].ljust(widths[0])}  {row[1].rjust(widths[1])}  {row[2].rjust(widths[2])}  {row[3]}")
    return 0
