"""The split plan (:func:`conformance.spark.split.plan_split`) equals the plan as it was made before it was made
faster (``tests/support/split_reference.py``, frozen): the same scope and identity part for every event, the same
``mixed`` and ``one_pass``, on varied traces — synthesised runs and fuzzed ones, random columns with every
spelling of a message id, null keys, failed publishes, uids published with two ``(producer, seq)``, null
producers and sequence numbers — given as plain columns, as dictionary columns (what a Parquet trace's plan
columns are read as) and stored as Parquet chunks read by :func:`conformance.spark.engine.plan_trace`.
"""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from split_reference import reference_plan
from trace_synth import PLANTABLE, SynthConfig, fuzz, synthesize

from conformance.spark.engine import plan_trace
from conformance.spark.load import events_table
from conformance.spark.split import PLAN_COLUMNS, Plan, plan_source, plan_split
from conformance.trace.parquet import write_parquet
from conformance.trace.reader import open_trace

ROOT = Path(__file__).resolve().parents[2]


def same_plan(got: Plan | None, want: Plan | None, what: str) -> None:
    assert (got is None) == (want is None), what
    if got is None or want is None:
        return
    assert got.parts == want.parts, what
    assert np.array_equal(got.scope, want.scope), what
    assert np.array_equal(got.identity, want.identity), what
    assert (got.mixed, got.one_pass) == (want.mixed, want.one_pass), what
    assert got.scope.dtype == want.scope.dtype and got.identity.dtype == want.identity.dtype, what


def synthesised(n: int, seed: int) -> list[tuple[Any, list[Any], pa.Table]]:
    """``(header, events, their table)`` of synthesised and fuzzed traces: batches, mixed-key batches, faults,
    churn, planted kinds."""
    rnd = random.Random(seed)
    kinds = sorted(PLANTABLE)
    out = []
    for k in range(n):
        s = rnd.randrange(2**32)
        if k % 4 == 3:
            run = fuzz(s, events=rnd.choice([20, 80, 200]), faults=k % 8 == 3, messages=rnd.choice([3, 8, 30]))
        else:
            cfg = SynthConfig(
                partitions=k % 3,
                messages=rnd.choice([10, 40, 120]),
                keys=2 + k % 5,
                fault_rate=0.03 * (k % 5 == 0),
                churn=0.1,
                batch_rate=rnd.choice([0.0, 0.2, 0.6]),
                mixed_batch_rate=rnd.choice([0.0, 0.5, 1.0]),
            )
            run = synthesize(s, cfg, plant={kinds[k % len(kinds)]})
        events = list(run.events)
        out.append((run.header, events, events_table([(0, events)]).drop_columns(["tid"])))
    return out


