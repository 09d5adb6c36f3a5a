"""``batch_flushed_early``: a client's batch sent before its publish delay though it had room for the next send.

The driver spaces a publish step's sends (``spacing_ms``), records the step on each publish (``step``), each
message's payload size (``bytes``) and the batching limits in the header; the case-level judgement
(``conformance.cases._support.early_batch_problems``) reads three consecutive sends a, b, c: b outside a's batch,
c's send begun within the delay of that batch's first send, and room in it for b.  Proven both ways: a client whose
stale batch timer flushed the next batch early (automatic mutant producer.py:246) is flagged; batches closed by
size or by their own timer pass, also with equal timestamps (ordered by sequence id), and with acks that may never
have arrived.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.cases._support import early_batch_problems
from conformance.trace.builder import TraceBuilder
from conformance.trace.header import SubscriptionSpec, TraceHeader

MS = 1_000_000
LIMITS = {"batching_max_messages": 100, "batching_max_bytes": 131_072, "batching_max_publish_delay_ms": 5}


def _trace(
    tmp_path: Path,
    sends: list[tuple[int, str]],
    *,
    size: int = 50_000,
    limits: dict[str, int] | None = None,
    fault: bool = False,
    failed: bool = False,
    name: str = "t.jsonl",
) -> Path:
    """p1's spaced sends of step 3 as ``(t0 in ms, entry:batch_index)``, receipts logged in reverse (a receipt may
    come in any order); c1 receives and acks each, then crashes (its acks may never have arrived)."""
    header = TraceHeader(
        target="hand-written", subscription=SubscriptionSpec("s"), extra=LIMITS if limits is None else limits
    )
    b = TraceBuilder(header, step=10)
    b.add("open", consumer="c1", topic=b.topic)
    if fault:
        b.add("fault", topic=b.topic, fault="broker_restart")
    for seq, (t0, where) in reversed(list(enumerate(sends))):
        entry, index = where.split(":")
        msg_id, uid = f"7:{entry}:-1:{index}", f"p1:{seq}"
        result = "fail" if failed and seq == 0 else "ok"
        b.add("publish", topic=b.topic, producer="p1", key=f"k{seq % 3}", msg_id=None if result == "fail" else msg_id,
              seq=seq, uid=uid, result=result, t0=t0 * MS, bytes=size, step=3)  # fmt: skip
    for seq, (_, where) in enumerate(sends):
        entry, index = where.split(":")
        msg_id, uid = f"7:{entry}:-1:{index}", f"p1:{seq}"
        b.add("receive", consumer="c1", topic=b.topic, key=f"k{seq % 3}", msg_id=msg_id, uid=uid)
        b.add("ack", consumer="c1", topic=b.topic, key=f"k{seq % 3}", msg_id=msg_id, uid=uid)
    b.add("crash", consumer="c1")
    b.add("end", drained=False)
    return b.write(tmp_path / name)


#: 2 ms apart, 50,000 bytes each: two fit a batch, the third's send closes it by size and opens the next
CORRECT = [(0, "0:0"), (2, "0:1"), (4, "1:0"), (6, "1:1"), (8, "2:0"), (10, "2:1"), (12, "3:0")]
#: the stale timer of batch 0 (due at 5 ms) sends batch 1 with one message; batch 1's (due at 9 ms) sends batch 2 so
STALE_TIMER = [(0, "0:0"), (2, "0:1"), (4, "1:0"), (6, "2:0"), (8, "3:0"), (10, "3:1"), (12, "4:0")]


def test_batches_closed_by_size_pass(tmp_path: Path) -> None:
    assert early_batch_problems(_trace(tmp_path, CORRECT)) == []


def test_a_batch_closed_by_its_own_timer_passes(tmp_path: Path) -> None:
    # sends 3 ms apart: the second batch's timer (4 + 5 = 9 ms) fires before the send at 10 ms; c began at 10 >= 9
    sends = [(0, "0:0"), (3, "0:1"), (4, "1:0"), (10, "2:0"), (13, "2:1")]
    assert early_batch_problems(_trace(tmp_path, sends)) == []


def test_equal_timestamps_are_ordered_by_sequence_id(tmp_path: Path) -> None:
    sends = [(0, "0:0"), (0, "0:1"), (0, "1:0"), (0, "1:1"), (0, "2:0")]
    assert early_batch_problems(_trace(tmp_path, sends)) == []


def test_a_batch_sent_early_by_a_stale_timer_is_flagged(tmp_path: Path) -> None:
    problems = early_batch_problems(_trace(tmp_path, STALE_TIMER))
    assert len(problems) == 2 and problems[0].startswith("batch_flushed_early: producer p1's batch 7:1 (step 3, 1")
    assert "room for the next send" in problems[0] and "(p1:3, 50000 bytes)" in problems[0]


def test_a_full_batch_is_not_judged(tmp_path: Path) -> None:
    limits = {**LIMITS, "batching_max_messages": 1}
    assert early_batch_problems(_trace(tmp_path, STALE_TIMER, limits=limits)) == []


def test_no_room_for_the_next_message_is_not_judged(tmp_path: Path) -> None:
    assert early_batch_problems(_trace(tmp_path, STALE_TIMER, size=70_000)) == []


@pytest.mark.parametrize("what", ["fault", "failed", "no limits"])
def test_what_is_not_judged(tmp_path: Path, what: str) -> None:
    limits = {} if what == "no limits" else None
    trace = _trace(tmp_path, STALE_TIMER, fault=what == "fault", failed=what == "failed", limits=limits)
    assert early_batch_problems(trace) == []


def test_parquet_keeps_the_fields(tmp_path: Path) -> None:
    assert len(early_batch_problems(_trace(tmp_path, STALE_TIMER, name="t.parquet"))) == 2


def test_spacing_is_a_publish_field_of_default_batches_and_survives_a_round_trip() -> None:
    from conformance.scenarios.loader import loads_scenario
    from conformance.scenarios.model import InvalidScenario
    from conformance.scenarios.writer import dumps_scenario

    text = '[[steps]]\ndo = "publish"\ncount = 4\nbatching = "default"\nspacing_ms = 2\n'
    scenario = loads_scenario(text, "toml", default_name="spaced")
    assert scenario.steps[0].spacing_ms == 2  # type: ignore[union-attr]
    assert loads_scenario(dumps_scenario(scenario), "toml").steps == scenario.steps
    with pytest.raises(InvalidScenario, match='spacing_ms applies only with batching = "default"'):
        loads_scenario(text.replace('"default"', '"key_based"'), "toml", default_name="spaced")
