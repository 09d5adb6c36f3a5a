"""A compacted reader gets, per key, only the latest value up to the compaction horizon
(``superseded_after_compaction`` for a superseded one, ``undelivered`` for a missing latest one), on
hand-written failover traces, both ways (``ReplicatedSubscriptionTest.testReplicatedSubscriptionWithCompaction``).

r1 publishes m0..m3 on keys k0, k1, k0, k1 (m2 and m3 supersede m0 and m1); the consumer acknowledges them; a
``compaction`` of r1 follows, then m4 on k0 (after the horizon); replication settles and a compacted reader in r1
reads.  The correct read is m2, m3, m4.
"""

from __future__ import annotations

import pytest

from conformance.checks import Kind, Validity, check_trace
from conformance.trace import SubscriptionSpec, TraceHeader
from conformance.trace.builder import TraceBuilder

A, B = "t@r1", "t@r2"
KEYS = ["k0", "k1", "k0", "k1", "k0"]


def trace(
    *, reads: list[int], step: int = 10, acks: bool = True, compacted: bool = True, lost: int | None = None
) -> TraceBuilder:
    """``lost``: that publish's receipt never came (result ``info``): it may have been stored."""
    header = TraceHeader(
        target="hand-written", subscription=SubscriptionSpec("s"), deduplication=False, extra={"clusters": ["r1", "r2"]}
    )
    b = TraceBuilder(header, step=step)
    b.open("c1", topic=A)
    for n in range(4):
        if n == lost:
            b.add("publish", topic=A, producer="p", key=KEYS[n], uid=f"m{n}", result="info")
        else:
            b.add("publish", topic=A, producer="p", key=KEYS[n], msg_id=f"1:{n}", uid=f"m{n}", result="ok")
    for n in range(4):
        if n == lost:
            continue
        b.receive("c1", KEYS[n], f"1:{n}", uid=f"m{n}", topic=A)
        if acks:
            b.ack("c1", f"1:{n}", topic=A)
    b.add("fault", fault="compaction", cluster="r1", consumers=[], producers=[])
    b.add("publish", topic=A, producer="p", key="k0", msg_id="1:9", uid="m4", result="ok")
    b.receive("c1", "k0", "1:9", uid="m4", topic=A)
    if acks:
        b.ack("c1", "1:9", topic=A)
    for cluster in ("r1", "r2"):
        b.add("snapshot", subscription="s", cluster=cluster, backlog=0, settled=True, snapshot_periods=2)
    flags = {"compacted": True} if compacted else {}
    b.add("open", topic=A, subscription="reader-r1", consumer="reader-r1", result="ok", reader=True, **flags)
    for n in reads:
        msg = "1:9" if n == 4 else f"1:{n}"
        b.receive("reader-r1", KEYS[n], msg, uid=f"m{n}", topic=A)
        b.ack("reader-r1", msg, topic=A)
    b.close("reader-r1")
    b.close("c1")
    b.add("failover", topic=A, subscription="s", cluster="r1", to="r2")
    b.open("c1", topic=B)
    b.close("c1")
    b.end(drained=True)
    return b


@pytest.mark.parametrize("step", [10, 0], ids=["distinct-timestamps", "equal-timestamps"])
@pytest.mark.parametrize("acks", [True, False], ids=["acked", "acks-never-arrived"])
def test_the_latest_value_per_key_passes(step: int, acks: bool) -> None:
    b = trace(reads=[2, 3, 4], step=step, acks=acks)
    verdict = check_trace(b.events, header=b.header)
    assert not [v for v in verdict.violations if v.subscription == "reader-r1"], verdict.render()
    if acks:
        assert verdict.validity is Validity.VALID, verdict.render()


