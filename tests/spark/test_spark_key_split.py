"""The Spark engine's split by key in Spark's workers: a stored trace whose acks carry their message's key is
checked in one job, each task routing its events itself; a trace whose routed split does not hold is checked
again with the keys of its acks resolved by the tasks, and by the plan only if that does not hold either; a
stored trace whose acks carry no key is split by resolved keys at once, the driver reading nothing of it.
Every verdict is the streaming engine's (``tests/unit/test_spark_router.py`` and
``tests/unit/test_spark_resolved_keys.py`` prove the splits task by task without Spark)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from part_checks import same_verdicts, stored_in_chunks
from trace_synth import PLANTABLE, SynthConfig, synthesize

from conformance.checks import Kind, check_trace
from conformance.spark import check_with_spark
from conformance.spark.engine import run_tasks
from conformance.spark.split import hash_strings

pytestmark = pytest.mark.spark


def recorded(seed: int, **config: Any) -> Any:
    cfg = SynthConfig(
        **{
            "partitions": 2,
            "messages": 80,
            "keys": 6,
            "churn": 0.08,
            "keyed_acks": True,
            "mixed_batch_rate": 0.0,
            # without deduplication by default (the test below has it: every part then reads the others' receipts)
            "deduplication": False,
            **config,
        }
    )
    return synthesize(seed, cfg, plant={Kind.OUT_OF_ORDER, Kind.DUPLICATE_PUBLISH, Kind.KEY_OVERLAP})


def test_stored_traces_whose_acks_carry_their_key_are_split_by_key(spark: Any, tmp_path: Path) -> None:
    """Parquet chunks and JSON Lines, in one job each: routed, and the streaming verdict."""
    run = recorded(31)
    events = list(run.events)
    chunks = stored_in_chunks(tmp_path / "chunks", run.header, events)
    jsonl = tmp_path / "trace.jsonl"
    jsonl.write_text("\n".join([run.header.to_json(), *(e.to_json() for e in events)]) + "\n", encoding="utf-8")
    want = check_trace(events, header=run.header)
    assert not want.valid
    for path in (chunks, jsonl):
        routed: list[int] = []
        (verdict,) = run_tasks(spark, [(run.header, ("path", str(path)))], parts=3, routed=routed)
        assert routed == [0]
        same_verdicts(verdict, want)
        same_verdicts(check_with_spark(str(path), spark=spark, parts=3), want)


def test_a_trace_with_deduplication_is_split_by_key_and_not_checked_again_whole(spark: Any, tmp_path: Path) -> None:
    """Deduplication on, a lower id stored after a higher one of its producer under another key planted: each part
    reads the other parts' receipts, so the split by key is the verdict (not checked again whole), the planted
    ``stored_below_highest`` among it."""
    cfg = SynthConfig(partitions=2, messages=80, keys=6, churn=0.08, keyed_acks=True, mixed_batch_rate=0.0)
    for seed in range(40, 60):
        run = synthesize(seed, cfg, plant={Kind.STORED_BELOW_HIGHEST, Kind.OUT_OF_ORDER})
        want = check_trace(list(run.events), header=run.header)
        if want.counts.get("stored_below_highest"):
            break
    assert run.header.deduplication and want.counts["stored_below_highest"]
    path = stored_in_chunks(tmp_path / "chunks", run.header, list(run.events))
    routed: list[int] = []
    whole: list[int] = []
    (verdict,) = run_tasks(spark, [(run.header, ("path", str(path)))], parts=3, routed=routed, whole=whole)
    assert routed == [0] and whole == [] and verdict.extra["split"] == "key"
    same_verdicts(verdict, want)


def test_a_trace_whose_routed_split_does_not_hold_is_checked_again_with_resolved_keys(
    spark: Any, tmp_path: Path
) -> None:
    """A late ack written with another key than its message's: the entries overlap, the trace is checked again,
    each ack going where its message's key goes, with the streaming verdict."""
    run = recorded(32)
    events = list(run.events)
    keys = sorted({e.key for e in events if e.key is not None})
    part = dict(zip(keys, (int(h) % 2 for h in hash_strings(pa.array(keys))), strict=True))
    n, ack = next((n, e) for n, e in enumerate(events) if e.op.value == "ack" and n > len(events) // 2)
    events[n] = dataclasses.replace(ack, key=next(k for k in keys if part[k] != part[ack.key]))  # another part's
    path = stored_in_chunks(tmp_path / "chunks", run.header, events)
    routed: list[int] = []
    whole: list[int] = []
    (verdict,) = run_tasks(spark, [(run.header, ("path", str(path)))], parts=2, routed=routed, whole=whole)
    assert routed == [0] and whole == [] and verdict.extra["split"] == "resolved"
    same_verdicts(verdict, check_trace(events, header=run.header))


def test_a_trace_whose_acks_carry_no_key_is_split_without_a_plan(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The driver may not plan (it would fail the test): the tasks resolve the acks' keys, and a stray ack (of a
    message nothing published or received) is routed by a second job.  Both engines give one verdict."""
    import conformance.spark.engine as engine

    def no_plan(*_args: Any) -> None:
        raise AssertionError("the driver planned the split")

    monkeypatch.setattr(engine, "_driver_plan", no_plan)
    run = recorded(33, keyed_acks=False)
    events = list(run.events)
    ack = next(e for e in events if e.op.value == "ack")
    stray = dataclasses.replace(ack, i=events[-2].i, t=events[-2].t, msg_id="999:0:-1:-1")
    events = [*events[:-2], stray, *(dataclasses.replace(e, i=e.i + 1) for e in events[-2:])]
    path = stored_in_chunks(tmp_path / "chunks", run.header, events)
    routed: list[int] = []
    (verdict,) = run_tasks(spark, [(run.header, ("path", str(path)))], parts=2, routed=routed)
    assert routed == [0] and verdict.extra["split"] == "resolved"
    want = check_trace(events, header=run.header)
    assert not want.valid
    same_verdicts(verdict, want)


def test_many_traces_in_one_job_each_split_its_own_way(spark: Any) -> None:
    """Events sent from the driver: routed where the split holds, the plan for the others, in order."""
    from conformance.spark import check_many

    runs = [recorded(40 + n, keyed_acks=n % 3 != 2, mixed_batch_rate=0.5 if n % 3 == 1 else 0.0) for n in range(9)]
    routed: list[int] = []
    verdicts = check_many(spark, [(r.header, list(r.events)) for r in runs], parts=2, routed=routed)
    assert set(routed) <= {n for n in range(9) if n % 3 != 2} and {0, 3, 6} <= set(routed)
    found: set[Kind] = set()
    for run, verdict in zip(runs, verdicts, strict=True):
        want = check_trace(list(run.events), header=run.header)
        same_verdicts(verdict, want)
        found |= {v.kind for v in want.all_violations()}
    assert found >= {Kind.OUT_OF_ORDER, Kind.DUPLICATE_PUBLISH, Kind.KEY_OVERLAP} and found <= set(PLANTABLE)
