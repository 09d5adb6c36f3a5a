"""What ``keyshared ranges`` and ``keyshared select`` share: options, consumer specs, labels, the selector.

Consumer specs.  For consistent hashing and auto-split a consumer is just its name.  For ``--selector sticky`` it
is ``NAME=RANGES``, RANGES a comma-separated list of inclusive ``START-END`` (or single ``SLOT``) items, for example
``c1=0-32767`` or ``c1=0-99,400-65535``.  The ``--consumers`` list of ``select`` is itself comma-separated; a
comma-separated item without ``=`` continues the previous consumer's ranges, so ``--consumers
c1=0-99,400-65535,c2=100-399`` gives c1 two ranges.  Consumers join in the order given and get consumer ids
1, 2, 3, ...

Duplicate names are legal in Pulsar.  Output labels keep the first consumer of a name as the plain name and call
the later ones ``NAME#2``, ``NAME#3``, ... in join order (skipping any label that is itself a given name); JSON
keys are these labels.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from reference_model.errors import InvalidArgument
from reference_model.hashing import SELECTOR_KINDS, check_selector_kind
from reference_model.selectors import (
    DEFAULT_POINTS,
    AutoSplitSelector,
    ConsumerRef,
    HashRange,
    Selector,
    StickyRangesSelector,
    make_selector,
    validate_sticky_ranges,
)
from reference_model.versions import DEFAULT_VERSION, PIP_379, parse_version

__all__ = [
    "ConsumerSpec",
    "Membership",
    "add_selector_options",
    "build_membership",
    "consumer_labels",
    "describe",
    "format_range",
    "hash_range_shown",
    "lookup_slot",
    "parse_consumer_specs",
    "stats_field",
]

_RANGE_RE = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")


def _selector_kind(text: str) -> str:
    try:
        return check_selector_kind(text)
    except InvalidArgument as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


#: The most ring points per consumer ``--points`` takes: far above any real setting (Pulsar's default is 100),
#: low enough that the ring is built in well under a second.
MAX_POINTS = 10_000


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_POINTS:
        raise argparse.ArgumentTypeError(
            f"expected an integer from 1 to {MAX_POINTS}, got {text!r} (Pulsar's default is 100)"
        )
    return value


def add_selector_options(parser: argparse.ArgumentParser) -> None:
    """``--selector``, ``--pulsar-version``, ``--points``, ``--classic``, ``--json``."""
    parser.add_argument(
        "--selector",
        type=_selector_kind,
        default="consistent-hashing",
        metavar="{" + ",".join(SELECTOR_KINDS) + "}",
        help="consistent-hashing (the broker default), auto-split (consistent hashing disabled) or sticky"
        " (STICKY mode: give each consumer ranges as NAME=START-END[,START-END...]). Default: consistent-hashing.",
    )
    parser.add_argument(
        "--pulsar-version",
        default=str(DEFAULT_VERSION),
        metavar="V",
        help="Pulsar release whose rules apply, e.g. 4.0, 3.3, 3.0.6, 2.10 (default: %(default)s, its newest release).",
    )
    parser.add_argument(
        "--points",
        type=_positive_int,
        default=None,
        metavar="N",
        help=f"ring points per consumer, consistent hashing only (default: {DEFAULT_POINTS}).",
    )
    parser.add_argument(
        "--classic",
        action="store_true",
        help="the 4.x classic dispatcher (subscriptionKeySharedUseClassicPersistentImplementation=true): its"
        " consistent-hashing ring spans [1, 2^31-2].",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table.")


@dataclass(frozen=True)
class ConsumerSpec:
    """A consumer as given on the command line: its name and, for sticky, its ranges."""

    name: str
    ranges: tuple[HashRange, ...] | None = None


def _parse_range(item: str, owner: str) -> HashRange:
    match = _RANGE_RE.match(item)
    if match is None:
        raise InvalidArgument(
            f"Cannot read {item!r} as a hash range of sticky consumer {owner!r}: write START-END (inclusive,"
            " e.g. 0-32767) or a single SLOT."
        )
    start = int(match.group(1))
    end = start if match.group(2) is None else int(match.group(2))
    return (start, end)


def _looks_like_ranges(text: str) -> bool:
    return bool(text) and all(_RANGE_RE.match(part) for part in text.split(","))


def parse_consumer_specs(items: Iterable[str], *, sticky: bool, split_commas: bool) -> list[ConsumerSpec]:
    """Turn command-line consumer items into specs (see the module docstring for the syntax)."""
    parts: list[str] = []
    for item in items:
        parts.extend(item.split(",") if split_commas or sticky else [item])
    names: list[str] = []
    ranges: list[list[HashRange] | None] = []
    for part in parts:
        if sticky:
            name, eq, ranges_text = part.rpartition("=")
            if not eq:
                if not names:
                    raise InvalidArgument(
                        f"Sticky consumer {part!r} has no ranges: write NAME=START-END, e.g. {part}=0-32767."
                    )
                current = ranges[-1]
                assert current is not None
                current.append(_parse_range(part, names[-1]))
                continue
            if not name:
                raise InvalidArgument(f"{part!r} gives ranges but no consumer name: write NAME={ranges_text}.")
            names.append(name)
            ranges.append([_parse_range(ranges_text, name)] if ranges_text else [])
            continue
        if not part:
            raise InvalidArgument("A consumer name is empty: give each consumer a non-empty name.")
        name, eq, ranges_text = part.rpartition("=")
        if eq and name and _looks_like_ranges(ranges_text):
            raise InvalidArgument(
                f"Consumer {part!r} looks like sticky ranges, but the selector is not sticky: add --selector sticky,"
                " or give plain consumer names."
            )
        names.append(part)
        ranges.append(None)
    if not names:
        raise InvalidArgument("No consumers given: name at least one consumer.")
    return [ConsumerSpec(name, None if r is None else tuple(r)) for name, r in zip(names, ranges, strict=True)]


def consumer_labels(consumers: Sequence[ConsumerRef]) -> dict[ConsumerRef, str]:
    """Unique display labels: the plain name first, then ``NAME#2``, ``NAME#3``, ... for repeated names."""
    given = {c.name for c in consumers}
    used: set[str] = set()
    seen: dict[str, int] = {}
    labels: dict[ConsumerRef, str] = {}
    for consumer in consumers:
        seen[consumer.name] = count = seen.get(consumer.name, 0) + 1
        label = consumer.name
        if count > 1:
            k = count
            label = f"{consumer.name}#{k}"
            while label in used or label in given:
                k += 1
                label = f"{consumer.name}#{k}"
        used.add(label)
        labels[consumer] = label
    return labels