@pytest.mark.parametrize("step", [10, 0], ids=["distinct-timestamps", "equal-timestamps"])
@pytest.mark.parametrize("acks", [True, False], ids=["acked", "acks-never-arrived"])
def test_a_superseded_value_read_compacted_is_found(step: int, acks: bool) -> None:
    b = trace(reads=[0, 2, 3, 4], step=step, acks=acks)
    verdict = check_trace(b.events, header=b.header)
    mine = [v for v in verdict.violations if v.subscription == "reader-r1"]
    assert verdict.validity is Validity.INVALID
    assert [(v.kind, v.facts["uid"], v.facts["newer"]) for v in mine] == [
        (Kind.SUPERSEDED_AFTER_COMPACTION, "m0", "m2")
    ]
    assert "compacted reader 'reader-r1' on r1 read m0, superseded by m2" in mine[0].explanation


def test_the_old_value_instead_of_the_latest_is_both_superseded_and_undelivered() -> None:
    b = trace(reads=[0, 3, 4])
    verdict = check_trace(b.events, header=b.header)
    kinds = sorted((v.kind.value, v.facts["uid"]) for v in verdict.violations)
    assert kinds == [("superseded_after_compaction", "m0"), ("undelivered", "m2")]


def test_a_value_published_after_the_horizon_is_owed() -> None:
    b = trace(reads=[2, 3])
    verdict = check_trace(b.events, header=b.header)
    assert [(v.kind, v.facts["uid"]) for v in verdict.violations] == [(Kind.UNDELIVERED, "m4")]


def test_an_unconfirmed_later_value_may_have_superseded_the_latest_confirmed() -> None:
    # m2 (k0) never confirmed: it may be stored and the latest of k0, so m0 is owed by no one and is not superseded
    b = trace(reads=[3, 4], lost=2)
    verdict = check_trace(b.events, header=b.header)
    assert not [v for v in verdict.violations if v.subscription == "reader-r1"], verdict.render()


def test_a_reader_that_is_not_compacted_owes_everything() -> None:
    b = trace(reads=[0, 1, 2, 3, 4], compacted=False)
    assert check_trace(b.events, header=b.header).validity is Validity.VALID
    b = trace(reads=[2, 3, 4], compacted=False)
    kinds = sorted((v.kind.value, v.facts["uid"]) for v in check_trace(b.events, header=b.header).violations)
    assert kinds == [("undelivered", "m0"), ("undelivered", "m1")]


@pytest.mark.parametrize("reads", [[2, 3, 4], [0, 2, 3, 4], [0, 1, 4], [1, 0, 3, 2, 4], [3, 4]])
@pytest.mark.parametrize("lost", [None, 2])
def test_the_reference_reading_agrees(reads: list[int], lost: int | None) -> None:
    """tests/quality/reference_checker.py's independent reading of the rule gives the same violations."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "quality"))
    from reference_checker import compacted_reads, engine_identities

    b = trace(reads=[n for n in reads if n != lost], lost=lost, step=0)
    engine = engine_identities(
        [v for v in check_trace(b.events, header=b.header).violations if v.kind is Kind.SUPERSEDED_AFTER_COMPACTION]
    )
    assert engine == compacted_reads(b.events)


def swapped(reads: list[int]) -> TraceBuilder:
    b = trace(reads=reads)
    for event in b.events:
        if event.op.value in ("publish", "receive", "ack") and event.msg_id in ("1:0", "1:2"):
            object.__setattr__(event, "msg_id", "1:2" if event.msg_id == "1:0" else "1:0")
    return b


def test_the_latest_is_the_highest_message_id_not_the_last_receipt() -> None:
    """Two producers' receipts may be logged out of storage order: with m0's id above m2's, m0 is k0's latest
    (the consumer c1's own order findings aside)."""
    b = swapped([0, 3, 4])
    mine = [v for v in check_trace(b.events, header=b.header).violations if v.subscription == "reader-r1"]
    assert mine == []
    b = swapped([2, 3, 4])
    mine = [v for v in check_trace(b.events, header=b.header).violations if v.subscription == "reader-r1"]
    assert sorted((v.kind.value, v.facts["uid"]) for v in mine) == [
        ("superseded_after_compaction", "m2"),
        ("undelivered", "m0"),
    ]
