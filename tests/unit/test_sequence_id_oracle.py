"""``wrong_sequence_id``: the client's last published sequence id after a send's receipt against the send's id.

The driver records ``last_seq`` on a send made one at a time with an id above every earlier id of its producer;
the case-level judgement (``conformance.cases._support.sequence_id_problems``) compares it with the publish's
``seq``.  Proven both ways: a client that numbered a message under another id (a broker's wrong answer on connect,
a wrong count) is flagged, a correct run passes, also with equal timestamps and with sends whose outcome is unknown.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.cases._support import message_id_problems, sequence_id_problems
from conformance.trace.builder import TraceBuilder
from conformance.trace.header import SubscriptionSpec, TraceHeader


def _trace(tmp_path: Path, last_seqs: list[int | None], *, equal_times: bool = False, name: str = "t.jsonl") -> Path:
    """p sends ids 41, 42, ... one at a time; each receipt leaves the client's last published id at ``last_seqs``."""
    b = TraceBuilder(
        TraceHeader(target="hand-written", subscription=SubscriptionSpec("s")), step=0 if equal_times else 10
    )
    b.add("producer_open", topic=b.topic, producer="p", seq=40)
    for index, last in enumerate(last_seqs):
        seq = 41 + index
        extra = {} if last is None else {"last_seq": last}
        b.add("publish", topic=b.topic, producer="p", key="k", msg_id=f"1:{index}:-1:-1", seq=seq, uid=f"p:{seq}",
              result="ok", **extra)  # fmt: skip
    b.add("end", drained=True)
    return b.write(tmp_path / name)


@pytest.mark.parametrize("equal_times", [False, True])
def test_a_correct_run_passes(tmp_path: Path, equal_times: bool) -> None:
    assert sequence_id_problems(_trace(tmp_path, [41, 42, None, 44], equal_times=equal_times)) == []


def test_a_message_numbered_under_another_id_is_flagged(tmp_path: Path) -> None:
    # a client counting up by two (the model's ``_next_sequence_id = seq + 2``): the second send went out as 43
    problems = sequence_id_problems(_trace(tmp_path, [41, 43, 45]))
    assert len(problems) == 2 and problems[0].startswith("wrong_sequence_id: E")
    assert "sequence id 42" in problems[0] and "at 43" in problems[0]


def test_a_last_id_that_did_not_move_is_flagged(tmp_path: Path) -> None:
    # the receipt did not advance the client's last published id (it stayed at the broker's answer)
    assert len(sequence_id_problems(_trace(tmp_path, [40, 40]))) == 2


def test_a_send_of_unknown_outcome_is_not_judged(tmp_path: Path) -> None:
    b = TraceBuilder(TraceHeader(target="hand-written", subscription=SubscriptionSpec("s")), step=10)
    b.add("publish", topic=b.topic, producer="p", key="k", seq=7, uid="p:7", result="info", last_seq=3)
    b.add("end", drained=True)
    assert sequence_id_problems(b.write(tmp_path / "t.jsonl")) == []


def test_parquet_keeps_the_field(tmp_path: Path) -> None:
    assert len(sequence_id_problems(_trace(tmp_path, [41, 43], name="t.parquet"))) == 1


# -- ``wrong_message_id``: a ledger's entries from 0 with no gap; a new ledger after a broker restart -----------


def _ids_trace(
    tmp_path: Path, before: list[str], after: list[str], *, sync: bool = True, equal_times: bool = False
) -> Path:
    """p stores ``before``, the broker restarts, p stores ``after`` (message ids ``ledger:entry``)."""
    extra = {"publish_mode": "sync"} if sync else {}
    b = TraceBuilder(
        TraceHeader(target="hand-written", subscription=SubscriptionSpec("s"), extra=extra),
        step=0 if equal_times else 10,
    )
    for msg_id in before:
        b.publish("k", f"{msg_id}:-1:-1")
    b.fault("broker_restart")
    b.fault("broker_restarted")
    for msg_id in after:
        b.publish("k", f"{msg_id}:-1:-1", t0=b.t if equal_times else b.t + 1)
    b.add("end", drained=True)
    return b.write(tmp_path / "ids.jsonl")