def random_columns(seed: int) -> pa.Table:
    """Plan columns drawn at random, well-formed or not as the plan reads them: every spelling of a message id
    ("l:e", "l:e:p", "l:e:p:b", batch index -1 or not), a message spelt two ways, null keys and ids (failed
    publishes), keys that differ between a message's events (mixed), uids with two (producer, seq), null
    producers and sequence numbers, a (producer, seq) published in two messages, ops the plan copies
    everywhere."""
    rnd = random.Random(seed)
    n = rnd.choice([1, 7, 60, 400, 3000])
    messages = rnd.choice([2, 10, 200])
    ops = ["publish", "receive", "ack", "nack", "open", "close", "redeliver", "end", None]
    weights = [5, 5, 3, 1, 1, 1, 1, 1, 0.2]

    def spelling(m: int) -> str:
        ledger, entry = m % 3 + rnd.choice([0, 0, 0, -1 if rnd.random() < 0.02 else 0]), m // 3
        batch = m % 2 - 1 if m % 5 else m % 4
        forms = [f"{ledger}:{entry}:-1:{batch}", f"{ledger}:{entry}:{rnd.choice([-1, 0, 2])}:{batch}"]
        if batch == -1:
            forms += [f"{ledger}:{entry}", f"{ledger}:{entry}:-1"]
        return rnd.choice(forms)

    mixing = rnd.random() < 0.3  # a few events name another key than their message's
    uid_twice = rnd.random() < 0.3
    resent = rnd.random() < 0.4  # two messages published with one (producer, seq) (a resend)
    columns: dict[str, list[Any]] = {name: [] for name in PLAN_COLUMNS}
    for _ in range(n):
        op = rnd.choices(ops, weights)[0]
        m = rnd.randrange(messages)
        about = op in ("publish", "receive", "ack", "nack")
        key = f"k{m % 7}" if not mixing or rnd.random() > 0.05 else f"k{rnd.randrange(9)}"
        columns["op"].append(op)
        columns["msg_id"].append(spelling(m) if about and rnd.random() > 0.1 else None)
        null_key = rnd.random() < (0.3 if op in ("ack", "nack") else 0.02)  # acks rarely carry one
        columns["key"].append(None if null_key else (key if about or rnd.random() < 0.1 else None))
        columns["result"].append(rnd.choice(["ok", "ok", "ok", "error", None]) if op == "publish" else None)
        uid = f"uid-{m}" + ("x" * (m % 40)) if rnd.random() > 0.2 else None
        columns["uid"].append(uid if op in ("publish", "receive") else (uid if rnd.random() < 0.05 else None))
        producer = rnd.choice(["p1", "p2", "", None]) if uid_twice else f"p{m % 2}"
        seq = m if not uid_twice else rnd.choice([m, m + 1])
        if resent and not uid_twice:  # messages 2j and 2j+1, of two keys
            producer, seq = "p0", m // 2
        columns["producer"].append(producer if op == "publish" and m % 11 != 5 else None)  # a message's, always
        columns["seq"].append(seq if op == "publish" and m % 13 != 7 else None)
    types = {"seq": pa.int64()}
    return pa.table({name: pa.array(values, types.get(name, pa.string())) for name, values in columns.items()})


