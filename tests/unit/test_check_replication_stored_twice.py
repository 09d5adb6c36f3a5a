"""``duplicate_publish`` on one cluster's copy of a replicated topic, on hand-written failover traces, both ways.

A message published once and received on a cluster under two message ids was stored there twice: with
deduplication on, a replicator that sends again (after lost receipts, a reconnection or a repeated send) must be
dropped by the cluster it reaches (``OneWayReplicatorDeduplicationTest``).  With deduplication off it is permitted;
the same id received again (a redelivery) is not a second copy; the two clusters' ids of one message are unrelated.
"""

from __future__ import annotations

import pytest

from conformance.checks import Kind, Validity, check_trace
from conformance.trace import SubscriptionSpec, TraceHeader
from conformance.trace.builder import TraceBuilder

A, B = "t@r1", "t@r2"


def trace(*, second_ids: list[str], dedup: bool = True, step: int = 10) -> TraceBuilder:
    """m0, m1 published on r1 and held there by c1; the failover; r2 delivers m0 as 7:0 and m1 as 7:1, then m0
    again under each id of ``second_ids``, each acknowledged."""
    header = TraceHeader(
        target="hand-written", subscription=SubscriptionSpec("s"), deduplication=dedup, extra={"clusters": ["r1", "r2"]}
    )
    b = TraceBuilder(header, step=step)
    b.open("c1", topic=A)
    for n in range(2):
        # as the failover workload records it: no sequence id (the copies in r1 and r2 are one message)
        b.add("publish", topic=A, producer="p", key=f"k{n}", msg_id=f"1:{n}", uid=f"m{n}", result="ok")
        b.receive("c1", f"k{n}", f"1:{n}", uid=f"m{n}", topic=A)
    b.close("c1")
    b.add("failover", topic=A, subscription="s", cluster="r1", to="r2")
    b.open("c1", topic=B)
    for n in range(2):
        b.receive("c1", f"k{n}", f"7:{n}", uid=f"m{n}", topic=B)
        b.ack("c1", f"7:{n}", topic=B)
    for msg in second_ids:
        b.receive("c1", "k0", msg, uid="m0", topic=B)
        b.ack("c1", msg, topic=B)
    b.close("c1")
    b.end(drained=True)
    return b


def stored_twice(b: TraceBuilder) -> list[tuple[str, str]]:
    verdict = check_trace(b.events, header=b.header)
    return [(v.facts["uid"], v.facts["msg"]) for v in verdict.violations if v.kind is Kind.DUPLICATE_PUBLISH]


@pytest.mark.parametrize("step", [10, 0], ids=["distinct-timestamps", "equal-timestamps"])
def test_a_message_stored_twice_on_the_cluster_it_failed_over_to_is_found(step: int) -> None:
    b = trace(second_ids=["7:5"], step=step)
    verdict = check_trace(b.events, header=b.header)
    assert verdict.validity is Validity.INVALID
    assert stored_twice(b) == [("m0", "7:5:-1:-1")]
    assert "stored twice on r2" in next(v.explanation for v in verdict.violations)


def test_one_violation_per_extra_copy() -> None:
    assert len(stored_twice(trace(second_ids=["7:5", "7:5", "7:6"]))) == 2


def test_a_redelivery_of_the_same_id_and_the_copies_in_two_clusters_are_not_copies() -> None:
    verdict = check_trace(trace(second_ids=["7:0"]).events, header=trace(second_ids=[]).header)
    assert Kind.DUPLICATE_PUBLISH not in {v.kind for v in verdict.violations}
    assert stored_twice(trace(second_ids=[])) == []


def test_permitted_when_deduplication_is_off() -> None:
    b = trace(second_ids=["7:5"], dedup=False)
    verdict = check_trace(b.events, header=b.header)
    assert verdict.validity is Validity.VALID, verdict.render()
    assert [v.kind for v in verdict.allowed] == [Kind.DUPLICATE_PUBLISH]
