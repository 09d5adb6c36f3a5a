"""The client's ack timeout in a trace (a ``nack`` with ``cause = "ack_timeout"``) on the checker, both ways.

Pulsar's ``KeySharedSubscriptionTest.receiveAndCheck``: c1 acknowledges every other message; after the timeout
exactly the other half comes back and nothing acknowledged does.  The correct broker's trace is valid (also with
every event at t = 0); a broker that sends an acknowledged message back is ``redelivered_after_ack``; one that
never sends the released half back leaves it ``undelivered``.
"""

from __future__ import annotations

from dataclasses import replace

from exemption_traces import pulsar_40

from conformance.checks import Kind, check_trace
from conformance.trace.builder import TraceBuilder
from conformance.trace.events import Event


def _first_pass() -> TraceBuilder:
    b = pulsar_40()
    b.open("c1")
    for n in range(4):
        b.publish("k", f"1:{n}")
    for n in range(4):
        b.receive("c1", "k", f"1:{n}")
        if n % 2 == 0:
            b.ack("c1", f"1:{n}")
    for n in (1, 3):  # the driver's record of the client's timeout, before anything comes back
        b.add("nack", consumer="c1", topic=b.topic, msg_id=f"1:{n}", key="k", cause="ack_timeout")
    return b


def _redelivered(b: TraceBuilder, *msg_ids: str) -> TraceBuilder:
    for msg_id in msg_ids:
        b.receive("c1", "k", msg_id, redelivery_count=1)
        b.ack("c1", msg_id)
    b.end(drained=True)
    return b


def _flat(b: TraceBuilder) -> list[Event]:
    return [replace(e, t=0, extra={**e.extra, "t0": 0} if "t0" in e.extra else e.extra) for e in b.events]


def _kinds(events: list[Event], b: TraceBuilder) -> list[Kind]:
    return [v.kind for v in check_trace(events, header=b.header).violations]


def test_the_unacknowledged_half_coming_back_is_valid_also_with_equal_timestamps() -> None:
    b = _redelivered(_first_pass(), "1:1", "1:3")
    verdict = check_trace(b.events, header=b.header)
    assert verdict.valid and verdict.all_violations() == (), verdict.render()
    assert _kinds(_flat(b), b) == []


def test_an_acknowledged_message_coming_back_is_redelivered_after_ack() -> None:
    b = _redelivered(_first_pass(), "1:0", "1:1", "1:3")
    assert _kinds(b.events, b) == [Kind.REDELIVERED_AFTER_ACK]
    assert _kinds(_flat(b), b) == [Kind.REDELIVERED_AFTER_ACK]


def test_a_released_message_that_never_comes_back_is_undelivered() -> None:
    b = _redelivered(_first_pass(), "1:1")
    assert _kinds(b.events, b) == [Kind.UNDELIVERED]


def test_an_ack_that_may_never_have_arrived_still_excuses_a_late_copy() -> None:
    """c1 acknowledged 1:1 just as its timeout released it (the ack logged after the release, then a close):
    the copy that comes back to c2 may be the broker's answer to the release, so it is no violation."""
    b = _first_pass()
    b.ack("c1", "1:1")
    b.close("c1")
    b.open("c2")
    b.receive("c2", "k", "1:1", redelivery_count=1)
    b.receive("c2", "k", "1:3", redelivery_count=1)
    b.ack("c2", "1:3")
    b.end(drained=True)
    verdict = check_trace(b.events, header=b.header)
    assert verdict.valid and verdict.all_violations() == (), verdict.render()
