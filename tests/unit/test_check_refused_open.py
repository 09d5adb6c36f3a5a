"""refused_open: a subscribe the broker refused although Pulsar accepts it (conformance/checks/assignment.py).

Each planted trace beside its correct twin: the same refusal while a close was still in flight (no ``closed``
before the subscribe was sent), with equal timestamps, after a fault, with an error that names no refusal.
"""

from __future__ import annotations

from typing import Any

import pytest
from part_checks import same_verdicts

from conformance.checks import Kind, check_trace
from conformance.spark.engine import _in_memory, _merged, check_task
from conformance.trace import SelectorSpec, SubscriptionSpec, TraceHeader
from conformance.trace.builder import TraceBuilder

BUSY = "ConsumerBusy: Subscription is of different type"
CONFLICT = "ConsumerAssignError: Range conflict with consumer c1"


def header(kind: str = "consistent-hashing", mode: str = "AUTO_SPLIT") -> TraceHeader:
    return TraceHeader(
        target="hand-written",
        subscription=SubscriptionSpec("s", key_shared_mode=mode),
        selector=SelectorSpec(kind, "4.0"),
    )


def policy(mode: str = "AUTO_SPLIT", ooo: bool = False, ranges: Any = None) -> dict[str, Any]:
    out: dict[str, Any] = {"key_shared_mode": mode, "allow_out_of_order_delivery": ooo}
    if ranges is not None:
        out["sticky_ranges"] = ranges
    return out


def refused(b: TraceBuilder) -> list[tuple[str, ...]]:
    verdict = check_trace(b.events, header=b.header)
    return [v.consumers for v in verdict.all_violations() if v.kind is Kind.REFUSED_OPEN]


def changed_flag(*, completed: bool, gap: int, error: str = BUSY) -> TraceBuilder:
    """c1 (allowOutOfOrderDelivery=false) closes; c2 asks for true and is refused.  ``completed``: the close's
    completion is recorded, ``gap`` ns before the subscribe was sent (0: the same instant, negative: after)."""
    b = TraceBuilder(header())
    b.open("c1", policy=policy())
    b.publish("k", "1:0")
    b.receive("c1", "k", "1:0")
    b.ack("c1", "1:0")
    b.close("c1")
    if completed:
        b.closed("c1")
    sent = b.events[-1].t + gap
    b.open("c2", policy=policy(ooo=True), result="fail", t0=sent, error=error)
    b.end(drained=False)
    return b


def test_a_changed_flag_refused_after_every_close_completed_is_refused_open() -> None:
    b = changed_flag(completed=True, gap=1)
    assert refused(b) == [("c2",)]
    verdict = check_trace(b.events, header=b.header)
    (found,) = [v for v in verdict.violations if v.kind is Kind.REFUSED_OPEN]
    assert found.events == (6,) and "refused_open" in found.explanation and BUSY in found.explanation
    assert not verdict.valid


def test_the_same_refusal_while_the_close_was_in_flight_is_no_finding() -> None:
    assert refused(changed_flag(completed=False, gap=1)) == []  # c1 may still have been connected
    assert refused(changed_flag(completed=True, gap=0)) == []  # equal timestamps: the broker's benefit
    assert refused(changed_flag(completed=True, gap=-1)) == []  # completed after the subscribe was sent


def test_a_refusal_that_names_no_refusal_or_has_no_send_time_is_not_judged() -> None:
    assert refused(changed_flag(completed=True, gap=1, error="Timeout: Pulsar error: TimeOut")) == []
    b = TraceBuilder(header())
    b.open("c1", policy=policy())
    b.close("c1")
    b.closed("c1")
    b.open("c2", policy=policy(ooo=True), result="fail", error=BUSY)  # no t0
    b.end(drained=False)
    verdict = check_trace(b.events, header=b.header)
    assert refused(b) == [] and any("refused_open not judged" in note for note in verdict.notes)


