"""``redelivered_after_failover`` bounded by a point made with acknowledgement holes open, both ways.

A settle (``snapshot_periods`` >= 1) taken while m0 is still unacknowledged is no point at once, but its snapshot
stays cached (the run writes too little for an eviction): once m0 is acknowledged, by a consumer connected since
before that settle that has read past it, the mark-delete passes the snapshot and its update moves r2's cursor
past m0 and m1.  So m0 and m1 must not come again after the failover; m2, published later and held, must.  What
voids it: the acknowledgement may not have arrived, a fault in between, a consumer that reconnected, no message
read past the settle, too many writes for the cache (the header's
``replicatedSubscriptionsSnapshotMaxCachedPerSubscription``), an unconfirmed publish.
"""

from __future__ import annotations

from typing import Any

import pytest

from conformance.checks import Kind, Validity, check_trace
from conformance.trace import SubscriptionSpec, TraceHeader
from conformance.trace.builder import TraceBuilder

A, B = "t@r1", "t@r2"


COMPLETED = "pulsar_replicated_subscriptions_snapshot_ms_count"


def settle(b: TraceBuilder, backlogs: tuple[int, int], periods: int | None = 2, completed: int | None = None) -> None:
    for cluster, backlog in zip(("r1", "r2"), backlogs, strict=True):
        metrics = {} if completed is None else {"metrics": {COMPLETED: completed, "other": 0}}
        b.add(
            "snapshot",
            subscription="s",
            cluster=cluster,
            backlog=backlog,
            settled=True,
            snapshot_periods=periods,
            **metrics,
        )


def trace(
    *,
    again: list[int],
    step: int = 10,
    cache: Any = None,
    extra_writes: int = 0,
    fault: bool = False,
    reopen: bool = False,
    read_past: bool = True,
    ack_disturbed: bool = False,
    unconfirmed: bool = False,
    completed: int | None = None,
    early_fault: bool = False,
) -> TraceBuilder:
    """m0, m1 published on r1 and received, m1 acknowledged; a settle (H); m2 published (received with
    ``read_past``) and held; a settle; m0 acknowledged; a settle (the point), c1 closes; the failover's settle;
    r2 delivers ``again`` (of m0, m1) and then m2.  ``extra_writes`` more messages are published (and
    acknowledged, with m2's publish); ``cache`` sets the header's cache size; ``completed``: every settle records
    that many completed snapshots per cluster (``metrics``); ``early_fault``: a fault before anything else."""
    extra: dict[str, Any] = {"clusters": ["r1", "r2"]}
    if cache is not None:
        extra["broker_conf"] = {"replicatedSubscriptionsSnapshotMaxCachedPerSubscription": cache}
    header = TraceHeader(target="hand-written", subscription=SubscriptionSpec("s"), deduplication=False, extra=extra)
    b = TraceBuilder(header, step=step)
    if early_fault:
        b.add("fault", fault="cluster_down", cluster="r2", consumers=[], producers=[])
        b.add("fault", fault="cluster_up", cluster="r2", consumers=[], producers=[])
    b.open("c1", topic=A)
    for n in range(2):
        b.publish(f"k{n}", f"1:{n}", uid=f"m{n}", topic=A, seq=n)
    for n in range(2):
        b.receive("c1", f"k{n}", f"1:{n}", uid=f"m{n}", topic=A)
    b.ack("c1", "1:1", topic=A)
    settle(b, (1, 3), completed=completed)
    if reopen:
        b.close("c1")
        b.open("c1", topic=A)
    if unconfirmed:
        b.add("publish", topic=A, producer="p", key="kx", result="info")
    b.publish("k2", "1:3", uid="m2", topic=A, seq=2)
    if read_past:
        b.receive("c1", "k2", "1:3", uid="m2", topic=A)
    for n in range(3, 3 + extra_writes):
        b.publish(f"k{n}", f"1:{n + 1}", uid=f"m{n}", topic=A, seq=n)
        b.receive("c1", f"k{n}", f"1:{n + 1}", uid=f"m{n}", topic=A)
        b.ack("c1", f"1:{n + 1}", topic=A)
    settle(b, (2, 5), completed=completed)
    if fault:
        b.add("fault", fault="cluster_down", cluster="r2", consumers=[], producers=[])
        b.add("fault", fault="cluster_up", cluster="r2", consumers=[], producers=[])
    b.ack("c1", "1:0", topic=A)
    if ack_disturbed:
        b.add("fault", fault="client_reconnect", consumers=["c1"], producers=[])
    settle(b, (1, 3), completed=completed)
    b.close("c1")
    settle(b, (1, 3), completed=completed)
    b.add("failover", topic=A, subscription="s", cluster="r1", to="r2")
    b.open("c1", topic=B)
    for n in [*again, 2]:
        b.receive("c1", f"k{n}", f"7:{n}", uid=f"m{n}", topic=B)
        b.ack("c1", f"7:{n}", topic=B)
    b.close("c1")
    b.end(drained=True)
    return b


