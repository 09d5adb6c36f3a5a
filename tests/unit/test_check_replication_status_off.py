"""With the subscription's replicated status off on the cluster a failover leaves, what was published meanwhile is
owed again on the other cluster though acknowledged (``ReplicatedSubscriptionTest.testReplicatedSubscriptionRestApi1``:
off, every cluster reads everything): ``skipped_after_failover`` for one it does not deliver, both ways.
"""

from __future__ import annotations

import pytest

from conformance.checks import Kind, Validity, check_trace
from conformance.trace import SubscriptionSpec, TraceHeader
from conformance.trace.builder import TraceBuilder

A, B = "t@r1", "t@r2"


def trace(*, again: list[int], switches: tuple[str, ...] = ("off",), step: int = 10) -> TraceBuilder:
    """``switches`` of r1's replicated status before m0, m1 are published and acknowledged on r1 (``"on"`` after
    them for ``"late-on"``); the failover; r2 delivers ``again``."""
    header = TraceHeader(
        target="hand-written", subscription=SubscriptionSpec("s"), deduplication=False, extra={"clusters": ["r1", "r2"]}
    )
    b = TraceBuilder(header, step=step)

    def switch(on: bool) -> None:
        fault = "replicated_subscription_on" if on else "replicated_subscription_off"
        b.add("fault", fault=fault, cluster="r1", subscription="s", consumers=[], producers=[])

    for s in switches:
        if s != "late-on":
            switch(s == "on")
    b.open("c1", topic=A)
    for n in range(2):
        b.add("publish", topic=A, producer="p", key=f"k{n}", msg_id=f"1:{n}", uid=f"m{n}", result="ok")
        b.receive("c1", f"k{n}", f"1:{n}", uid=f"m{n}", topic=A)
        b.ack("c1", f"1:{n}", topic=A)
    if "late-on" in switches:
        switch(True)
    b.close("c1")
    b.add("failover", topic=A, subscription="s", cluster="r1", to="r2")
    b.open("c1", topic=B)
    for n in again:
        b.receive("c1", f"k{n}", f"7:{n}", uid=f"m{n}", topic=B)
        b.ack("c1", f"7:{n}", topic=B)
    b.close("c1")
    b.end(drained=True)
    return b


def skipped(b: TraceBuilder) -> list[str]:
    verdict = check_trace(b.events, header=b.header)
    return [v.facts["uid"] for v in verdict.violations if v.kind is Kind.SKIPPED_AFTER_FAILOVER]


@pytest.mark.parametrize("step", [10, 0], ids=["distinct-timestamps", "equal-timestamps"])
def test_an_acknowledged_message_published_while_off_must_come_again(step: int) -> None:
    b = trace(again=[0], step=step)
    verdict = check_trace(b.events, header=b.header)
    assert verdict.validity is Validity.INVALID
    assert skipped(b) == ["m1"]
    assert "replicated status was switched off on r1" in verdict.violations[0].explanation
    assert skipped(trace(again=[0, 1], step=step)) == []


def test_no_obligation_with_the_status_on_or_switched_on_again() -> None:
    assert skipped(trace(again=[], switches=())) == []
    assert skipped(trace(again=[], switches=("off", "on"))) == []
    # switched on after the acknowledgements: a snapshot may have carried them to r2 before the failover
    assert skipped(trace(again=[], switches=("off", "late-on"))) == []