def test_a_refusal_after_a_fault_is_not_judged() -> None:
    b = TraceBuilder(header())
    b.open("c1", policy=policy())
    b.close("c1")
    b.closed("c1")
    b.fault()
    b.open("c2", policy=policy(ooo=True), result="fail", t0=b.t, error=BUSY)
    b.end(drained=False)
    assert refused(b) == []


def test_the_same_policy_beside_a_live_consumer_must_be_accepted() -> None:
    b = TraceBuilder(header())
    b.open("c1", policy=policy())
    b.open("c2", policy=policy(), result="fail", t0=b.t, error=BUSY)
    b.end(drained=False)
    assert refused(b) == [("c2",)]
    twin = TraceBuilder(header())  # another flag beside a live consumer: Pulsar refuses it too
    twin.open("c1", policy=policy())
    twin.open("c2", policy=policy(ooo=True), result="fail", t0=twin.t, error=BUSY)
    twin.end(drained=False)
    assert refused(twin) == []


def sticky(second: Any, *, close: bool, completed: bool) -> TraceBuilder:
    b = TraceBuilder(header("sticky", "STICKY"))
    b.open("c1", policy=policy("STICKY", ranges=[[0, 40000]]))
    if close:
        b.close("c1")
        if completed:
            b.closed("c1")
    b.open("c2", policy=policy("STICKY", ranges=second), result="fail", t0=b.t, error=CONFLICT)
    b.end(drained=False)
    return b


def test_sticky_ranges_are_judged_against_the_consumers_still_live() -> None:
    assert refused(sticky([[30000, 65535]], close=False, completed=False)) == []  # overlaps live c1: refused
    assert refused(sticky([[40001, 65535]], close=False, completed=False)) == [("c2",)]  # no overlap
    assert refused(sticky([[30000, 65535]], close=True, completed=False)) == []  # c1's close in flight
    assert refused(sticky([[30000, 65535]], close=True, completed=True)) == [("c2",)]  # c1 gone first


def test_a_crashed_consumer_counts_until_it_is_seen_gone() -> None:
    for gone, want in ((False, []), (True, [("c2",)])):
        b = TraceBuilder(header())
        b.open("c1", policy=policy())
        b.crash("c1")
        if gone:
            b.gone("c1")
        b.open("c2", policy=policy("STICKY", ranges=[[0, 65535]]), result="fail", t0=b.t, error=BUSY)
        b.end(drained=False)
        assert refused(b) == want, gone


def test_a_refused_open_that_may_have_registered_blocks_nothing_it_should_not() -> None:
    """An open whose outcome the client could not learn (``info``) may be registered: it counts as live."""
    b = TraceBuilder(header())
    b.open("c1", policy=policy(), result="info")
    b.open("c2", policy=policy(ooo=True), result="fail", t0=b.t, error=BUSY)
    b.end(drained=False)
    assert refused(b) == []


def _in_parts(b: TraceBuilder, parts: int) -> object:
    given = _in_memory(b.events)
    results = [
        (0, pass_, part, result)
        for part in range(parts)
        for pass_, result in check_task(b.header, None, given, part, parts, one_pass=False)[1]
    ]
    return _merged(results, {0: b.header}, None)[0]


@pytest.mark.parametrize("completed", [True, False])
def test_the_spark_engines_parts_say_the_same(completed: bool) -> None:
    b = changed_flag(completed=completed, gap=1)
    b.events.pop()
    b.open("c3", policy=policy(ooo=True))
    for n, key in enumerate(("a", "b", "c", "d")):
        b.publish(key, f"2:{n}")
        b.receive("c3", key, f"2:{n}")
        b.ack("c3", f"2:{n}")
    b.end(drained=False)
    want = check_trace(b.events, header=b.header)
    assert [v.consumers for v in want.violations if v.kind is Kind.REFUSED_OPEN] == ([("c2",)] if completed else [])
    for parts in (2, 3):
        same_verdicts(_in_parts(b, parts), want)
