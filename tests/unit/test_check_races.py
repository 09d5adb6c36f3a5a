"""Verdicts to trust (issue 11): what a publish is owed by trace order, the two ack races, scoped faults and
lost writes — each proven both ways: the trace of a correct broker passes, the same trace from a broken one fails.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conformance.checks import Kind, check_trace
from conformance.trace import SubscriptionSpec, TraceHeader
from conformance.trace.builder import TraceBuilder
from conformance.trace.parquet import convert_to_parquet
from pytest_keyshared.cli import main


def found(b: TraceBuilder, **kw: Any) -> list[tuple[str, str | None, tuple[int, ...]]]:
    verdict = check_trace(b.events, header=b.header, **kw)
    return sorted((v.kind.value, v.key, v.events) for v in verdict.all_violations())


# --- 1. a publish is owed by trace order; equal timestamps excuse nothing ---------------------------------------
def test_a_publish_at_the_same_t_as_the_open_is_owed() -> None:
    b = TraceBuilder(step=0)  # every event at one t, as the model writes them
    b.open("c1")
    b.publish("k", "1:0", t0=b.t)
    b.end()
    assert found(b) == [("undelivered", "k", (1,))]


def test_a_publish_at_the_same_t_as_the_open_is_delivered_and_passes() -> None:
    b = TraceBuilder(step=0)
    b.open("c1")
    b.publish("k", "1:0", t0=b.t)
    b.receive("c1", "k", "1:0")
    b.ack("c1", "1:0")
    b.end()
    assert found(b) == []


def test_a_send_called_strictly_before_the_subscription_existed_is_not_owed() -> None:
    b = TraceBuilder()
    b.open("c1")
    b.publish("k", "1:0", t0=b.events[0].t - 1)  # called before the open was logged; stored before it, maybe
    b.end()
    assert found(b) == []


def test_equal_timestamps_make_a_later_message_overtake_an_earlier_one() -> None:
    b = TraceBuilder(step=0)
    b.open("c1")
    b.publish("k", "1:0", t0=b.t)
    b.publish("k", "1:1", t0=b.t)
    b.receive("c1", "k", "1:1")  # E3: 1:0 was owed and free
    b.ack("c1", "1:1")
    b.receive("c1", "k", "1:0")
    b.ack("c1", "1:0")
    b.end()
    assert found(b) == [("out_of_order", "k", (1, 3))]


def _model_trace(out: Path) -> list[str]:
    assert main(["run", "--target", "model", "--scenario", "join-while-pending", "--out", str(out), "-q"]) == 0
    return (out / "trace.jsonl").read_text().splitlines()


def test_a_model_trace_with_one_delivery_deleted_is_undelivered(tmp_path: Path) -> None:
    """Issue 11, part 1: the model writes t=0 everywhere; deleting one message's receive and ack must fail."""
    lines = _model_trace(tmp_path / "run")
    events = [json.loads(line) for line in lines[1:]]
    victim = next(e["msg_id"] for e in events if e["op"] == "publish" and e["msg_id"] == "0:5:-1:-1")
    kept = [lines[0]] + [
        line
        for line, e in zip(lines[1:], events, strict=True)
        if not (e["op"] in ("receive", "ack") and e.get("msg_id") == victim)
    ]
    assert len(kept) == len(lines) - 2
    intact = check_trace(tmp_path / "run" / "trace.jsonl")
    assert intact.valid and intact.violations == ()
    lost = tmp_path / "lost.jsonl"
    lost.write_text("\n".join(kept) + "\n")
    for path in (lost, convert_to_parquet(lost, tmp_path / "lost.parquet")):
        verdict = check_trace(path)
        assert not verdict.valid
        undelivered = [v for v in verdict.violations if v.kind is Kind.UNDELIVERED]
        assert [v.facts["msg"] for v in undelivered] == [victim]


# --- 2a. once an ack is logged, the message is owed to nobody -----------------------------------------------------
def _ack_then_in_flight_copy(*, acked: bool) -> TraceBuilder:
    """Issue 11's minimal trace: c2 acks m1 it does not hold; a copy already in flight reaches c1."""
    b = TraceBuilder()
    b.open("c2")
    b.publish("k0", "1:1")  # m1
    b.open("c1")
    if acked:
        b.ack("c2", "1:1")
    b.receive("c1", "k0", "1:1")
    b.fault("broker_restart")
    b.publish("k0", "1:2")  # m2
    b.receive("c1", "k0", "1:2")
    b.end()
    return b