@pytest.mark.parametrize("equal_times", [False, True])
def test_ids_of_a_managed_ledger_pass(tmp_path: Path, equal_times: bool) -> None:
    trace = _ids_trace(tmp_path, ["3:0", "3:1", "3:2"], ["7:0", "7:1"], equal_times=equal_times)
    assert message_id_problems(trace) == []


def test_entries_from_one_are_flagged(tmp_path: Path) -> None:
    problems = message_id_problems(_ids_trace(tmp_path, ["3:1", "3:2"], []))
    assert len(problems) == 1 and "none for entry 0" in problems[0]


def test_a_gap_is_not_judged_when_a_send_may_have_left_an_entry(tmp_path: Path) -> None:
    b = TraceBuilder(TraceHeader(target="hand-written", subscription=SubscriptionSpec("s")), step=10)
    b.publish("k", "3:0:-1:-1")
    b.publish("k", "-1:-1:-1:-1", result="info")  # timed out: it may be entry 3:1
    b.publish("k", "3:2:-1:-1")
    b.add("end", drained=True)
    assert message_id_problems(b.write(tmp_path / "t.jsonl")) == []


@pytest.mark.parametrize("sync", [True, False])
def test_the_old_ledger_after_a_restart_is_flagged(tmp_path: Path, sync: bool) -> None:
    problems = message_id_problems(_ids_trace(tmp_path, ["3:0", "3:1"], ["3:2", "3:3"], sync=sync))
    assert len(problems) == 2 and problems[0].startswith("wrong_message_id: E") and "ledger 3" in problems[0]


def test_a_late_receipt_is_not_judged_unless_the_run_was_synchronous(tmp_path: Path) -> None:
    # equal timestamps and no publish_mode: a receipt logged after the restart may be of a send made before it
    trace = _ids_trace(tmp_path, ["3:0", "3:1"], ["3:2"], sync=False, equal_times=True)
    b_problems = message_id_problems(trace)
    assert b_problems == []


def _batch_trace(tmp_path: Path, msg_ids: list[str], last_seqs: list[int]) -> Path:
    """p's default batch of ids 1, 2, 3 (pipelined), each receipt with the client's last published id."""
    b = TraceBuilder(TraceHeader(target="hand-written", subscription=SubscriptionSpec("s")), step=0)
    for seq, (msg_id, last) in enumerate(zip(msg_ids, last_seqs, strict=True), start=1):
        b.add("publish", topic=b.topic, producer="p", key="k", msg_id=msg_id, seq=seq, uid=f"p:{seq}", result="ok",
              last_seq=last)  # fmt: skip
    b.add("end", drained=True)
    return b.write(tmp_path / "batch.jsonl")


def test_a_batch_leaves_its_last_id(tmp_path: Path) -> None:
    assert sequence_id_problems(_batch_trace(tmp_path, ["1:0:-1:0", "1:0:-1:1", "1:0:-1:2"], [3, 3, 3])) == []


def test_a_batch_whose_receipt_did_not_move_the_id_is_flagged(tmp_path: Path) -> None:
    # the model's ``_batch_outcome`` without its update: the client's last id stays at -1
    problems = sequence_id_problems(_batch_trace(tmp_path, ["1:0:-1:0", "1:0:-1:1", "1:0:-1:2"], [-1, -1, -1]))
    assert len(problems) == 3


def test_a_partition_batch_is_not_judged(tmp_path: Path) -> None:
    # partition 0's batch holds ids 1 and 3 (2 went to partition 1): its receipt leaves first + count - 1 = 2
    assert sequence_id_problems(_batch_trace(tmp_path, ["1:0:0:0", "2:0:1:0", "1:0:0:1"], [2, 2, 2])) == []
