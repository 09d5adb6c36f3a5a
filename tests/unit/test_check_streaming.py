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


@pytest.mark.parametrize("settled", [True, False])
def test_a_second_ack_does_not_disarm_the_first(settled: bool) -> None:
    """An armed ack stays armed until something named disarms it: a duplicate ack (by a consumer that no longer
    holds the message) is not one.  Issue 11's minimal trace, settled (receipt seen) or not (receipt late)."""
    b = TraceBuilder()
    b.open("c1")
    if settled:
        b.publish("k1", "1:0")
    b.receive("c1", "k1", "1:0")
    b.ack("c1", "1:0")  # arms
    b.ack("c1", "1:0")  # held by nobody: arms nothing, disarms nothing
    b.receive("c1", "k1", "1:0")
    if not settled:
        b.publish("k1", "1:0")
    b.end()
    arm = 3 if settled else 2
    assert _redelivered(b) == [("k1", (arm, arm + 2))]


def test_a_second_ack_after_the_ackers_redeliver_request_stays_disarmed() -> None:
    """Mirror image: the acker's redeliver request disarms the first ack; a duplicate ack then arms nothing."""
    b = TraceBuilder()
    b.open("c1")
    b.publish("k1", "1:0")
    b.receive("c1", "k1", "1:0")
    b.ack("c1", "1:0")
    b.redeliver("c1")
    b.ack("c1", "1:0")
    b.receive("c1", "k1", "1:0")
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
