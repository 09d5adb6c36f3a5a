"""``redelivered_after_failover`` on hand-written failover traces, both ways.

After a failover, no message at or before the position the replicated cursor must already have reached may
come again: every message published before a settled ``snapshot`` (with ``snapshot_periods`` >= 1: a snapshot
completed after them) had been acknowledged on the left cluster by a consumer still connected there, and a
later settled ``snapshot`` shows the cursor update reached every cluster before the switch.  Acknowledged
messages past that point may come again (counted in a note).  Acknowledgements that may not have arrived (a
fault touching the consumer, a crash) make no point; nor does a snapshot without ``snapshot_periods``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.checks import Kind, Validity, check_trace
from conformance.trace import SubscriptionSpec, TraceHeader
from conformance.trace.builder import TraceBuilder

A, B = "t@r1", "t@r2"


def trace(
    *,
    again: list[int],
    step: int = 10,
    periods: int | None = 2,
    disturb: str | None = None,
    late_ack: bool = False,
    confirm: bool = True,
    drained: bool = True,
    status: tuple[str, ...] = (),
    deleted: str | None = None,
) -> TraceBuilder:
    """m0, m1 published on r1, received and acknowledged by c1; a settled snapshot with c1 connected (the point,
    ``periods`` as its ``snapshot_periods``); m2, m3 published and received, held (m2 acknowledged after the
    point with ``late_ack``); c1 closes; a settled snapshot (``confirm``); the failover; r2 delivers ``again``
    (of m0, m1, and m2 when acknowledged) and then m2, m3 where still owed.

    ``disturb``: ``"fault"`` (a client reconnect touching c1) or ``"crash"`` (c1 crashes and a new c1 opens)
    between the acknowledgements and the point: the acknowledgements may not have arrived.  ``status``: the
    subscription's replicated status switches (``"off"`` / ``"on"``, on r2) recorded before the point.
    ``deleted``: the subscription is deleted on r2 ``"before"`` the point (after the acknowledgements) or
    ``"after"`` it (just before the failover)."""
    header = TraceHeader(
        target="hand-written", subscription=SubscriptionSpec("s"), deduplication=False, extra={"clusters": ["r1", "r2"]}
    )
    b = TraceBuilder(header, step=step)
    b.open("c1", topic=A)
    for n in range(2):
        b.publish(f"k{n}", f"1:{n}", uid=f"m{n}", topic=A, seq=n)
    for n in range(2):
        b.receive("c1", f"k{n}", f"1:{n}", uid=f"m{n}", topic=A)
        b.ack("c1", f"1:{n}", topic=A)
    if disturb == "fault":
        b.add("fault", fault="client_reconnect", consumers=["c1"], producers=[])
    elif disturb == "crash":
        b.crash("c1")
        b.open("c1", topic=A)
    if deleted == "before":
        b.add("fault", fault="subscription_deleted", cluster="r2", subscription="s", consumers=[], producers=[])
    for switch in status:
        b.add(
            "fault",
            fault=f"replicated_subscription_{switch}",
            cluster="r2",
            subscription="s",
            consumers=[],
            producers=[],
        )
    for cluster, backlog in (("r1", 0), ("r2", 0)):
        b.add("snapshot", subscription="s", cluster=cluster, backlog=backlog, settled=True, snapshot_periods=periods)
    for n in (2, 3):
        b.publish(f"k{n}", f"1:{n + 1}", uid=f"m{n}", topic=A, seq=n)
        b.receive("c1", f"k{n}", f"1:{n + 1}", uid=f"m{n}", topic=A)
    if late_ack:
        b.ack("c1", "1:3", topic=A)
    b.close("c1")
    if confirm:
        for cluster, backlog in (("r1", 2), ("r2", 2)):
            b.add("snapshot", subscription="s", cluster=cluster, backlog=backlog, settled=True, snapshot_periods=2)
    if deleted == "after":
        b.add("fault", fault="subscription_deleted", cluster="r2", subscription="s", consumers=[], producers=[])
    b.add("failover", topic=A, subscription="s", cluster="r1", to="r2")
    b.open("c1", topic=B)
    owed = [n for n in (2, 3) if n not in again]
    for n in [*again, *owed]:
        b.receive("c1", f"k{n}", f"7:{n}", uid=f"m{n}", topic=B)
        b.ack("c1", f"7:{n}", topic=B)
    b.close("c1")
    b.end(drained=drained)
    return b


def redelivered(b: TraceBuilder) -> list[str]:
    verdict = check_trace(b.events, header=b.header)
    return [v.facts["uid"] for v in verdict.violations if v.kind is Kind.REDELIVERED_AFTER_FAILOVER]


@pytest.mark.parametrize("step", [10, 0], ids=["distinct-timestamps", "equal-timestamps"])
def test_a_covered_message_delivered_again_is_found(step: int) -> None:
    b = trace(again=[0, 1], step=step)
    verdict = check_trace(b.events, header=b.header)
    assert verdict.validity is Validity.INVALID
    first, second = verdict.violations
    assert {first.kind, second.kind} == {Kind.REDELIVERED_AFTER_FAILOVER}
    assert (first.facts["uid"], second.facts["uid"]) == ("m0", "m1") and first.key == "k0"
    ack = next(e.i for e in b.events if e.op.value == "ack")
    point = next(e.i for e in b.events if e.op.value == "snapshot")
    failover = next(e.i for e in b.events if e.op.value == "failover")
    receive = next(e.i for e in b.events if e.op.value == "receive" and e.topic == B)
    assert first.events == (ack, point, failover, receive)
    assert "delivered again on r2 though the replicated cursor had passed it" in first.explanation
    assert any("2 at or before the position the replicated cursor had reached" in n for n in verdict.notes)


@pytest.mark.parametrize("step", [10, 0], ids=["distinct-timestamps", "equal-timestamps"])
def test_the_same_failover_without_the_covered_messages_is_valid(step: int) -> None:
    b = trace(again=[], step=step)
    verdict = check_trace(b.events, header=b.header)
    assert verdict.validity is Validity.VALID, verdict.render()


def test_a_message_acknowledged_after_the_point_may_come_again_and_is_counted() -> None:
    b = trace(again=[2], late_ack=True)
    verdict = check_trace(b.events, header=b.header)
    assert verdict.validity is Validity.VALID, verdict.render()
    assert any("0 at or before" in n and "1 past it (allowed" in n for n in verdict.notes), verdict.notes
    assert redelivered(trace(again=[1, 2], late_ack=True)) == ["m1"]


@pytest.mark.parametrize("disturb", ["fault", "crash"])
def test_acknowledgements_that_may_not_have_arrived_make_no_point(disturb: str) -> None:
    b = trace(again=[0, 1], disturb=disturb)
    verdict = check_trace(b.events, header=b.header)
    assert verdict.validity is Validity.VALID, verdict.render()
    assert any("no settled snapshot on r1 followed acknowledgements" in n for n in verdict.notes)
    # the consumer the crash replaced acknowledged nothing: the planted fault's twin, with a point, still fails
    assert redelivered(trace(again=[0, 1])) == ["m0", "m1"]


def test_a_snapshot_without_snapshot_periods_is_no_point() -> None:
    # traces recorded before the field existed: their settles did not promise a completed snapshot
    assert redelivered(trace(again=[0, 1], periods=None)) == []
    assert redelivered(trace(again=[0, 1], periods=0)) == []


def test_a_point_needs_a_later_settle_before_the_failover() -> None:
    # without it the cursor update may still be on its way to r2 at the switch
    assert redelivered(trace(again=[0, 1], confirm=False)) == []


def test_a_redelivery_is_found_in_a_run_that_was_not_drained() -> None:
    verdict = check_trace(trace(again=[0], drained=False).events, header=trace(again=[0]).header)
    assert [v.kind for v in verdict.violations] == [Kind.REDELIVERED_AFTER_FAILOVER]
    assert Kind.SKIPPED_AFTER_FAILOVER in verdict.unjudged


def test_a_stored_trace_gives_the_same_verdict_from_every_form(tmp_path: Path) -> None:
    from conformance.trace.parquet import convert_to_parquet

    bad = trace(again=[0, 1]).write(tmp_path / "bad.jsonl")
    assert {v.kind for v in check_trace(bad).violations} == {Kind.REDELIVERED_AFTER_FAILOVER}
    columnar = convert_to_parquet(bad, tmp_path / "bad.parquet")
    assert check_trace(columnar).identities() == check_trace(bad).identities()


def test_a_snapshot_while_the_replicated_status_is_off_is_no_point() -> None:
    # testReplicatedSubscriptionRestApi1: status off, the other cluster replays everything, and that is allowed
    assert redelivered(trace(again=[0, 1], status=("off",))) == []
    # switched on again before the snapshot: the point holds
    assert redelivered(trace(again=[0, 1], status=("off", "on"))) == ["m0", "m1"]


def test_a_failover_to_a_cluster_where_the_subscription_was_deleted_after_the_point_is_not_bounded() -> None:
    b = trace(again=[0, 1], deleted="after")
    verdict = check_trace(b.events, header=b.header)
    assert verdict.validity is Validity.VALID, verdict.render()
    assert any("the subscription was deleted on r2 after the last settled snapshot point" in n for n in verdict.notes)


@pytest.mark.parametrize("step", [10, 0], ids=["distinct-timestamps", "equal-timestamps"])
def test_a_point_made_after_the_deletion_bounds_the_failover(step: int) -> None:
    # testReplicatedSubscriptionWhenReplicatorProducerIsClosed: the snapshot's update creates the subscription
    # again in r2 at its position (receiveSubscriptionUpdated), so what it covered must not come again
    assert redelivered(trace(again=[0, 1], deleted="before", step=step)) == ["m0", "m1"]
    assert redelivered(trace(again=[], deleted="before", step=step)) == []
