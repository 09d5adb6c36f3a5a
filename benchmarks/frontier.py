"""How many memberships the misassigned check keeps through a trace's crashes, with and without its ``gone``
events; prints figures.

Run: ``.venv/bin/python benchmarks/frontier.py TRACE`` (a trace file or a soak's ``trace/`` directory), e.g. on a
model soak: ``keyshared soak --target model --duration 10m --churn 120 --seed 5 --out DIR`` then ``DIR/trace``.
Each crash whose removal is unknown doubles the variants; past ``MAX_FRONTIER`` the rest of the subscription is
not judged (``docs/checker.md``, "misassigned in detail").  Pure CPU, single thread.
"""

from __future__ import annotations

import argparse
import time

from conformance.checks.assignment import MAX_FRONTIER
from conformance.checks.streaming import StreamingChecker
from conformance.trace.events import Event
from conformance.trace.header import TraceHeader
from conformance.trace.reader import open_trace

_MEMBERSHIP = frozenset({"open", "close", "crash", "gone"})


def frontier_figures(header: TraceHeader, events: list[Event]) -> dict[str, object]:
    """Feed ``events`` and read each subscription's frontier after every membership event."""
    checker = StreamingChecker(header)
    largest, at_crashes, crashes = 0, [], 0
    started = time.process_time()
    for event in events:
        checker.feed(event)
        op = event.op.value
        if op not in _MEMBERSHIP:
            continue
        size = max((len(tl.frontier) for tl in checker.timelines.values()), default=0)
        largest = max(largest, size)
        if op == "crash":
            crashes += 1
            at_crashes.append(size)
    verdict = checker.finish()
    broken = [f"E{tl.broken_at}" for tl in checker.timelines.values() if tl.broken_at is not None]
    return {
        "events": len(events),
        "crashes": crashes,
        "gone": sum(e.op.value == "gone" for e in events),
        "largest frontier": largest,
        "frontier after each crash": at_crashes[:30],
        "misassigned judged to the end": not broken,
        "unjudged from": broken,
        "verdict": verdict.validity.value,
        "cpu_s": round(time.process_time() - started, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    args = parser.parse_args(argv)
    source = open_trace(args.trace)
    events = list(source.events())
    print(f"MAX_FRONTIER = {MAX_FRONTIER}")
    for label, chosen in (
        ("as recorded", events),
        ("without gone", [e for e in events if e.op.value != "gone"]),
    ):
        print(label, frontier_figures(source.header, chosen))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