def test_an_ack_by_a_non_holder_then_an_in_flight_copy_passes() -> None:
    assert found(_ack_then_in_flight_copy(acked=True)) == []


def test_without_the_ack_the_same_trace_fails() -> None:
    b = _ack_then_in_flight_copy(acked=False)
    assert found(b) == [("out_of_order", "k0", (4, 6)), ("undelivered", "k0", (4,))]


@pytest.mark.parametrize("late_ack", [True, False])
def test_an_ack_sent_after_the_ackers_own_redeliver(late_ack: bool) -> None:
    """Ack grouping: c1 acks after its redeliver request; the redelivered copy reaches c2, which then crashes."""
    b = TraceBuilder()
    b.open("c1")
    b.open("c2")
    b.publish("k", "1:0")
    b.receive("c1", "k", "1:0")
    b.redeliver("c1")  # E4
    if late_ack:
        b.ack("c1", "1:0")  # holds nothing: arms nothing, but the message is acknowledged
    b.receive("c2", "k", "1:0")
    crash = b.crash("c2").i
    b.publish("k", "1:1")
    b.receive("c1", "k", "1:1")
    b.ack("c1", "1:1")
    b.end()
    if late_ack:
        assert found(b) == []
    else:
        assert found(b) == [("undelivered", "k", (crash,))]  # the redeliver request exempted k from ordering


@pytest.mark.parametrize("late_ack", [True, False])
def test_an_ack_logged_after_its_consumer_closed(late_ack: bool) -> None:
    b = TraceBuilder()
    b.open("c1")
    b.open("c2")
    b.publish("k", "1:0")
    b.receive("c1", "k", "1:0")
    b.close("c1")  # E4 releases 1:0
    if late_ack:
        b.ack("c1", "1:0")  # the ack thread lost the race to the log: it may still have reached the broker
    b.end()
    assert found(b) == ([] if late_ack else [("undelivered", "k", (4,))])


def test_a_redelivery_after_ack_makes_the_message_owed_again() -> None:
    """The exception: a receive that is itself redelivered_after_ack shows the broker took the ack back."""
    b = TraceBuilder()
    b.open("c1")
    b.publish("k", "1:0")
    b.receive("c1", "k", "1:0")
    b.ack("c1", "1:0")  # E3 arms
    b.receive("c1", "k", "1:0")  # E4
    b.close("c1")  # E5: owed again, released, never received
    b.end()
    assert found(b) == [("redelivered_after_ack", "k", (3, 4)), ("undelivered", "k", (5,))]


def test_an_ack_before_the_message_is_known_counts_once_it_is() -> None:
    b = TraceBuilder()
    b.open("c1")
    b.open("c2")
    b.ack("c2", "1:0")  # names a message not yet known
    b.publish("k", "1:0")  # the receipt, logged late
    b.end()
    assert found(b) == []
    b2 = TraceBuilder()
    b2.open("c1")
    b2.ack("c1", "1:9")  # another message
    b2.publish("k", "1:0")
    b2.end()
    assert found(b2) == [("undelivered", "k", (2,))]


# --- 3. a fault touches the consumers it names ----------------------------------------------------------------------
def _fault(b: TraceBuilder, consumers: list[str] | None, **extra: Any) -> int:
    return b.add("fault", fault="client_reconnect", consumers=consumers, **extra).i


def _overlap_across_fault(consumers: list[str] | None, **extra: Any) -> TraceBuilder:
    b = TraceBuilder()
    b.open("c1")
    b.open("c2")
    b.publish("k", "1:0")
    b.publish("k", "1:1")
    b.receive("c1", "k", "1:0")  # E4: c1 holds k
    _fault(b, consumers, **extra)  # E5
    b.receive("c2", "k", "1:1")  # E6
    b.ack("c2", "1:1")
    b.receive("c2", "k", "1:0")
    b.ack("c2", "1:0")
    b.end()
    return b


