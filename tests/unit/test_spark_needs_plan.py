"""``keyshared check --engine spark`` asks the engine's public API (:func:`conformance.spark.needs_plan`) whether a
stored trace needs a plan made by the driver before the tasks run: never, since the tasks resolve the keys of
acks that carry none themselves (:class:`conformance.spark.router.Resolution`)."""

from __future__ import annotations

from pathlib import Path

from conformance.spark import needs_plan
from conformance.trace.builder import TraceBuilder
from conformance.trace.reader import open_trace


def _trace(tmp_path: Path, *, keyed_acks: bool) -> Path:
    b = TraceBuilder()
    b.open("c1")
    b.publish("k", "1:0:-1:-1")
    b.receive("c1", "k", "1:0:-1:-1")
    b.ack("c1", "1:0:-1:-1", key="k" if keyed_acks else None)
    b.end()
    return b.write(tmp_path / f"t-{keyed_acks}.jsonl")


def test_a_trace_with_keyless_acks_needs_no_plan_either(tmp_path: Path) -> None:
    source = open_trace(_trace(tmp_path, keyed_acks=False))
    assert not needs_plan(source, 2)
    assert not needs_plan(source, 1)


def test_a_trace_the_tasks_route_by_key_needs_no_plan(tmp_path: Path) -> None:
    assert not needs_plan(open_trace(_trace(tmp_path, keyed_acks=True)), 2)
