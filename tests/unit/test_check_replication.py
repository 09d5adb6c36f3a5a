"""The replication check (``skipped_after_failover``) on hand-written failover traces, both ways.

A failover trace lists its clusters in the header and names each cluster's copy of the topic ``t@<cluster>``;
the application's move is a ``failover`` event, its consumer's re-attachment an ordinary ``open``.
"""

from __future__ import annotations

from conformance.checks import Kind, Validity, check_trace
from conformance.trace import SubscriptionSpec, TraceHeader
from conformance.trace.builder import TraceBuilder

A, B = "t@r1", "t@r2"


def failover_trace(*, redeliver: list[int], acked: list[int], drained: bool = True) -> TraceBuilder:
    """m0..m3 published on r1; c1 receives all, acks ``acked``; fails over; r2 delivers ``redeliver``."""
    header = TraceHeader(
        target="hand-written", subscription=SubscriptionSpec("s"), deduplication=False, extra={"clusters": ["r1", "r2"]}
    )
    b = TraceBuilder(header)
    b.open("c1", topic=A)
    for n in range(4):
        b.publish(f"k{n}", f"1:{n}", uid=f"m{n}", topic=A, seq=n)
    for n in range(4):
        b.receive("c1", f"k{n}", f"1:{n}", uid=f"m{n}", topic=A)
    for n in acked:
        b.ack("c1", f"1:{n}", topic=A)
    b.close("c1")
    b.add("failover", topic=A, subscription="s", cluster="r1", to="r2")
    b.open("c1", topic=B)
    for n in redeliver:
        b.receive("c1", f"k{n}", f"7:{n}", uid=f"m{n}", topic=B)
        b.ack("c1", f"7:{n}", topic=B)
    b.close("c1")
    b.end(drained=drained)
    return b


def test_a_failover_that_resumes_at_the_acknowledged_position_is_valid() -> None:
    b = failover_trace(acked=[0, 1], redeliver=[2, 3])
    verdict = check_trace(b.events, header=b.header)
    assert verdict.validity is Validity.VALID, verdict.render()
    assert verdict.counts["undelivered"] == 0  # r1's copy, left behind, is not judged as undelivered


def test_duplicates_after_a_failover_are_allowed_and_noted() -> None:
    b = failover_trace(acked=[0, 1], redeliver=[0, 1, 2, 3])
    verdict = check_trace(b.events, header=b.header)
    assert verdict.validity is Validity.VALID
    assert any("2 message(s) acknowledged on r1 before the failover" in n for n in verdict.notes)


def test_an_unacknowledged_message_skipped_after_the_failover_is_found() -> None:
    b = failover_trace(acked=[0], redeliver=[2, 3])  # m1 was held, not acknowledged, and never came back
    verdict = check_trace(b.events, header=b.header)
    assert verdict.validity is Validity.INVALID
    (found,) = verdict.violations
    assert found.kind is Kind.SKIPPED_AFTER_FAILOVER and found.key == "k1"
    failover_i = next(e.i for e in b.events if e.op.value == "failover")
    assert found.events == (2, failover_i, b.events[-1].i)
    assert "m1" in found.explanation and "However, the run drained r2" in found.explanation


def test_not_drained_after_the_failover_is_unknown() -> None:
    b = failover_trace(acked=[0], redeliver=[2, 3], drained=False)
    verdict = check_trace(b.events, header=b.header)
    assert verdict.validity is Validity.UNKNOWN and Kind.SKIPPED_AFTER_FAILOVER in verdict.unjudged


def test_a_stored_failover_trace_is_checked_like_any_other(tmp_path) -> None:  # type: ignore[no-untyped-def]
    bad = failover_trace(acked=[0], redeliver=[2, 3]).write(tmp_path / "bad.jsonl")
    good = failover_trace(acked=[0, 1], redeliver=[2, 3]).write(tmp_path / "good.jsonl")
    assert [v.kind for v in check_trace(bad).violations] == [Kind.SKIPPED_AFTER_FAILOVER]
    assert check_trace(good).validity is Validity.VALID
    from conformance.trace.parquet import convert_to_parquet

    columnar = convert_to_parquet(bad, tmp_path / "bad.parquet")  # the same verdict from Parquet
    assert check_trace(columnar).identities() == check_trace(bad).identities()


def test_a_delivery_only_engine_s_verdict_is_completed_with_the_replication_check(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """What the Spark engine's verdict goes through (``with_event_checks``): the replication findings are added,
    and ``undelivered`` witnessed on the cluster the subscription left is dropped (it is the replication
    check's business there)."""
    from conformance.checks.api import with_event_checks
    from conformance.checks.loss import make_undelivered
    from conformance.profiles import profile_for_header
    from conformance.trace.reader import open_trace
    from conformance.verdict import build_verdict

    b = failover_trace(acked=[0], redeliver=[2, 3])
    source = open_trace(b.write(tmp_path / "t.jsonl"))
    close_r1 = next(e.i for e in b.events if e.op.value == "close")
    left_behind = make_undelivered("s", "k1", "1:1:-1:-1", (close_r1, "close", "c1", "1:1:-1:-1"), b.events[-1].i)
    delivery_only = build_verdict([left_behind], profile_for_header(b.header), events=len(b.events))
    verdict = with_event_checks(delivery_only, source)
    assert [v.kind for v in verdict.violations] == [Kind.SKIPPED_AFTER_FAILOVER]
    plain = TraceBuilder()
    plain.open("c1")
    plain.end()
    untouched = build_verdict([], profile_for_header(plain.header), events=2)
    assert with_event_checks(untouched, open_trace(plain.write(tmp_path / "p.jsonl"))) is untouched
