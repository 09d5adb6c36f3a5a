"""What a Spark task does with its own rows of a stored trace, without Spark: the reader's unvalidated batches
(:meth:`TraceSource.unchecked_batches`), the task's reading in one thread or two, and that a bad row still comes
out as the reader's one-line error.  ``tests/unit/test_spark_split.py`` proves the split's verdicts."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from trace_synth import SynthConfig, synthesize

from conformance.checks import check_trace
from conformance.spark import engine
from conformance.spark.engine import _merged, check_task, plan_trace
from conformance.spark.rows import OwnRowsInvalid, own_batches
from conformance.trace.parquet import write_parquet
from conformance.trace.reader import FAST_SCHEMA, FastPathFailed, open_trace
from conformance.trace.validation import BatchState, TraceFormatError, check_batch


def stored(tmp_path: Path, events: list[Any], header: Any) -> list[Path]:
    """The same events as one JSON Lines file and a directory of three Parquet chunks."""
    jsonl = tmp_path / "t.jsonl"
    jsonl.write_text("\n".join([header.to_json(), *(e.to_json() for e in events)]) + "\n", encoding="utf-8")
    chunks = tmp_path / "chunks"
    chunks.mkdir()
    step = -(-len(events) // 3)
    for n in range(3):
        write_parquet(chunks / f"{n:03d}.parquet", header, events[n * step : (n + 1) * step])
    return [jsonl, chunks]


def test_unchecked_batches_checked_batch_by_batch_are_the_readers_batches(tmp_path: Path) -> None:
    """``unchecked_batches`` is the read ``batches`` validates: checked with one state, the same tables."""
    run = synthesize(3, SynthConfig(messages=60, keys=5))
    for path in stored(tmp_path, list(run.events), run.header):
        source = open_trace(path)
        raw = list(source.unchecked_batches())
        assert all(batch.schema == FAST_SCHEMA for batch in raw), path
        state, checked = BatchState(), []
        for batch in raw:
            problem, rows = check_batch(batch, state)
            assert problem is None, (path, problem)
            checked.append(rows)
        assert pa.Table.from_batches(checked).equals(pa.Table.from_batches(list(source.batches()))), path


def test_a_bad_row_is_read_unchecked_and_worded_by_the_reader(tmp_path: Path) -> None:
    """A receive without its consumer: ``unchecked_batches`` reads it (it does not judge rows), the vector check
    finds it, and ``batches`` words it in one line naming the chunk and the row, as on the Python engine."""
    run = synthesize(4, SynthConfig(messages=40, keys=4))
    events = list(run.events)
    target = next(n for n, e in enumerate(events) if e.op.value == "receive" and n > 20)
    events[target] = dataclasses.replace(events[target], consumer=None)
    _jsonl, chunks = stored(tmp_path, events, run.header)
    source = open_trace(chunks)
    raw = list(source.unchecked_batches())
    assert sum(batch.num_rows for batch in raw) == len(events)
    state = BatchState()
    assert any(check_batch(batch, state)[0] is not None for batch in raw)
    with pytest.raises(TraceFormatError) as error:
        list(source.batches())
    message = str(error.value)
    assert "\n" not in message and ":row " in message and "has no 'consumer'" in message


def test_a_column_of_another_type_fails_the_unchecked_read_and_the_task(tmp_path: Path) -> None:
    """``i`` stored as text: ``unchecked_batches`` raises ``FastPathFailed`` (terse, for the engine), a task's
    own rows raise ``OwnRowsInvalid``, and the reader words it for the user in one line."""
    good = tmp_path / "good.parquet"
    run = synthesize(6, SynthConfig(messages=20, keys=3))
    write_parquet(good, run.header, list(run.events))
    table = pq.read_table(good)
    typed = table.set_column(0, "i", table.column("i").cast(pa.string()))
    bad = tmp_path / "typed.parquet"
    pq.write_table(typed, bad)
    plan = plan_trace(open_trace(good), 2)
    assert plan is not None
    with pytest.raises(FastPathFailed) as failed:
        list(open_trace(bad).unchecked_batches())
    assert "'i'" in failed.value.problem
    with pytest.raises(OwnRowsInvalid):
        list(own_batches(open_trace(bad), plan, 0, identity=False))
    with pytest.raises(TraceFormatError, match=r"typed.parquet:row 0: expected an integer for 'i'") as error:
        check_trace(bad)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("one_pass", [True, False], ids=["one pass", "two passes"])
def test_a_task_reads_in_one_thread_unless_told_and_finds_the_same_either_way(
    one_pass: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``read_ahead=False`` (a Spark task's default: one core) starts no second thread; with it, the same
    results; merged, the Python engine's verdict."""
    import conformance.trace.readahead as readahead

    started: list[int] = []
    real = readahead.read_ahead

    def counted(make: Any, depth: int = 2) -> Any:
        started.append(1)
        return real(make, depth)

    monkeypatch.setattr(readahead, "read_ahead", counted)
    run = synthesize(8, SynthConfig(messages=80, keys=6))
    _jsonl, chunks = stored(tmp_path, list(run.events), run.header)
    plan = plan_trace(open_trace(chunks), 2)
    assert plan is not None and not plan.mixed
    given = ("path", str(chunks))
    for ahead in (False, True):
        started.clear()
        results = []
        for part in range(2):
            found = check_task(run.header, None, given, part, 2, plan=plan, one_pass=one_pass, read_ahead=ahead)[1]
            results += [(0, pass_, part, result) for pass_, result in found]
        whole = check_task(run.header, None, given, 0, 1, read_ahead=ahead)[1]
        assert len(started) == (3 if ahead else 0)
        verdict = _merged(results, {0: run.header}, None)[0]
        assert verdict.identities() == check_trace(list(run.events), header=run.header).identities()
        assert verdict.identities() == _merged([(0, p, 0, r) for p, r in whole], {0: run.header}, None)[0].identities()