def as_dictionaries(table: pa.Table, rnd: random.Random) -> list[Any]:
    """``table``'s batches with its string columns as dictionaries, as a Parquet reader gives them: one dictionary
    for several batches (each batch using a part of it), unused values and a null in it (some null rows name it);
    now and then narrow indices."""
    out = []
    step = max(1, table.num_rows // rnd.choice([1, 3, 7]))
    for start in range(0, table.num_rows, step):
        arrays = []
        for name in table.column_names:
            column = table.column(name).combine_chunks()
            if column.type != pa.string():
                arrays.append(column.slice(start, step))
                continue
            values = [*sorted({v for v in column.to_pylist() if v is not None}), "unused:x", "never"]
            rnd.shuffle(values)
            values.append(None)  # a null in the dictionary, which some null rows name (a null all the same)
            where = {v: k for k, v in enumerate(values)}
            by_value = rnd.random() < 0.5
            narrow = len(values) < 120 and rnd.random() < 0.3  # another writer's index type
            kind = rnd.choice([pa.int8(), pa.uint8()]) if narrow else pa.int32()
            named = [
                where[v] if v is not None or (by_value and rnd.random() < 0.5) else None for v in column.to_pylist()
            ]
            indices = pa.array(named, kind)
            arrays.append(pa.DictionaryArray.from_arrays(indices, pa.array(values, pa.string())).slice(start, step))
        out.append(pa.RecordBatch.from_arrays(arrays, names=table.column_names))
    return out


def batched(table: pa.Table, rnd: random.Random) -> list[Any]:
    """``table`` in batches of a size drawn at random: a message's events in several (at most 40 batches)."""
    return table.to_batches(max_chunksize=max(rnd.choice([5, 64, 1000, 1 << 20]), table.num_rows // 40))


def test_the_plan_is_the_reference_plan_on_synthesised_traces() -> None:
    rnd = random.Random(14)
    for k, (_header, _events, table) in enumerate(synthesised(48, seed=1402)):
        parts = 2 + k % 4
        batches = batched(table, rnd)
        one_pass = k % 3 != 0
        want = reference_plan(batches, parts, one_pass=one_pass)
        got = plan_split(batches, parts, one_pass=one_pass, threads=rnd.choice([1, 2, 3]))
        same_plan(got, want, f"trace {k}, {parts} parts, one_pass={one_pass}")
        same_plan(plan_split(as_dictionaries(table, rnd), parts, one_pass=one_pass), want, f"dict {k}")


def test_the_plan_is_the_reference_plan_on_random_columns() -> None:
    rnd = random.Random(15)
    modes = set()
    for k in range(64):
        table = random_columns(k)
        parts = rnd.choice([2, 3, 5, 200])
        want = reference_plan(batched(table, rnd), parts)
        modes.add((want.mixed, want.one_pass))
        same_plan(plan_split(batched(table, rnd), parts, threads=2), want, f"columns {k}")
        same_plan(plan_split(as_dictionaries(table, rnd), parts), want, f"columns {k} as dictionaries")
    assert {(True, False), (False, True), (False, False)} <= modes  # mixed ones, one-pass ones, two-pass ones


def test_a_plan_fails_where_the_reference_fails() -> None:
    """A message id that is not integers, or a seq column that is not, fails both plans (the trace is then checked
    whole); an id only a non-message event carries does not, nor a partition or a fifth part that is not."""
    table = random_columns(3)
    for column, row, value in (("msg_id", 0, "1:x:-1:-1"), ("msg_id", 1, "7"), ("seq", 2, "s")):
        ops = table.column("op").to_pylist()
        ops[row] = "receive"
        values = table.column(column).to_pylist()
        values[row] = value
        bad = table.set_column(table.schema.get_field_index("op"), "op", pa.array(ops))
        kind = pa.string()
        if column == "seq":
            values = [None if v is None else str(v) for v in values]
        bad = bad.set_column(bad.schema.get_field_index(column), column, pa.array(values, kind))
        assert plan_source(lambda b=bad: b.to_batches(), 2) is None
        with pytest.raises(Exception):  # noqa: B017 - the reference fails as pyarrow's cast does
            reference_plan(bad.to_batches(), 2)
    ops = table.column("op").to_pylist()
    ids = table.column("msg_id").to_pylist()
    ops[0], ids[0] = "open", "not:a:message:id"
    ops[1], ids[1] = "receive", "1:0:x:-1"  # a partition is not read
    ops[2], ids[2] = "ack", "1:0:-1:-1:y"  # nor a fifth part
    odd = table.set_column(table.schema.get_field_index("op"), "op", pa.array(ops))
    odd = odd.set_column(odd.schema.get_field_index("msg_id"), "msg_id", pa.array(ids))
    want = reference_plan(odd.to_batches(), 2)
    same_plan(plan_split(odd.to_batches(), 2), want, "an open with an odd id, a receive with an odd partition")


def test_a_stored_trace_is_planned_as_the_reference_plans_it(tmp_path: Path) -> None:
    """Through the driver's reader (``plan_trace``: the plan columns of each Parquet file read as dictionaries),
    on a directory of chunks of synthesised traces and on a benchmark trace (``benchmarks/gen_trace.py``)."""
    rnd = random.Random(16)
    for k, (header, events, table) in enumerate(synthesised(8, seed=1603)):
        directory = tmp_path / f"t{k}"
        directory.mkdir()
        step = -(-len(events) // 3)
        for n in range(3):
            write_parquet(directory / f"{n:03d}.parquet", header, events[n * step : (n + 1) * step])
        parts = 2 + k % 3
        same_plan(plan_trace(open_trace(directory), parts), reference_plan(batched(table, rnd), parts), f"{k}")
    spec = importlib.util.spec_from_file_location("gen_trace", ROOT / "benchmarks" / "gen_trace.py")
    assert spec is not None and spec.loader is not None
    gen_trace = importlib.util.module_from_spec(spec)
    sys.modules["gen_trace"] = gen_trace
    spec.loader.exec_module(gen_trace)
    path = tmp_path / "bench.parquet"
    gen_trace.generate(30_000, path, plant=2, keys=300, consumers=4)
    table = pq.read_table(path, columns=list(PLAN_COLUMNS))
    for parts in (2, 3):
        same_plan(plan_trace(open_trace(path), parts), reference_plan(table.to_batches(), parts), "gen_trace")
