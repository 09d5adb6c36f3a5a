"""The Spark engine's split (:mod:`conformance.spark.split`), without Spark: the plan each task makes, and that
checking the parts of a trace and merging them gives the streaming engine's verdict — in one pass and in two.

``tests/spark/test_spark_engine.py`` runs the same tasks in Spark's workers; here each task is called directly
(``check_task``), which is what a Spark task does with its (trace, part), so the exactness of the split is
proven in seconds, for both ways a part is checked (most traces take one pass: the two-pass way is forced).
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from trace_synth import PLANTABLE, SynthConfig, fuzz, synthesize

from conformance.checks import check_trace
from conformance.spark.engine import _in_memory, _merged, check_task
from conformance.spark.load import events_table
from conformance.spark.split import ALL, NONE, hash_strings, one_pass_batches, plan_split
from conformance.trace import SubscriptionSpec, TraceHeader
from conformance.trace.builder import TraceBuilder


def table_of(events: Any) -> Any:
    return events_table([(0, list(events))]).drop_columns(["tid"])


def checked_in_parts(header: TraceHeader, events: list[Any], parts: int, *, one_pass: bool) -> tuple[Any, bool]:
    """The merged verdict of every task of a trace, as the engine's job computes it; and whether it went whole."""
    given = _in_memory(events)
    results, whole = [], False
    for part in range(parts):
        was_whole, found = check_task(header, None, given, part, parts, one_pass=one_pass)
        whole |= was_whole
        results += [(0, pass_, part, result) for pass_, result in found]
    return _merged(results, {0: header}, None)[0], whole


def same_verdicts(got: Any, want: Any) -> None:
    assert got.identities() == want.identities()
    assert (got.validity, got.counts, got.events) == (want.validity, want.counts, want.events)
    assert (got.notes, got.unjudged) == (want.notes, want.unjudged)
    texts = sorted((v.identity(), v.explanation) for v in got.all_violations())
    assert texts == sorted((v.identity(), v.explanation) for v in want.all_violations())


def test_hash_is_fixed_and_a_null_is_the_empty_string() -> None:
    """Every task, on every machine, must put a key in the same part: the hash is not Python's salted one."""
    got = hash_strings(pa.array(["", None, "key-1", "key-1", "é", "a" * 300]))
    assert got.dtype == np.uint64
    assert got[0] == got[1] == 0 and got[2] == got[3]
    assert int(got[2]) == 11936166839790456015  # pinned: a change re-routes keys (harmless, but deliberate)
    assert len({int(x) for x in got[2:]}) == 3
    dictionary = pa.array(["key-1", "x", "key-1"]).dictionary_encode()
    assert list(hash_strings(dictionary)) == list(hash_strings(pa.array(["key-1", "x", "key-1"])))


def test_the_plan_keeps_a_key_together_and_copies_membership() -> None:
    run = synthesize(7, SynthConfig(partitions=2, messages=60, keys=8))
    table = table_of(run.events)
    plan = plan_split(table.to_batches(max_chunksize=50), 4)  # several batches: the plan spans them
    assert not plan.mixed and plan.events == table.num_rows
    ops, keys, ids, uids = (table.column(c).to_pylist() for c in ("op", "key", "msg_id", "uid"))
    message = [n for n, op in enumerate(ops) if op in ("publish", "receive", "ack", "nack") and ids[n] is not None]
    by_key: dict[str, set[int]] = {}
    for n in message:
        if ops[n] in ("publish", "receive"):
            by_key.setdefault(keys[n], set()).add(int(plan.scope[n]))
    assert all(len(p) == 1 for p in by_key.values())  # a key in one part
    assert len({p for ps in by_key.values() for p in ps}) > 1  # and the keys spread over the parts
    by_id: dict[str, set[int]] = {}
    for n in message:
        by_id.setdefault(ids[n].split(":")[1], set()).add(int(plan.scope[n]))
    assert all(len(p) == 1 for p in by_id.values())  # an ack goes with its message (acks carry no key here)
    cross = [n for n, op in enumerate(ops) if op in ("open", "close", "crash", "redeliver", "fault", "end")]
    assert cross and all(plan.scope[n] == ALL for n in cross)  # copied into every part
    assert plan.copies(0) == 0 and plan.copies(3) == len(cross)  # counted once
    by_uid: dict[str, set[int]] = {}
    for n, uid in enumerate(uids):
        if uid is not None and ops[n] in ("publish", "receive"):
            by_uid.setdefault(uid, set()).add(int(plan.identity[n]))
    assert by_uid and all(len(p) == 1 for p in by_uid.values())
    assert all(plan.identity[n] == NONE for n in cross)
    # one pass: what a part holds keeps its identity fields
    part = next(iter(by_key["k0" if "k0" in by_key else sorted(by_key)[0]]))
    rows = pa.Table.from_batches(list(one_pass_batches(plan, part, table.to_batches(max_chunksize=50))))
    assert rows.num_rows == int(np.count_nonzero((plan.scope == part) | (plan.scope == ALL)))
    assert plan.one_pass and rows.column("uid").null_count < rows.num_rows


def test_a_message_with_two_keys_or_a_uid_with_two_producers_is_mixed() -> None:
    b = TraceBuilder()
    b.open("c1"), b.publish("k0", "1:0"), b.receive("c1", "k3", "1:0"), b.ack("c1", "1:0"), b.end()
    assert plan_split(table_of(b.events).to_batches(), 4).mixed
    dedup = TraceHeader("x", SubscriptionSpec("s"), deduplication=True)
    b = TraceBuilder(dedup)
    b.open("c1"), b.publish("k", "1:0", producer="p1", seq=0, uid="a")
    b.publish("k", "1:1", producer="p2", seq=0, uid="a"), b.end()
    assert plan_split(table_of(b.events).to_batches(), 4).mixed


def test_a_plan_read_against_another_trace_is_refused() -> None:
    run = synthesize(3, SynthConfig(messages=10))
    table = table_of(run.events)
    plan = plan_split(table.to_batches(), 2)
    with pytest.raises(RuntimeError, match="fewer events"):
        list(one_pass_batches(plan, 0, table.slice(0, 5).to_batches()))


def traces(n: int, seed: int) -> list[tuple[TraceHeader, list[Any]]]:
    rnd = random.Random(seed)
    kinds = sorted(PLANTABLE)
    out = []
    for k in range(n):
        s = rnd.randrange(2**32)
        if k % 4 == 3:
            run = fuzz(s, faults=k % 8 == 3, selector="auto-split")
        else:
            cfg = SynthConfig(partitions=k % 3, messages=20, keys=3 + k % 4, fault_rate=0.03 * (k % 5 == 0), churn=0.1)
            run = synthesize(s, cfg, plant={kinds[k % len(kinds)]})
        out.append((run.header, list(run.events)))
    return out


@pytest.mark.parametrize("one_pass", [True, False], ids=["one pass where it can", "always two passes"])
def test_parts_merged_give_the_streaming_verdict(one_pass: bool) -> None:
    found = set()
    modes = set()
    for n, (header, events) in enumerate(traces(48, seed=1125 + one_pass)):
        parts = 2 + n % 3
        verdict, whole = checked_in_parts(header, events, parts, one_pass=one_pass)
        want = check_trace(events, header=header)
        same_verdicts(verdict, want)
        found |= {v.kind for v in want.all_violations()}
        modes.add("whole" if whole else "split")
    assert found == set(PLANTABLE)
    assert modes == {"whole", "split"}