class _Context:
    """What ``_reads_ahead`` reads of a SparkContext: its master, and ``spark.task.cpus`` from its conf."""

    def __init__(self, master: str, task_cpus: str = "1") -> None:
        self.master = master
        self._conf = {"spark.task.cpus": task_cpus}

    def getConf(self) -> Any:  # SparkContext's name
        return self._conf


def test_a_task_reads_ahead_only_with_a_core_to_spare(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two tasks on two cores read in one thread each; one task on two cores, or a task given two cores, may read
    ahead; on a cluster a task has the one core Spark gives it."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1}, raising=False)
    assert not engine._reads_ahead(_Context("local[2]"), 2)
    assert engine._reads_ahead(_Context("local[1]"), 1)
    assert not engine._reads_ahead(_Context("spark://127.0.0.1:7077"), 1)
    assert engine._reads_ahead(_Context("spark://127.0.0.1:7077", task_cpus="2"), 2)
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0}, raising=False)
    assert not engine._reads_ahead(_Context("local[1]"), 1)  # pinned to one core (taskset -c 0)


@pytest.mark.parametrize("fault", ["unknown op", "unknown result", "publish ok without msg_id"])
def test_a_bad_value_in_a_column_read_as_a_dictionary_fails_the_task_holding_it(fault: str, tmp_path: Path) -> None:
    """A task reads the columns of few values (op, result, ...) dictionary-encoded: the vector check still finds a
    bad value there, in the task whose rows hold it, and the reader words it in one line."""
    from conformance.spark.split import ALL

    run = synthesize(9, SynthConfig(messages=40, keys=5))
    good = tmp_path / "good.parquet"
    write_parquet(good, run.header, list(run.events))
    table = pq.read_table(good)
    ops, results = table.column("op").to_pylist(), table.column("result").to_pylist()
    target = next(n for n, op in enumerate(ops) if op == "publish" and n > 20 and results[n] == "ok")
    if fault == "unknown op":
        ops[target] = "publsh"
    elif fault == "unknown result":
        results[target] = "okay"
    else:
        ids = table.column("msg_id").to_pylist()
        ids[target] = None
        table = table.set_column(table.schema.get_field_index("msg_id"), "msg_id", pa.array(ids, pa.string()))
    table = table.set_column(table.schema.get_field_index("op"), "op", pa.array(ops, pa.string()))
    table = table.set_column(table.schema.get_field_index("result"), "result", pa.array(results, pa.string()))
    bad = tmp_path / "bad.parquet"
    pq.write_table(table, bad)
    plan = plan_trace(open_trace(good), 2)  # the good trace's plan: the same rows, so the same parts
    assert plan is not None
    holders = [0, 1] if plan.scope[target] == ALL else [int(plan.scope[target])]
    for part in holders:
        with pytest.raises(OwnRowsInvalid):
            list(own_batches(open_trace(bad), plan, part, identity=False))
    with pytest.raises(TraceFormatError) as error:
        check_trace(bad)
    assert "\n" not in str(error.value) and f"row {target}:" in str(error.value)
