"""``replicated_cursor_ahead`` on hand-written failover traces, both ways.

Once replication settled, every cluster's copy of a replicated subscription counts in its backlog each message
no consumer of it acknowledged (PIP-33: a replicated cursor moves only to a snapshot at or before the
acknowledged position; markers only add to the backlog).  A ``snapshot`` event with ``settled: true`` whose
``backlog`` is smaller has a cursor past an unacknowledged message.
"""

from __future__ import annotations

import pytest

from conformance.checks import Kind, Validity, check_trace
from conformance.trace import SubscriptionSpec, TraceHeader
from conformance.trace.builder import TraceBuilder

A, B = "t@r1", "t@r2"


def trace(
    *,
    acked: list[int],
    backlogs: tuple[int, int],
    settled: bool = True,
    late_acks: list[int] | None = None,
    step: int = 10,
    stranger_acks: list[int] | None = None,
) -> TraceBuilder:
    """m0..m3 published on r1; c1 receives all and acknowledges ``acked``; both clusters' snapshots with
    ``backlogs`` (r1, r2); ``late_acks`` acknowledged after the snapshots; the failover and a drain of r2 that
    delivers m0..m3 again.  ``stranger_acks``: acknowledged by a consumer of another subscription before the
    snapshots (the rest after them: that subscription, which stays on r1, is owed every message)."""
    header = TraceHeader(
        target="hand-written", subscription=SubscriptionSpec("s"), deduplication=False, extra={"clusters": ["r1", "r2"]}
    )
    b = TraceBuilder(header, step=step)
    b.open("c1", topic=A)
    if stranger_acks:
        b.open("x", topic=A, subscription="other")
    for n in range(4):
        b.publish(f"k{n}", f"1:{n}", uid=f"m{n}", topic=A, seq=n)
    for n in range(4):
        b.receive("c1", f"k{n}", f"1:{n}", uid=f"m{n}", topic=A)
    for n in acked:
        b.ack("c1", f"1:{n}", topic=A)
    for n in stranger_acks or ():
        b.receive("x", f"k{n}", f"1:{n}", uid=f"m{n}", topic=A)
        b.ack("x", f"1:{n}", topic=A)
    for cluster, backlog in zip(("r1", "r2"), backlogs, strict=True):
        b.add("snapshot", subscription="s", cluster=cluster, backlog=backlog, settled=settled)
    for n in late_acks or ():
        b.ack("c1", f"1:{n}", topic=A)
    for n in sorted(set(range(4)) - set(stranger_acks)) if stranger_acks else ():  # 'other' owes them too
        b.receive("x", f"k{n}", f"1:{n}", uid=f"m{n}", topic=A)
        b.ack("x", f"1:{n}", topic=A)
    b.close("c1")
    b.add("failover", topic=A, subscription="s", cluster="r1", to="r2")
    b.open("c1", topic=B)
    for n in range(4):
        b.receive("c1", f"k{n}", f"7:{n}", uid=f"m{n}", topic=B)
        b.ack("c1", f"7:{n}", topic=B)
    b.close("c1")
    b.end(drained=True)
    return b


def kinds(b: TraceBuilder) -> list[Kind]:
    return [v.kind for v in check_trace(b.events, header=b.header).violations]


@pytest.mark.parametrize("step", [10, 0], ids=["distinct-timestamps", "equal-timestamps"])
def test_backlogs_that_count_every_unacknowledged_message_are_valid(step: int) -> None:
    b = trace(acked=[0, 1], backlogs=(2, 7), step=step)  # r2: 4 messages (only mark-delete replicates) + markers
    verdict = check_trace(b.events, header=b.header)
    assert verdict.validity is Validity.VALID, verdict.render()