def test_a_fault_naming_another_consumer_does_not_excuse_an_overlap() -> None:
    assert found(_overlap_across_fault(["c2"])) == [
        ("key_overlap", "k", (4, 6)),
        ("key_overlap", "k", (4, 8)),
        ("out_of_order", "k", (4, 6)),
    ]


@pytest.mark.parametrize(("consumers", "extra"), [(["c1"], {}), (None, {}), (["c2"], {"unattributed": ["consumer-7"]})])
def test_a_fault_touching_the_holder_releases_its_hold(consumers: list[str] | None, extra: dict[str, Any]) -> None:
    """Named, unnamed (everyone) or with handlers the driver could not name (everyone): c1's hold ends; 1:0 is
    then free, so c2 receiving 1:1 first is out of order — but no overlap."""
    assert found(_overlap_across_fault(consumers, **extra)) == [("out_of_order", "k", (5, 6))]


@pytest.mark.parametrize(("consumers", "armed"), [(["c2"], True), ([], True), (["c1"], False), (None, False)])
def test_a_fault_disarms_only_the_acks_of_the_consumers_it_names(consumers: list[str] | None, armed: bool) -> None:
    b = TraceBuilder()
    b.open("c1")
    b.open("c2")
    b.publish("k", "1:0")
    b.receive("c1", "k", "1:0")
    b.ack("c1", "1:0")  # E4 arms
    _fault(b, consumers)
    b.receive("c1", "k", "1:0")  # E6
    b.ack("c1", "1:0")
    b.end()
    assert found(b) == ([("redelivered_after_ack", "k", (4, 6))] if armed else [])


def test_a_scoped_fault_reads_the_same_from_files(tmp_path: Path) -> None:
    """The columnar path (JSON Lines, Parquet) reads ``consumers`` like the live one."""
    b = _overlap_across_fault(["c2"])
    path = b.write(tmp_path / "t.jsonl")
    expected = found(b)
    for p in (path, convert_to_parquet(path, tmp_path / "t.parquet")):
        verdict = check_trace(p)
        assert sorted((v.kind.value, v.key, v.events) for v in verdict.all_violations()) == expected


# --- 4. lost_write --------------------------------------------------------------------------------------------------
def _dedup() -> TraceBuilder:
    return TraceBuilder(TraceHeader(target="hand-written", subscription=SubscriptionSpec("s"), deduplication=True))


def test_a_duplicate_receipt_for_a_sequence_never_stored_is_a_lost_write() -> None:
    b = _dedup()
    b.open("c1")
    b.publish("k", "-1:-1", seq=0, uid="u0")  # E1: "already stored", but nothing was
    b.publish("k", "-1:-1", seq=0, uid="u0")  # reported once per (producer, seq)
    b.publish("k", "1:1", seq=1, uid="u1")
    b.receive("c1", "k", "1:1", uid="u1")
    b.ack("c1", "1:1")
    b.end()
    verdict = check_trace(b.events, header=b.header)
    assert [(v.kind, v.events) for v in verdict.violations] == [(Kind.LOST_WRITE, (1,))]
    assert not verdict.valid
    assert "lost_write: producer 'p' sequence id 0" in verdict.violations[0].explanation
    assert not check_trace(b.events, header=b.header, profile="lenient").valid


def test_a_duplicate_receipt_of_a_stored_sequence_is_no_violation() -> None:
    b = _dedup()
    b.open("c1")
    b.publish("k", "1:0", seq=0, uid="u0")
    b.receive("c1", "k", "1:0", uid="u0")
    b.ack("c1", "1:0")
    b.publish("k", "-1:-1", seq=0, uid="u0")  # the resend, dropped: correct
    b.end()
    assert found(b) == []


@pytest.mark.parametrize("evidence", ["info", "fail", "receive"])
def test_a_sequence_that_may_be_stored_excuses_its_duplicate_receipt(evidence: str) -> None:
    b = _dedup()
    b.open("c1")
    if evidence == "receive":  # a receive shows the message stored, though its sender never learnt the id
        b.receive("c1", "k", "1:0", uid="u0")
        b.ack("c1", "1:0")
    else:  # a send whose outcome the client could not know
        b.publish("k", "-1:-1", seq=0, uid="u0", result=evidence)
    b.publish("k", "-1:-1", seq=0, uid="u0")
    b.end()
    assert found(b) == []
