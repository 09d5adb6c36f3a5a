"""``oversized_batch``: the messages sharing an entry (a client's batch) against the client's ``batchingMaxBytes``.

The driver records the limit its batching producers use in the header (``batching_max_bytes``) and each batched
message's payload size on its ``publish`` (``bytes``); the case-level judgement (``conformance.cases._support.
batch_size_problems``) adds up the sizes per entry.  Proven both ways: a client that let a batch take a message it
had no room for is flagged; batches within the limit, and a single message above it, pass, also with equal
timestamps and with acks that may never have arrived.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.cases._support import batch_size_problems
from conformance.trace.builder import TraceBuilder
from conformance.trace.header import SubscriptionSpec, TraceHeader

LIMIT = 131_072


def _trace(
    tmp_path: Path,
    batches: list[list[int]],
    *,
    limit: int | None = LIMIT,
    equal_times: bool = False,
    name: str = "t.jsonl",
) -> Path:
    """p1 sends one batch per item of ``batches`` (the payload sizes of its messages), entry 0, 1, ...; c1 receives
    and acks every message, then crashes (its acks may never have arrived)."""
    extra = {} if limit is None else {"batching_max_bytes": limit}
    header = TraceHeader(target="hand-written", subscription=SubscriptionSpec("s"), extra=extra)
    b = TraceBuilder(header, step=0 if equal_times else 10)
    b.add("open", consumer="c1", topic=b.topic)
    seq = 0
    for entry, sizes in enumerate(batches):
        for index, size in enumerate(sizes):
            msg_id, uid = f"3:{entry}:-1:{index}", f"p1:{seq}"
            b.add("publish", topic=b.topic, producer="p1", key=f"k{seq % 3}", msg_id=msg_id, seq=seq, uid=uid,
                  result="ok", bytes=size)  # fmt: skip
            b.add("receive", consumer="c1", topic=b.topic, key=f"k{entry}", msg_id=msg_id, uid=uid)
            b.add("ack", consumer="c1", topic=b.topic, key=f"k{entry}", msg_id=msg_id, uid=uid)
            seq += 1
    b.add("crash", consumer="c1")
    b.add("end", drained=False)
    return b.write(tmp_path / name)


@pytest.mark.parametrize("equal_times", [False, True])
def test_batches_within_the_limit_pass(tmp_path: Path, equal_times: bool) -> None:
    trace = _trace(
        tmp_path, [[50_000, 50_000], [50_000, 50_000], [65_536, 65_536], [16] * 100], equal_times=equal_times
    )
    assert batch_size_problems(trace) == []


def test_one_message_above_the_limit_goes_alone(tmp_path: Path) -> None:
    assert batch_size_problems(_trace(tmp_path, [[200_000], [50_000, 50_000]])) == []


@pytest.mark.parametrize("equal_times", [False, True])
def test_a_batch_that_took_a_message_without_room_is_flagged(tmp_path: Path, equal_times: bool) -> None:
    # the model producer's send() with `and` for `or` before adding (automatic mutant :233): no flush by size first
    problems = batch_size_problems(_trace(tmp_path, [[50_000] * 3, [50_000] * 3], equal_times=equal_times))
    assert len(problems) == 2 and problems[0].startswith("oversized_batch: producer p1's entry 3:0:-1")
    assert "3 messages of 150000 payload bytes" in problems[0] and "batchingMaxBytes 131072" in problems[0]


def test_one_byte_over_is_flagged(tmp_path: Path) -> None:
    assert len(batch_size_problems(_trace(tmp_path, [[65_536, 65_537]]))) == 1


def test_without_the_limit_in_the_header_nothing_is_judged(tmp_path: Path) -> None:
    assert batch_size_problems(_trace(tmp_path, [[50_000] * 3], limit=None)) == []


def test_parquet_keeps_the_fields(tmp_path: Path) -> None:
    assert len(batch_size_problems(_trace(tmp_path, [[50_000] * 3], name="t.parquet"))) == 1
