"""``wrong_sequence_id``: the client's last published sequence id after a send's receipt against the send's id.

The driver records ``last_seq`` on a send made one at a time with an id above every earlier id of its producer;
the case-level judgement (``conformance.cases._support.sequence_id_problems``) compares it with the publish's
``seq``.  Proven both ways: a client that numbered a message under another id (a broker's wrong answer on connect,
a wrong count) is flagged, a correct run passes, also with equal timestamps and with sends whose outcome is unknown.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.cases._support import sequence_id_problems
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