@pytest.mark.parametrize("step", [10, 0], ids=["distinct-timestamps", "equal-timestamps"])
def test_a_standby_cursor_past_an_unacknowledged_message_is_found(step: int) -> None:
    b = trace(acked=[0, 1], backlogs=(2, 1), step=step)
    (found,) = check_trace(b.events, header=b.header).violations
    assert found.kind is Kind.REPLICATED_CURSOR_AHEAD and found.key == "k2"
    snapshot_r2 = next(e.i for e in b.events if e.op.value == "snapshot" and e.extra["cluster"] == "r2")
    publishes = [e.i for e in b.events if e.op.value == "publish"]
    assert found.events == (publishes[2], publishes[3], snapshot_r2)
    assert found.facts["cluster"] == "r2" and found.facts["backlog"] == 1 and found.facts["unacknowledged"] == 2
    assert "had passed 1 unacknowledged message(s)" in found.explanation and "m2, m3" in found.explanation


def test_the_home_cluster_is_held_to_the_same_bound() -> None:
    assert kinds(trace(acked=[0, 1], backlogs=(1, 4))) == [Kind.REPLICATED_CURSOR_AHEAD]


def test_an_acknowledgement_recorded_after_the_snapshot_does_not_count_for_it() -> None:
    # m2 is acknowledged only after the snapshots: at the snapshot it is still owed, so r2 must count it
    assert kinds(trace(acked=[0, 1], late_acks=[2], backlogs=(2, 2))) == []
    assert kinds(trace(acked=[0, 1], late_acks=[2], backlogs=(2, 1))) == [Kind.REPLICATED_CURSOR_AHEAD]


def test_duplicate_acknowledgements_count_once() -> None:
    assert kinds(trace(acked=[0, 0, 1, 1], backlogs=(2, 2))) == []
    assert kinds(trace(acked=[0, 0, 1, 1], backlogs=(2, 1))) == [Kind.REPLICATED_CURSOR_AHEAD]


def test_an_acknowledgement_in_another_subscription_does_not_count() -> None:
    # consumer x of subscription 'other' acknowledges m2 and m3: subscription s still owes them
    assert kinds(trace(acked=[0, 1], stranger_acks=[2, 3], backlogs=(2, 2))) == []
    assert kinds(trace(acked=[0, 1], stranger_acks=[2, 3], backlogs=(2, 0))) == [Kind.REPLICATED_CURSOR_AHEAD]


def test_a_snapshot_before_replication_settled_is_not_judged() -> None:
    b = trace(acked=[0, 1], backlogs=(2, 0), settled=False)
    verdict = check_trace(b.events, header=b.header)
    assert verdict.validity is Validity.VALID
    assert any("not judged: replication had not settled" in n for n in verdict.notes)


def test_a_stored_trace_gives_the_same_verdict_from_every_form(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from conformance.trace.parquet import convert_to_parquet

    bad = trace(acked=[0], backlogs=(3, 2)).write(tmp_path / "bad.jsonl")
    assert [v.kind for v in check_trace(bad).violations] == [Kind.REPLICATED_CURSOR_AHEAD]
    columnar = convert_to_parquet(bad, tmp_path / "bad.parquet")
    assert check_trace(columnar).identities() == check_trace(bad).identities()


def test_a_trace_with_batched_publishes_is_not_judged_by_backlog() -> None:
    # a backlog counts entries: with m0..m3 in one batch (1:0:-1:0 .. 1:0:-1:3) a backlog of 1 may be exact
    header = TraceHeader(
        target="hand-written", subscription=SubscriptionSpec("s"), deduplication=False, extra={"clusters": ["r1", "r2"]}
    )
    b = TraceBuilder(header)
    b.open("c1", topic=A)
    for n in range(4):
        b.publish("k", f"1:0:-1:{n}", uid=f"m{n}", topic=A, seq=n)
    b.add("snapshot", subscription="s", cluster="r2", backlog=1, settled=True)
    b.end(drained=False)
    verdict = check_trace(b.events, header=b.header)
    assert Kind.REPLICATED_CURSOR_AHEAD not in {v.kind for v in verdict.violations}
    assert any("published in batches" in n for n in verdict.notes)