@dataclass(frozen=True)
class Membership:
    """The selector after every consumer joined, with the consumers and their labels in join order."""

    selector: Selector
    consumers: tuple[ConsumerRef, ...]
    labels: dict[ConsumerRef, str]


def build_membership(args: argparse.Namespace, specs: Sequence[ConsumerSpec]) -> Membership:
    """Build the selector the options describe and let the consumers join in order."""
    version = parse_version(args.pulsar_version)
    if args.points is not None and args.selector != "consistent-hashing":
        raise InvalidArgument(
            f"--points applies to consistent hashing only, but --selector is {args.selector}; drop --points."
        )
    selector = make_selector(
        args.selector,
        version,
        DEFAULT_POINTS if args.points is None else args.points,
        classic=args.classic,
        track_impacted=False,
    )
    consumers = tuple(ConsumerRef(spec.name, i) for i, spec in enumerate(specs, start=1))
    for consumer, spec in zip(consumers, specs, strict=True):
        if spec.ranges is not None:
            validate_sticky_ranges(spec.ranges)
            selector.add(consumer, list(spec.ranges))
        else:
            selector.add(consumer)
    return Membership(selector, consumers, consumer_labels(consumers))


def hash_range_shown(selector: Selector) -> HashRange:
    """The range people reason about: the ring or the 65536-slot range (3.x selectors reduce inside select)."""
    if selector.kind == "consistent-hashing":
        return selector.key_hash_range
    assert isinstance(selector, (AutoSplitSelector, StickyRangesSelector))
    return (0, selector.range_size - 1)


def stats_field(selector: Selector, classic: bool) -> str:
    """The consumer stats field that prints these ranges in this version."""
    if selector.version.has(PIP_379) and not classic:
        return "keyHashRangeArrays"
    return "keyHashRanges"


def format_range(hash_range: HashRange) -> str:
    return f"[{hash_range[0]}, {hash_range[1]}]"


def lookup_slot(selector: Selector, key: bytes) -> int:
    """The position ``select`` looks up for ``key``: the slot, reduced by ``% rangeSize`` for 3.x range selectors."""
    slot = selector.slot_of(key)
    if isinstance(selector, (AutoSplitSelector, StickyRangesSelector)):
        return slot % selector.range_size
    return slot


def describe(selector: Selector, args: argparse.Namespace) -> str:
    """One header line naming the rules in force."""
    parts = [f"{selector.kind} selector", f"Pulsar {selector.version}"]
    if selector.kind == "consistent-hashing":
        parts.append(f"{args.points or DEFAULT_POINTS} points per consumer")
    if args.classic:
        parts.append("classic dispatcher")
    low, high = hash_range_shown(selector)
    parts.append(f"hash range [{low}, {high}]")
    return ", ".join(parts)
