"""The Spark engine's split by key (:mod:`conformance.spark.router`), without Spark: each task routes the events
by the key they carry, and the parts' footprints tell whether the split held.

Proven both ways, as a checker is: a routed split whose footprints do not overlap gives the streaming engine's
verdict (violations, explanations, counts, notes, unjudged kinds) on simulated runs with every kind planted, on
arbitrary traces and on both raced; and each way a trace can defeat routing by key (an ack carrying another key,
a batch entry of two keys, a (producer, seq) or a uid under two keys) shows as an overlap, where merging the
parts anyway would give another verdict.  ``tests/spark/test_spark_key_split.py`` runs the same in Spark's workers,
with the engine's fallback to the plan.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from part_checks import same_verdicts, stored_in_chunks
from raced_traces import race
from trace_synth import PLANTABLE, SynthConfig, fuzz, synthesize

from conformance.checks import check_trace
from conformance.checks.partition import needs_whole_trace
from conformance.spark.engine import _in_memory, _merged, check_routed_task, check_task
from conformance.spark.load import events_table
from conformance.spark.route import WHOLE
from conformance.spark.router import FOOTPRINT_KINDS, KeyRouter, _distinct, overlap, routable
from conformance.spark.rows import OwnRowsInvalid, routed_batches
from conformance.spark.split import ALL, hash_strings
from conformance.trace import SubscriptionSpec, TraceHeader
from conformance.trace.builder import TraceBuilder
from conformance.trace.reader import open_trace
from conformance.trace.validation import TraceFormatError
from conformance.violations import Kind


def table_of(events: Any) -> Any:
    return events_table([(0, list(events))]).drop_columns(["tid"])


def routed_in_parts(
    header: TraceHeader, events: list[Any], parts: int, given: Any = None, *, fallback: bool = True
) -> tuple[Any, str | None]:
    """Every task of a trace split by key, as the engine's job runs them: the merged verdict, and which kind of
    footprint overlaps (None: the split held).  ``fallback=False``: the parts merged even where the engine would
    check the trace again whole (a lost_write found, or stored_below_highest judged)."""
    given = given if given is not None else _in_memory(events)
    results, footprints = [], []
    for part in range(parts):
        result, footprint = check_routed_task(header, None, given, part, parts)
        assert set(footprint) == set(FOOTPRINT_KINDS)
        results.append((0, WHOLE, part, result))
        footprints.append(footprint)
    if fallback and any(needs_whole_trace(result) for *_, result in results):  # as run_tasks: checked whole
        results = [(0, pass_, 0, result) for pass_, result in check_task(header, None, given, 0, 1)[1]]
    return _merged(results, {0: header}, None)[0], overlap(footprints)


def keys_in_other_parts(parts: int = 2) -> tuple[str, str]:
    """Two keys a split into ``parts`` puts in different parts."""
    names = [f"k{n}" for n in range(64)]
    where = hash_strings(pa.array(names)) % np.uint64(parts)
    other = next(n for n in range(1, 64) if where[n] != where[0])
    return names[0], names[other]


def test_an_event_about_a_message_goes_to_its_own_keys_part_and_every_other_op_everywhere() -> None:
    b = TraceBuilder()
    b.open("c1")
    b.publish("a", "1:0")
    b.receive("c1", "a", "1:0")
    b.ack("c1", "1:0", key="a")
    b.publish(None, "1:1")
    b.ack("c1", "1:1")  # no key: the empty key's part
    b.redeliver("c1")
    b.close("c1")
    b.end()
    table = table_of(b.events)
    got = KeyRouter(3).parts_of(table.to_batches()[0])
    ops = table.column("op").to_pylist()
    want = hash_strings(table.column("key")) % np.uint64(3)
    for n, op in enumerate(ops):
        assert got[n] == (int(want[n]) if op in ("publish", "receive", "ack", "nack") else ALL)
    assert got[ops.index("ack")] == got[ops.index("receive")]
    assert got[4] == got[5] == int(hash_strings(pa.array([""]))[0] % np.uint64(3))  # null key: the empty key
    # a key column read as a dictionary routes the same (one router over batches whose dictionaries repeat)
    coded = table.set_column(table.schema.get_field_index("key"), "key", table.column("key").dictionary_encode())
    router = KeyRouter(3)
    parts_of_coded = np.concatenate([router.parts_of(b) for b in coded.to_batches(max_chunksize=3)])
    assert list(parts_of_coded) == list(got)


def test_distinct_ids_are_sorted_and_each_once() -> None:
    rnd = np.random.default_rng(5)
    chunks = [rnd.integers(0, 50, 30, dtype=np.uint64) for _ in range(4)]
    assert list(_distinct(chunks)) == sorted({int(x) for c in chunks for x in c})
    assert len(_distinct([])) == 0


def traces(n: int, seed: int) -> list[tuple[str, TraceHeader, list[Any]]]:
    """Simulated runs (every kind planted in turn, partitioned topics, faults, batches of one key and of
    several) and arbitrary traces, each also raced; acks carry their message's key, as recorders write them."""
    rnd = random.Random(seed)
    kinds = sorted(PLANTABLE)
    out = []
    for k in range(n):
        s = rnd.randrange(2**32)
        if k % 4 >= 2:
            run = fuzz(s, faults=k % 8 >= 6, selector="auto-split", keyed_acks=True)
            family = "fuzz"
        else:
            cfg = SynthConfig(
                partitions=k % 3,
                messages=24,
                keys=3 + k % 5,
                fault_rate=0.03 * (k % 5 == 0),
                churn=0.1,
                mixed_batch_rate=0.0 if k % 3 else 0.5,
                keyed_acks=True,
            )
            run = synthesize(s, cfg, plant={kinds[(k // 4 + k % 2) % len(kinds)]})  # each kind in turn
            family = "synth"
        events = list(run.events)
        if k % 2:
            events = race(events, random.Random(s), benign=k % 8 == 1)
            family += "-raced"
        out.append((family, run.header, events))
    return out


def test_a_routed_split_that_holds_gives_the_streaming_verdict() -> None:
    held: dict[str, int] = {}
    unproven: dict[str, int] = {}
    found = set()
    for n, (family, header, events) in enumerate(traces(96, seed=2811)):
        parts = 2 + n % 3
        verdict, overlapping = routed_in_parts(header, events, parts)
        want = check_trace(events, header=header)
        if overlapping is None:
            same_verdicts(verdict, want)
            held[family] = held.get(family, 0) + 1
            found |= {v.kind for v in want.all_violations()}
        else:
            unproven[family] = unproven.get(family, 0) + 1
    assert found == set(PLANTABLE)  # the routed split judged every kind where it held
    # recorder-like runs hold (those of default batches mixing keys may not): the split is not vacuous
    assert all(held.get(family, 0) >= 12 for family in ("synth", "synth-raced", "fuzz", "fuzz-raced")), held
    assert sum(unproven.values()) >= 1  # and some do not: both outcomes are exercised


def routed_results(header: TraceHeader, events: list[Any], parts: int) -> list[Any]:
    """Each part's result of a trace split by key (no fallback)."""
    given = _in_memory(events)
    return [check_routed_task(header, None, given, part, parts)[0] for part in range(parts)]


def test_with_deduplication_every_part_reads_every_receipt_and_is_exact_alone() -> None:
    """A trace with deduplication on: each part reads the other parts' publishes as receipts
    (``receipt_copy``), so the rules that compare a producer's ids across keys (stored_below_highest,
    last_sequence_id_behind, lost_write's excuse) are decided by the parts alone: no part asks for the whole
    trace, and the merged parts give the streaming verdict, every kind planted included."""
    found: set[Kind] = set()
    held = 0
    for n, (_family, header, events) in enumerate(traces(96, seed=2903)):
        if not header.deduplication:
            continue
        parts = 2 + n % 7  # up to 8: the more parts, the more copies are left out as needless
        verdict, overlapping = routed_in_parts(header, events, parts, fallback=False)
        if overlapping is not None:
            continue
        held += 1
        assert not any(needs_whole_trace(r) for r in routed_results(header, events, parts))
        want = check_trace(events, header=header)
        same_verdicts(verdict, want)
        found |= {v.kind for v in want.all_violations()}
    assert held >= 24
    assert {Kind.STORED_BELOW_HIGHEST, Kind.LOST_WRITE} <= found, found


def test_a_producers_ids_compared_across_parts() -> None:
    """The minimal shapes, each id of one producer in another part: a lower id stored after a higher one
    (stored_below_highest), a duplicate receipt excused by a higher id stored under another key (no lost_write),
    and a producer told a last sequence id below one stored under another key (last_sequence_id_behind, found by
    every part from the copied creation, counted once).  Their mirrors, in order, are valid."""
    a, b = keys_in_other_parts()

    def run(planted: bool) -> TraceBuilder:
        t = TraceBuilder(header())
        t.open("c1")
        t.publish(a, "1:0", seq=5 if planted else 0, uid="u5")
        t.publish(b, "1:1", seq=1, uid="u1")  # planted: 1 stored after 5 was
        t.publish(b, "-1:-1", seq=0 if planted else 1, uid="u0")  # a duplicate receipt: 5 (or 1) excuses it
        t.add("producer_open", topic=t.topic, producer="p", seq=2 if planted else 1, result="ok")
        for key, mid, uid in ((a, "1:0", "u5"), (b, "1:1", "u1")):
            t.receive("c1", key, mid, uid=uid)
            t.ack("c1", mid, key=key)
        t.end(drained=True)
        return t

    for planted in (True, False):
        t = run(planted)
        want = check_trace(t.events, header=t.header)
        results = routed_results(t.header, t.events, 2)
        assert not any(needs_whole_trace(r) for r in results)
        verdict, overlapping = routed_in_parts(t.header, t.events, 2, fallback=False)
        assert overlapping is None
        same_verdicts(verdict, want)
        kinds = sorted(v.kind.value for v in verdict.all_violations())
        assert kinds == (["last_sequence_id_behind", "stored_below_highest"] if planted else []), kinds
        # without the copies, the part holding key b sees neither 5 nor the producer's other ids
        blind = [r for r in results if any(v.kind is Kind.STORED_BELOW_HIGHEST for v in r.found)]
        assert len(blind) == (1 if planted else 0)


def test_a_copy_raised_past_by_a_later_one_of_its_run_is_needless() -> None:
    """Copies are maxima: of a run of receipts of one producer and partition with no row of the part's own
    reading their ids in between, only those no later copy raises past are read.  A batch's later message is
    never the reason an earlier one is left out (it raises the highest sequence id only), and every copy of a
    producer is read from the batch holding a duplicate receipt of the part's own on (each copy may excuse it by
    its send time)."""
    a, b = keys_in_other_parts()
    t = TraceBuilder(header())
    t.open("c1")
    t.publish(b, "1:0", seq=0)  # other part: needless (1 follows in the run)
    t.publish(b, "1:1", seq=1)  # read: the run's highest before the part's own publish
    t.publish(a, "1:2", seq=2)  # own: ends the run
    t.publish(b, "1:3", seq=4)  # read: nothing later in its run is higher
    t.publish(b, "1:4", seq=3)  # read: last of its run
    t.publish(a, "1:5", seq=5)  # own
    t.publish(b, "1:6", seq=6)  # read: the later copy is a batch's second message (raises one id only)
    t.publish(b, "1:7:-1:1", seq=7)  # read: last of its run
    t.publish(a, "1:8", seq=8)  # own
    t.publish(a, "-1:-1", seq=5)  # own duplicate receipt (opens the second batch): every copy of p is read
    t.publish(b, "1:9", seq=9)
    t.publish(b, "1:10", seq=10)
    t.end()
    router = KeyRouter(2, receipts=True)
    part = int(hash_strings(pa.array([a]))[0] % np.uint64(2))
    table = table_of(t.events)
    from conformance.trace.validation import BatchState, check_batch

    copies: list[int] = []
    read = []
    for batch in table.to_batches(max_chunksize=10):  # the duplicate receipt opens the second batch
        keep, receipts = router.route(batch, part, copies)
        problem, rows = check_batch(batch.filter(pa.array(keep)), BatchState())
        assert problem is None
        got = router.receipt_rows(rows, receipts[keep])
        pairs = zip(got.column("op").to_pylist(), got.column("seq").to_pylist(), strict=True)
        read += [(op, seq) for op, seq in pairs if seq is not None]
    copy, own = "receipt_copy", "publish"
    want = [(copy, 1), (own, 2), (copy, 4), (copy, 3), (own, 5), (copy, 6), (copy, 7), (own, 8), (own, 5), (copy, 9)]
    want += [(copy, 10)]
    assert read == want, read
    assert router.receipts_kept == 7


def test_equal_timestamps_change_nothing() -> None:
    """Every event at one instant: routing reads no time, and the verdict is still the whole trace's."""
    for seed in range(6):
        run = synthesize(seed, SynthConfig(messages=20, keys=4, keyed_acks=True, mixed_batch_rate=0.0),
                         plant={sorted(PLANTABLE)[seed % len(PLANTABLE)]})  # fmt: skip
        events = [dataclasses.replace(e, t=0) for e in run.events]
        verdict, overlapping = routed_in_parts(run.header, events, 2)
        assert overlapping is None
        same_verdicts(verdict, check_trace(events, header=run.header))


def test_acks_written_without_their_messages_key_overlap_and_the_plan_is_taken_at_once() -> None:
    """Acks without a key go to the empty key's part, away from their messages: the entries overlap.  The
    driver's look at the first events sees it before any task runs."""
    run = synthesize(4, SynthConfig(messages=30, keys=6, keyed_acks=False))
    _verdict, overlapping = routed_in_parts(run.header, list(run.events), 2)
    assert overlapping == "entries"
    assert not routable(table_of(run.events))
    keyed = synthesize(4, SynthConfig(messages=30, keys=6, keyed_acks=True))
    assert routable(table_of(keyed.events))


def header() -> TraceHeader:
    return TraceHeader("x", SubscriptionSpec("s"), deduplication=True)


def test_an_ack_carrying_another_key_is_an_overlap_and_merging_anyway_would_lie() -> None:
    a, b = keys_in_other_parts()
    t = TraceBuilder(header())
    t.open("c1")
    t.open("c2")
    t.publish(a, "1:0", producer="p", seq=0, uid="u0")
    t.publish(a, "1:1", producer="p", seq=1, uid="u1")
    t.receive("c1", a, "1:0", uid="u0")
    t.ack("c1", "1:0", key=b)  # the recorder wrote the wrong key
    t.receive("c2", a, "1:1", uid="u1")  # the key moves on once 1:0 is acknowledged
    t.ack("c2", "1:1", key=a)
    t.end(drained=True)
    verdict, overlapping = routed_in_parts(t.header, t.events, 2, fallback=False)
    assert overlapping == "entries"
    want = check_trace(t.events, header=t.header)
    assert want.valid and verdict.counts["key_overlap"] == 1  # its part never saw the ack: c1 held the key still


def test_a_batch_entry_of_two_keys_is_an_overlap() -> None:
    a, b = keys_in_other_parts()
    t = TraceBuilder(header())
    t.open("c1")
    t.publish(a, "1:0:-1:0", producer="p", seq=0, uid="u0")
    t.publish(b, "1:0:-1:1", producer="p", seq=1, uid="u1")  # default batching: one entry, two keys
    t.receive("c1", a, "1:0:-1:0", uid="u0")
    t.receive("c1", b, "1:0:-1:1", uid="u1")
    t.ack("c1", "1:0:-1:0", key=a)
    t.ack("c1", "1:0:-1:1", key=b)
    t.end(drained=True)
    _verdict, overlapping = routed_in_parts(t.header, t.events, 2, fallback=False)
    assert overlapping == "entries"


def test_a_sequence_resent_under_another_key_is_an_overlap_and_merging_anyway_would_miss_the_duplicate() -> None:
    a, b = keys_in_other_parts()
    t = TraceBuilder(header())
    t.open("c1")
    t.publish(a, "1:0", producer="p", seq=0, uid="u0")
    t.publish(b, "1:1", producer="p", seq=0, uid="u1")  # (p, 0) stored twice, under two keys
    for key, mid, uid in ((a, "1:0", "u0"), (b, "1:1", "u1")):
        t.receive("c1", key, mid, uid=uid)
        t.ack("c1", mid, key=key)
    t.end(drained=True)
    verdict, overlapping = routed_in_parts(t.header, t.events, 2, fallback=False)
    assert overlapping == "sequences"
    want = check_trace(t.events, header=t.header)
    assert want.counts["duplicate_publish"] == 1 and verdict.counts["duplicate_publish"] == 0


def test_a_uid_under_two_keys_is_an_overlap() -> None:
    a, b = keys_in_other_parts()
    t = TraceBuilder(header())
    t.open("c1")
    t.publish(a, "1:0", producer="p", seq=0, uid="u0")
    t.receive("c1", a, "1:0", uid="u0")
    t.ack("c1", "1:0", key=a)
    t.receive("c1", b, "1:7", uid="u0")  # a message never published carries u0's uid, under another key
    t.ack("c1", "1:7", key=b)
    t.end(drained=True)
    _verdict, overlapping = routed_in_parts(t.header, t.events, 2)
    assert overlapping == "uids"


def test_tasks_of_a_stored_trace_validate_only_their_rows_and_agree(tmp_path: Any) -> None:
    """A Parquet trace (here three chunks): each task keeps its rows straight after the read, counts the
    copies, and the parts' rows are the trace's rows, each once, with the copies in every part."""
    checked = 0
    for n, (_family, trace_header, events) in enumerate(traces(16, seed=4410)):
        path = stored_in_chunks(tmp_path / f"t{n}", trace_header, events)
        parts = 2 + n % 3
        verdict, overlapping = routed_in_parts(trace_header, events, parts, ("path", str(path)))
        in_memory, same_overlap = routed_in_parts(trace_header, events, parts)
        assert overlapping == same_overlap  # read from Parquet or sent as events: the same parts
        rows, copies = 0, [0] * parts
        for part in range(parts):
            counted: list[int] = []
            rows += sum(batch.num_rows for batch in routed_batches(open_trace(path), parts, part, counted))
            copies[part] = sum(counted)
        assert len(set(copies)) == 1 and rows == len(events) + (parts - 1) * copies[0]
        if overlapping is None:
            same_verdicts(verdict, check_trace(events, header=trace_header))
            same_verdicts(in_memory, verdict)
            checked += 1
    assert checked >= 6


def test_a_bad_row_fails_the_task_that_keeps_it(tmp_path: Any) -> None:
    """A routed task validates the rows it keeps, and every row is kept by one task or copied into all: a
    receive without its consumer fails the task of its key only; the Python engine words the problem."""
    run = synthesize(5, SynthConfig(messages=40, keys=6, keyed_acks=True))
    events = list(run.events)
    routed = KeyRouter(2).parts_of(table_of(events).to_batches()[0])
    target = next(n for n, e in enumerate(events) if e.op.value == "receive" and routed[n] == 1 and n > 20)
    events[target] = dataclasses.replace(events[target], consumer=None)
    path = stored_in_chunks(tmp_path / "bad", run.header, events)
    with pytest.raises(OwnRowsInvalid):
        list(routed_batches(open_trace(path), 2, 1, []))
    list(routed_batches(open_trace(path), 2, 0, []))  # part 0 never reads the row
    with pytest.raises(TraceFormatError):
        check_trace(path)