def redelivered(b: TraceBuilder) -> list[str]:
    verdict = check_trace(b.events, header=b.header)
    return sorted(v.facts["uid"] for v in verdict.violations if v.kind is Kind.REDELIVERED_AFTER_FAILOVER)


@pytest.mark.parametrize("step", [10, 0], ids=["distinct-timestamps", "equal-timestamps"])
def test_messages_covered_by_a_snapshot_taken_with_holes_open_delivered_again_are_found(step: int) -> None:
    b = trace(again=[0, 1], step=step)
    verdict = check_trace(b.events, header=b.header)
    assert verdict.validity is Validity.INVALID
    assert redelivered(b) == ["m0", "m1"]
    found = next(v for v in verdict.violations if v.facts["uid"] == "m0")
    snapshots = [e.i for e in b.events if e.op.value == "snapshot"]
    ack = next(e.i for e in b.events if e.op.value == "ack" and e.msg_id == "1:0")
    assert found.facts["since"] == snapshots[0] and found.facts["point"] == snapshots[4]
    assert found.events == tuple(sorted(found.events)) and ack in found.events and snapshots[0] in found.events
    assert "with holes open" in " ".join(verdict.notes)


@pytest.mark.parametrize("step", [10, 0], ids=["distinct-timestamps", "equal-timestamps"])
def test_the_same_failover_resuming_past_them_is_valid(step: int) -> None:
    b = trace(again=[], step=step)
    verdict = check_trace(b.events, header=b.header)
    assert verdict.validity is Validity.VALID, verdict.render()


def test_an_acknowledgement_that_may_not_have_arrived_makes_no_point() -> None:
    assert redelivered(trace(again=[0, 1], ack_disturbed=True)) == []


@pytest.mark.parametrize(
    "void",
    [
        {"fault": True},  # a restart or a reset may have dropped the cache
        {"reopen": True},  # every consumer left: the cursor rewinds and re-reads
        {"read_past": False},  # nothing shows the dispatcher read the snapshot's marker
        {"unconfirmed": True},  # a message that may be stored keeps the mark-delete below it
        {"extra_writes": 3},  # 6 writes may complete 12 snapshots: more than 10 cached, one may be evicted
        {"cache": 5},  # 3 writes, 6 snapshots, a cache of 5
        {"cache": "5"},
    ],
    ids=["fault", "reopen", "not-read-past", "unconfirmed", "writes", "small-cache", "small-cache-str"],
)
def test_nothing_is_bounded_when_the_snapshot_may_have_left_the_cache(void: dict[str, Any]) -> None:
    assert redelivered(trace(again=[0, 1], **void)) == []


def test_a_larger_cache_in_the_header_keeps_the_bound_for_more_writes() -> None:
    assert redelivered(trace(again=[0, 1], extra_writes=3, cache=12)) == ["m0", "m1"]
    assert redelivered(trace(again=[0, 1], extra_writes=3, cache="bad")) == []  # unreadable: Pulsar's 10


@pytest.mark.parametrize("step", [10, 0], ids=["distinct-timestamps", "equal-timestamps"])
def test_a_recorded_count_of_completed_snapshots_bounds_the_cache_below_2w(step: int) -> None:
    # 6 writes could complete 12 snapshots, but the settles' /metrics show 10 at most: nothing was evicted
    assert redelivered(trace(again=[0, 1], extra_writes=3, completed=10, step=step)) == ["m0", "m1"]
    assert redelivered(trace(again=[], extra_writes=3, completed=10, step=step)) == []
    assert redelivered(trace(again=[0, 1], extra_writes=3, completed=11, step=step)) == []  # one may be evicted
    # a fault before may have reset the counter (a broker restart): the count is not read then
    assert redelivered(trace(again=[0, 1], extra_writes=3, completed=10, early_fault=True, step=step)) == []
