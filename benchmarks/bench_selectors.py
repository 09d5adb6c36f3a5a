"""Selector speed: ``select`` lookups per second with 100 consumers, and the cost of a join / leave.

Run: ``.venv/bin/python benchmarks/bench_selectors.py [--consumers N] [--lookups N]``.  One core, one process;
figures vary with the machine, so compare them on the same machine only.  ``select`` is served from a table
(65536 slots) or a bisect over the ring, rebuilt lazily after membership changes; the first lookup after a change
pays the rebuild, which the "rebuild" column shows.  Joins and leaves of 4.x AUTO_SPLIT selectors also compute
the PIP-379 impacted ranges (a snapshot of the whole ring), which dominates their cost.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable

from reference_model.hashing import make_hash
from reference_model.selectors import ConsumerRef, Selector, make_selector

CASES: list[tuple[str, str, str, dict[str, object]]] = [
    ("consistent-hashing", "4.0", "4.0 PIP-379 (65535-slot table)", {}),
    ("consistent-hashing", "4.0", "4.0 classic (bisect, 31-bit)", {"classic": True}),
    ("consistent-hashing", "3.3", "3.3 name index (bisect)", {}),
    ("consistent-hashing", "3.0.6", "3.0.6 collision list (bisect)", {}),
    ("auto-split", "4.0", "4.0", {}),
    ("auto-split", "3.3", "3.3 (h % 65536 in select)", {}),
    ("sticky", "4.0", "4.0", {}),
]


def build(kind: str, version: str, consumers: int, options: dict[str, object]) -> Selector:
    selector = make_selector(kind, version, **options)  # type: ignore[arg-type]
    width = 65536 // consumers
    for i in range(consumers):
        ranges = [(i * width, (i + 1) * width - 1)] if kind == "sticky" else None
        selector.add(ConsumerRef(f"consumer-{i}", i), ranges)
    return selector


def best_of(repeats: int, fn: Callable[[], None]) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--consumers", type=int, default=100)
    parser.add_argument("--lookups", type=int, default=1_000_000)
    args = parser.parse_args()
    n = args.lookups
    keys = [f"key-{i}".encode() for i in range(n)]
    print(f"{args.consumers} consumers, {n:,} lookups per measurement, best of 3; Python {sys.version.split()[0]}")
    header = (
        f"{'selector':<20} {'version':<32} {'select/s':>12} {'select_key/s':>13} {'rebuild ms':>11}"
        f" {'join ms':>9} {'leave ms':>9}"
    )
    print(header)
    print("-" * len(header))
    for kind, version, label, options in CASES:
        selector = build(kind, version, args.consumers, options)
        slots = [selector.slot_of_hash(make_hash(k)) for k in keys]
        select = selector.select

        def lookups(slots: list[int] = slots, select: Callable[[int], object] = select) -> None:
            for slot in slots:
                select(slot)

        def key_lookups(selector: Selector = selector) -> None:
            select_key = selector.select_key
            for key in keys[: n // 4]:
                select_key(key)

        select(1)  # build the table once
        select_rate = n / best_of(3, lookups)
        key_rate = (n // 4) / best_of(3, key_lookups)

        joins, leaves, rebuilds = [], [], []
        extra = [ConsumerRef(f"extra-{i}", 10_000 + i) for i in range(5)]
        free = args.consumers * (65536 // args.consumers)  # first slot the sticky consumers left free
        for j, consumer in enumerate(extra):
            start = time.perf_counter()
            selector.add(consumer, [(free + j, free + j)] if kind == "sticky" else None)
            joins.append(time.perf_counter() - start)
            start = time.perf_counter()
            select(1)
            rebuilds.append(time.perf_counter() - start)
        for consumer in extra:
            start = time.perf_counter()
            selector.remove(consumer)
            leaves.append(time.perf_counter() - start)
        print(
            f"{kind:<20} {label:<32} {select_rate:>12,.0f} {key_rate:>13,.0f}"
            f" {statistics.median(rebuilds) * 1e3:>11.2f} {statistics.median(joins) * 1e3:>9.2f}"
            f" {statistics.median(leaves) * 1e3:>9.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
