"""The streaming engine live: fed by a TraceWriter, reporting as events reveal violations."""

from __future__ import annotations

import pytest

from conformance.checks import Kind, StreamingChecker, check_trace
from conformance.trace import SubscriptionSpec, TraceHeader, TraceWriter
from conformance.trace.builder import TraceBuilder
from conformance.trace.events import Event, Op
from reference_model.errors import InvalidArgument


def test_a_writer_listener_sees_violations_as_they_happen() -> None:
    header = TraceHeader("model", SubscriptionSpec("s"))
    writer = TraceWriter(None, header, clock=iter(range(10, 10_000, 10)).__next__)
    checker = StreamingChecker(header)
    live: list[tuple[int, Kind]] = []
    writer.add_listener(lambda event: live.extend((event.i, v.kind) for v in checker.feed(event)))
    writer.record("open", consumer="c1", subscription="s", topic="t", result="ok")
    writer.record("open", consumer="c2", subscription="s", topic="t", result="ok")
    for n in range(2):
        writer.record("publish", topic="t", key="k", msg_id=f"1:{n}:-1:-1", uid=f"u{n}", result="ok", t0=1)
    writer.record("receive", topic="t", consumer="c1", key="k", msg_id="1:0:-1:-1", uid="u0")
    writer.record("receive", topic="t", consumer="c2", key="k", msg_id="1:1:-1:-1", uid="u1")
    assert sorted(live) == [(5, Kind.KEY_OVERLAP), (5, Kind.OUT_OF_ORDER)]
    writer.record("end", drained=True)
    verdict = checker.finish()
    assert verdict.counts["undelivered"] == 0 and verdict.counts["key_overlap"] == 1
    assert verdict.identities() == check_trace(writer.events or [], header=header).identities()


def test_end_of_trace_kinds_come_with_finish() -> None:
    b = TraceBuilder()
    b.open("c1")
    b.publish("k", "1:0")
    b.receive("c1", "g", "1:9", uid="ghost")  # another key: nothing to judge live
    b.end()
    checker = StreamingChecker(b.header)
    assert all(checker.feed(e) == [] for e in b.events)
    assert {v.kind for v in checker.finish().violations} == {Kind.UNDELIVERED, Kind.UNEXPECTED_MESSAGE}


def test_a_malformed_live_event_is_refused_with_its_index() -> None:
    checker = StreamingChecker()
    checker.feed(Event(i=0, t=1, op=Op.OPEN, consumer="c1"))
    with pytest.raises(InvalidArgument, match=r"row 1: receive event i=1 has no 'msg_id'"):
        checker.feed(Event(i=1, t=2, op=Op.RECEIVE, consumer="c1", topic="t"))
    with pytest.raises(InvalidArgument, match="must increase"):
        checker.feed(Event(i=0, t=3, op=Op.FAULT))


def test_memory_holds_what_is_outstanding() -> None:
    """Acknowledged, published messages leave the per-subscription records."""
    b = TraceBuilder()
    b.open("c1")
    for n in range(200):
        b.publish("k", f"1:{n}")
        b.receive("c1", "k", f"1:{n}")
        b.ack("c1", f"1:{n}")
    b.publish("k", "1:999")
    b.receive("c1", "k", "1:999")  # held at the end
    checker = StreamingChecker(b.header)
    for event in b.events:
        checker.feed(event)
    sub = checker.subs["s"]
    assert list(sub.recs) == ["persistent://public/default/t|1:999:-1:-1"]
    assert len(sub.settled) == 200  # what stays of a settled message is its scope and arming ack
    assert sum(len(h) for h in sub.free_heaps.values()) <= 1


def _redelivered(b: TraceBuilder) -> list[tuple[str | None, tuple[int, ...]]]:
    verdict = check_trace(b.events, header=b.header)
    return [(v.key, v.events) for v in verdict.violations if v.kind is Kind.REDELIVERED_AFTER_ACK]


def test_a_second_ack_of_a_settled_message_disarms_the_first() -> None:
    """Only the last acknowledgement counts: one that arms nothing (nobody held the message) disarms."""
    b = TraceBuilder()
    b.open("c1")
    b.publish("k", "1:0")
    b.receive("c1", "k", "1:0")
    b.ack("c1", "1:0")  # settled here: acknowledged, receipt seen
    b.ack("c1", "1:0")  # held by nobody: disarms
    b.receive("c1", "k", "1:0")
    b.ack("c1", "1:0")
    b.end()
    assert _redelivered(b) == []


def test_a_settled_message_keeps_its_key_whatever_its_characters() -> None:
    b = TraceBuilder()
    b.open("c1")
    b.publish("a\x1fb", "1:0")
    b.receive("c1", "a\x1fb", "1:0")
    b.ack("c1", "1:0")  # E3 arms
    b.receive("c1", "a\x1fb", "1:0")  # E4
    b.ack("c1", "1:0")
    b.end()
    assert _redelivered(b) == [("a\x1fb", (3, 4))]
    assert not [n for n in check_trace(b.events, header=b.header).notes if "carried a key" in n]
