"""The PySpark engine against the streaming engine: identical verdicts (violations and their texts, validity,
counts, events, notes, unjudged kinds).

The Spark engine runs the streaming checker itself over parts of each trace, so what these tests prove is the
split: that no rule sees a different trace in its part than in the whole.  Spark's fixed costs dominate tiny
traces, so each test batches many traces into one job: the differential test checks 240 generated traces
(churn, faults, several subscriptions and topic partitions, a planted violation of every kind) in one, in
Spark's workers (``tests/unit/test_spark_split.py`` checks the same split task by task without Spark, in one
pass and in two).  The hand-written traces also go through the DataFrame path (``check_frames``: Spark reads
the stored files, windows route the rows), which a URI only Spark reads takes.
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from typing import Any

import pytest
from batch_traces import mixed_batch_traces, second_subscription_failover
from exemption_traces import gapped_id_stored
from trace_synth import PLANTABLE, SynthConfig, fuzz, synthesize

from conformance.checks import Kind, check_trace
from conformance.spark import check_frames, check_many
from conformance.spark.load import events_frame, source_frame
from conformance.trace import SelectorSpec, SubscriptionSpec, TraceHeader
from conformance.trace.builder import TraceBuilder
from conformance.trace.parquet import write_parquet
from conformance.trace.reader import open_trace

pytestmark = pytest.mark.spark


def hand_written() -> list[TraceBuilder]:
    """Every kind once, and the tricky clean cases."""
    cases = []
    b = TraceBuilder()  # key_overlap + out_of_order
    b.open("c1"), b.open("c2"), b.publish("k", "1:0"), b.publish("k", "1:1")
    b.receive("c1", "k", "1:0"), b.receive("c2", "k", "1:1"), b.ack("c1", "1:0"), b.ack("c2", "1:1"), b.end()
    cases.append(b)
    b = TraceBuilder()  # reorder after nack: clean
    b.open("c1"), b.publish("k", "1:0"), b.publish("k", "1:1"), b.receive("c1", "k", "1:0"), b.nack("c1", "1:0")
    b.receive("c1", "k", "1:1"), b.receive("c1", "k", "1:0"), b.ack("c1", "1:0"), b.ack("c1", "1:1"), b.end()
    cases.append(b)
    for right_order in (True, False):  # redelivery after close
        b = TraceBuilder()
        b.open("c1"), b.open("c2"), b.publish("k", "1:0"), b.publish("k", "1:1"), b.receive("c1", "k", "1:0")
        b.close("c1")
        order = ("1:0", "1:1") if right_order else ("1:1", "1:0")
        for m in order:
            b.receive("c2", "k", m)
        b.ack("c2", "1:0"), b.ack("c2", "1:1"), b.end()
        cases.append(b)
    b = TraceBuilder()  # receive logged before its publish receipt: clean
    b.open("c1"), b.receive("c1", "k", "1:0"), b.ack("c1", "1:0"), b.publish("k", "1:0"), b.end()
    cases.append(b)
    b = TraceBuilder()  # a crash releases; never redelivered: undelivered
    b.open("c1"), b.open("c2"), b.publish("k", "1:0"), b.receive("c1", "k", "1:0"), b.crash("c1"), b.end()
    cases.append(b)
    b = TraceBuilder()  # redelivered after ack
    b.open("c1"), b.publish("k", "1:0"), b.receive("c1", "k", "1:0"), b.ack("c1", "1:0")
    b.receive("c1", "k", "1:0"), b.ack("c1", "1:0"), b.end()
    cases.append(b)
    dedup = TraceHeader("x", SubscriptionSpec("s"), deduplication=True)
    b = TraceBuilder(dedup)  # duplicate publish, a -1:-1 resend, an unexpected message
    b.open("c1"), b.publish("k", "1:0", seq=0, uid="a"), b.publish("k", "-1:-1", seq=0, uid="a")
    b.publish("k", "1:1", seq=0, uid="a"), b.receive("c1", "k", "1:0", uid="a"), b.receive("c1", "k", "1:1", uid="a")
    b.ack("c1", "1:0"), b.ack("c1", "1:1"), b.receive("c1", "g", "1:5", uid="ghost"), b.ack("c1", "1:5"), b.end()
    cases.append(b)
    assign = TraceHeader("x", SubscriptionSpec("s"), selector=SelectorSpec("auto-split", "4.0"))
    b = TraceBuilder(assign)  # misassigned (some of these keys belong to c2)
    b.open("c1"), b.open("c2")
    for n in range(6):
        b.publish(f"k{n}", f"1:{n}"), b.receive("c1", f"k{n}", f"1:{n}"), b.ack("c1", f"1:{n}")
    b.end()
    cases.append(b)
    # misassigned with no lower bound (each receive logged before its publish receipt): c1 never owned c2's half
    b = TraceBuilder(assign)
    b.open("c2"), b.open("c1")
    for n in range(6):
        b.receive("c1", f"k{n}", f"1:{n}"), b.publish(f"k{n}", f"1:{n}"), b.ack("c1", f"1:{n}")
    b.end()
    cases.append(b)
    b = TraceBuilder()  # a second ack does not disarm the first: redelivered_after_ack (issue 11)
    b.open("c1"), b.publish("k", "1:0"), b.receive("c1", "k", "1:0"), b.ack("c1", "1:0"), b.ack("c1", "1:0")
    b.receive("c1", "k", "1:0"), b.ack("c1", "1:0"), b.end()
    cases.append(b)
    for acked in (True, False):  # an ack by a non-holder, then a copy in flight: clean only with the ack
        b = TraceBuilder()
        b.open("c2"), b.publish("k0", "1:1"), b.open("c1")
        if acked:
            b.ack("c2", "1:1")
        b.receive("c1", "k0", "1:1"), b.fault("broker_restart"), b.publish("k0", "1:2"), b.receive("c1", "k0", "1:2")
        b.end()
        cases.append(b)
    for named in (["c2"], ["c1"]):  # a fault naming c2 does not release c1's hold
        b = TraceBuilder()
        b.open("c1"), b.open("c2"), b.publish("k", "1:0"), b.publish("k", "1:1"), b.receive("c1", "k", "1:0")
        b.ack("c1", "1:0"), b.receive("c1", "k", "1:0"), b.add("fault", fault="client_reconnect", consumers=named)
        b.receive("c2", "k", "1:1"), b.ack("c2", "1:1"), b.end()
        cases.append(b)
    b = TraceBuilder(step=0)  # one timestamp for every event: the publish is still owed (undelivered)
    b.open("c1"), b.publish("k", "1:0", t0=b.t), b.end()
    cases.append(b)
    b = TraceBuilder(dedup)  # lost_write: a duplicate receipt for a sequence never stored
    b.open("c1"), b.publish("k", "-1:-1", seq=0, uid="u0"), b.end()
    cases.append(b)
    b = TraceBuilder()  # redelivered after ack, on a key with the scope separator in it
    b.open("c1"), b.publish("a\x1fb", "1:0"), b.receive("c1", "a\x1fb", "1:0"), b.ack("c1", "1:0")
    b.receive("c1", "a\x1fb", "1:0"), b.ack("c1", "1:0"), b.end()
    cases.append(b)
    sticky = TraceHeader("x", SubscriptionSpec("s", key_shared_mode="STICKY"), selector=SelectorSpec("sticky", "4.0"))
    b = TraceBuilder(sticky)  # an open Pulsar refuses, accepted after a fault: not judged, clean
    b.open("c1", policy={"sticky_ranges": [[0, 65535]]}), b.fault()
    b.open("c2", policy={"sticky_ranges": [[0, 65535]]}), b.end()
    cases.append(b)
    for late in ("1:0", "1:2"):  # a late copy of an acked message holds no key; a pending one overlaps
        b = TraceBuilder()
        b.open("c1"), b.open("c2"), b.publish("k", "1:0"), b.publish("k", "1:1"), b.publish("k", "1:2")
        b.receive("c1", "k", "1:0"), b.ack("c1", "1:0"), b.fault("client_reconnect"), b.receive("c2", "k", late)
        b.receive("c1", "k", "1:1"), b.ack("c1", "1:1"), b.ack("c2", late), b.receive("c1", "k", "1:2")
        b.ack("c1", "1:2"), b.end()
        cases.append(b)
    for acked in (2, 3):  # a batch delivered whole again: clean if partly acknowledged, else one finding
        b = TraceBuilder()
        batch = [f"1:5:-1:{n}" for n in range(3)]
        b.open("c1"), b.open("c2")
        for msg in batch:
            b.publish("k", msg), b.receive("c1", "k", msg)
        for msg in batch[:acked]:
            b.ack("c1", msg)
        b.close("c1")
        for msg in batch:
            b.receive("c2", "k", msg), b.ack("c2", msg)
        b.end()
        cases.append(b)
    cases.extend(b for _name, b, _want in mixed_batch_traces())  # default batches mixing keys: one key per entry
    cases.extend(second_subscription_failover(dropped) for dropped in (True, False))
    cases.append(gapped_id_stored())  # stored_below_highest
    return cases


def same_verdicts(spark_verdict: Any, python_verdict: Any) -> None:
    assert spark_verdict.identities() == python_verdict.identities()
    assert spark_verdict.validity == python_verdict.validity
    assert spark_verdict.counts == python_verdict.counts
    assert spark_verdict.events == python_verdict.events
    assert spark_verdict.notes == python_verdict.notes
    assert spark_verdict.unjudged == python_verdict.unjudged
    assert spark_verdict.engine == "spark"
    texts = sorted((v.identity(), v.explanation) for v in spark_verdict.all_violations())
    assert texts == sorted((v.identity(), v.explanation) for v in python_verdict.all_violations())


def test_hand_written_traces_and_stored_files(spark: Any, tmp_path: Path) -> None:
    cases = hand_written()
    python = [check_trace(b.events, header=b.header) for b in cases]
    assert {v.kind for verdict in python for v in verdict.all_violations()} == set(PLANTABLE)  # the others: own tests
    assert [verdict.all_violations() == () for verdict in python][1:5] == [True, True, False, True]
    # the same traces again, stored: read by Spark itself (JSON Lines, gzip, Parquet)
    stored = [  # one file per format, of three different traces
        cases[0].write(tmp_path / "t0.jsonl"),
        cases[3].write(tmp_path / "t3.jsonl.gz"),
        write_parquet(tmp_path / "t7.parquet", cases[7].header, cases[7].events),
    ]
    origin = [0, 3, 7]
    frame = events_frame(spark, list(enumerate(b.events for b in cases)))
    headers = {n: b.header for n, b in enumerate(cases)}
    for k, path in enumerate(stored):
        tid = len(cases) + k
        frame = frame.unionByName(source_frame(spark, open_trace(path), tid), allowMissingColumns=True)
        headers[tid] = cases[origin[k]].header
    verdicts = check_frames(spark, frame, headers)
    for n, verdict in enumerate(python):
        same_verdicts(verdicts[n], verdict)
    for k in range(len(stored)):
        same_verdicts(verdicts[len(cases) + k], python[origin[k]])


def test_an_end_naming_unreachable_consumers_is_judged_alike_in_every_form(spark: Any, tmp_path: Path) -> None:
    """``end`` with ``unreachable`` (a list, written when the drain could not reach a consumer) and
    ``drained: false``: the tasks' path (JSON Lines, Parquet, a chunk directory whose last chunk alone has the
    column) and the DataFrame path give the Python verdict; its drained twin is judged ``undelivered``."""
    from small_traces import cut_off_at_the_end

    from conformance.spark.load import path_frame
    from conformance.trace.chunks import ChunkWriter

    cases = []
    for drained in (False, True):
        b = cut_off_at_the_end(drained=drained)
        out = tmp_path / f"drained-{drained}"
        jsonl = b.write(out / "t.jsonl")
        chunks = ChunkWriter(out / "chunks", b.header, rows=3)
        for event in b.events:
            chunks.append(event)
        chunks.close()
        stored = (jsonl, write_parquet(out / "t.parquet", b.header, b.events), out / "chunks")
        cases.append((check_trace(b.events, header=b.header), stored))
    for python, stored in cases:
        for path in stored:
            same_verdicts(check_trace(path, engine="spark", spark=spark), python)
        frame, header = path_frame(spark, str(stored[2]))  # as for a URI only Spark reads
        same_verdicts(check_frames(spark, frame, {0: header})[0], python)
    kinds = [(python.validity.value, [v.kind for v in python.violations]) for python, _ in cases]
    assert kinds == [("unknown", []), ("invalid", [Kind.UNDELIVERED])]


def test_an_empty_trace_beside_others(spark: Any) -> None:
    b = TraceBuilder()
    b.open("c1"), b.publish("k", "1:0"), b.receive("c1", "k", "1:0"), b.ack("c1", "1:0"), b.end()
    empty = TraceBuilder()
    verdicts = check_many(spark, [(empty.header, []), (b.header, b.events)], parts=2)
    same_verdicts(verdicts[0], check_trace([], header=empty.header))
    same_verdicts(verdicts[1], check_trace(b.events, header=b.header))


def test_a_job_where_no_trace_names_a_selector(spark: Any) -> None:
    """misassigned judged nowhere: the job still runs (it once failed resolving the suspects' columns)."""
    b = TraceBuilder()
    b.open("c1"), b.publish("k", "1:0"), b.receive("c1", "k", "1:0"), b.ack("c1", "1:0")
    b.receive("c1", "k", "1:0"), b.ack("c1", "1:0"), b.end()
    (verdict,) = check_many(spark, [(b.header, b.events)])
    same_verdicts(verdict, check_trace(b.events, header=b.header))
    assert verdict.counts["redelivered_after_ack"] == 1


def second_subscription(run: Any) -> tuple[TraceHeader, list[Any]]:
    """The run with a second subscription ``s2`` whose consumers (``x<name>``) do what the first's do, right
    after them: every event about a consumer is repeated for its twin (a new ``i`` for every event)."""
    events: list[Any] = []
    for event in run.events:
        copies = [event]
        if event.consumer is not None:
            extra = dict(event.extra)
            if "name" in extra:
                extra["name"] = "x" + str(extra["name"])
            sub = "s2" if event.op.value == "open" else event.subscription
            copies.append(dataclasses.replace(event, consumer="x" + event.consumer, subscription=sub, extra=extra))
        for copy in copies:
            events.append(dataclasses.replace(copy, i=len(events)))
    return run.header, events


def _answered_as_duplicate(events: list[Any]) -> bool:
    """Whether a publish of the trace was answered ``-1:-1`` (a duplicate): the evidence of a ``lost_write``."""
    return any(e.op.value == "publish" and str(e.msg_id or "").startswith("-1:-1") for e in events)


def generated(n: int, seed: int) -> list[tuple[TraceHeader, list[Any]]]:
    """``n`` traces: synthesized runs (churn, topic partitions, faults, a planted violation of each kind in
    turn, some with a second subscription, one in eight with default batches mixing keys) and fuzzed ones (any
    op in any order, two subscriptions); in half of each, acks carry their message's key (as this project's
    recorders write them: the engine splits those by key), in the other half none (split by the plan)."""
    rnd = random.Random(seed)
    kinds = sorted(PLANTABLE)
    out = []
    for k in range(n):
        s = rnd.randrange(2**32)
        if k % 4 == 3:
            run = fuzz(s, faults=k % 8 == 3, selector=None if k % 12 == 7 else "auto-split", keyed_acks=k % 16 < 8)
            out.append((run.header, list(run.events)))
            continue
        cfg = SynthConfig(
            partitions=k % 3,
            messages=20,
            keys=3 + k % 4,
            fault_rate=0.03 if k % 5 == 0 else 0.0,
            churn=0.1,
            mixed_batch_rate=0.5 if k % 8 == 1 else 0.0,  # default batches mixing keys: checked whole
            keyed_acks=k % 16 < 8,
            deduplication=k % 3 != 1,  # a third without it: split, not checked whole (see the test below)
        )
        run = synthesize(s, cfg, plant=set() if k % 9 == 0 else {kinds[k % len(kinds)]})
        out.append(second_subscription(run) if k % 2 == 0 else (run.header, list(run.events)))
    return out


def test_both_engines_agree_on_240_generated_traces(spark: Any) -> None:
    """One job for all of them (three parts per trace), each verdict equal to the streaming engine's."""
    traces = generated(240, seed=20251125)
    whole: list[int] = []
    routed: list[int] = []
    verdicts = check_many(spark, traces, parts=3, whole=whole, routed=routed)
    # only fuzzed traces (a uid published with two (producer, seq)), batches mixing keys, traces where a part
    # found a lost_write (a -1:-1 receipt another part's send may excuse: checked again in one part), and traces
    # with deduplication on (stored_below_highest and last_sequence_id_behind compare a producer's ids, which the
    # identity pass splits apart) go whole
    assert all(
        n % 4 == 3 or n % 8 == 1 or _answered_as_duplicate(traces[n][1]) or traces[n][0].deduplication for n in whole
    )
    assert sum(not traces[n][0].deduplication for n in whole) < 60
    # split by key: most traces whose acks carry their key, no other (the rest took the plan)
    assert all(n % 16 < 8 for n in routed) and len(routed) > 80
    found: set[Kind] = set()
    found_routed: set[Kind] = set()
    invalid = 0
    for n, ((header, events), verdict) in enumerate(zip(traces, verdicts, strict=True)):
        python = check_trace(events, header=header)
        same_verdicts(verdict, python)
        found |= {v.kind for v in python.all_violations()}
        if n in routed:
            found_routed |= {v.kind for v in python.all_violations()}
        invalid += not python.valid
    assert found == found_routed == set(PLANTABLE)  # every plantable kind planted and found, both splits too
    assert 40 < invalid < 230  # clean traces and violating ones


def test_the_split_spreads_keys_and_copies_membership(spark: Any) -> None:
    """The scope pass puts each key's messages in one part and copies membership everywhere; the identity pass
    sends a uid's receives where its publishes are."""
    from conformance.spark.route import routed

    run = synthesize(7, SynthConfig(partitions=2, messages=60, keys=8))
    rows = routed(events_frame(spark, [(0, run.events)]), 4).toPandas()
    scope = rows[rows["pass"] == 0]
    messages = scope[scope["op"].isin(["publish", "receive", "ack", "nack"])]
    assert messages.groupby("msg_id")["part"].nunique().max() == 1  # a message in one part
    assert messages.groupby("key")["part"].nunique().max() == 1  # a key in one part
    assert messages["part"].nunique() > 1  # and the keys spread over the parts
    cross = scope[scope["op"].isin(["open", "close", "crash", "redeliver", "fault", "end"])]
    assert (cross.groupby("i")["part"].nunique() == 4).all()  # copied into every part
    assert (cross.groupby("i")["own"].sum() == 1).all()  # counted once
    assert scope["uid"].isna().all() and scope["producer"].isna().all()
    identity = rows[rows["pass"] == 1]
    assert identity.groupby("uid")["part"].nunique().max() == 1
    assert not rows["mixed"].any()


def test_a_message_whose_receive_names_another_key_is_checked_whole(spark: Any) -> None:
    """A split by key cannot hold a message with two keys: the engine checks that trace in one part."""
    b = TraceBuilder()
    b.open("c1"), b.open("c2")
    for n in range(6):
        b.publish(f"k{n}", f"1:{n}")
    b.receive("c1", "k0", "1:0"), b.receive("c2", "k3", "1:1")  # 1:1 was published under k1
    b.receive("c2", "k3", "1:3"), b.receive("c1", "k1", "1:2")
    for n in range(4):
        b.ack("c1" if n in (0, 2) else "c2", f"1:{n}")
    b.end(drained=False)
    whole: list[int] = []
    (verdict,) = check_many(spark, [(b.header, b.events)], parts=4, whole=whole)
    assert whole == [0]
    python = check_trace(b.events, header=b.header)
    same_verdicts(verdict, python)
    assert any("carried a key other than" in note for note in python.notes)


def test_a_uid_published_by_two_producers_is_checked_whole(spark: Any) -> None:
    dedup = TraceHeader("x", SubscriptionSpec("s"), deduplication=True)
    b = TraceBuilder(dedup)
    b.open("c1"), b.publish("k", "1:0", producer="p1", seq=0, uid="a")
    b.publish("k", "1:1", producer="p2", seq=0, uid="a"), b.publish("j", "1:2", producer="p1", seq=0, uid="b")
    for m, k in (("1:0", "k"), ("1:1", "k"), ("1:2", "j")):
        b.receive("c1", k, m, uid="a"), b.ack("c1", m)
    b.end()
    whole: list[int] = []
    (verdict,) = check_many(spark, [(b.header, b.events)], parts=4, whole=whole)
    assert whole == [0]
    same_verdicts(verdict, check_trace(b.events, header=b.header))
    assert verdict.counts["duplicate_publish"] >= 1


def test_a_malformed_trace_fails_with_the_readers_error_while_spark_checks(spark: Any, tmp_path: Path) -> None:
    """Validation runs beside the Spark job; its error (file, row, problem) is what the caller sees."""
    from conformance.checks import TraceFormatError
    from conformance.spark import check_with_spark

    run = synthesize(3, SynthConfig(messages=30))
    events = list(run.events)
    events[10], events[11] = events[11], events[10]  # 'i' goes down at row 11
    path = write_parquet(tmp_path / "bad.parquet", run.header, events)
    with pytest.raises(TraceFormatError, match=r"bad\.parquet:row 11: .*'i' must increase"):
        check_with_spark(open_trace(path), spark=spark, parts=2)
    assert check_many(spark, [(run.header, list(run.events))], parts=2)[0].events == len(events)  # still usable


def _jsonl(path: Path, header: TraceHeader, events: list[Any]) -> Path:
    path.write_text("\n".join([header.to_json(), *(e.to_json() for e in events)]) + "\n", encoding="utf-8")
    return path


def test_a_malformed_trace_only_spark_reads_fails_with_one_line(spark: Any, tmp_path: Path) -> None:
    """The DataFrame path (a URI only Spark reads): the reader never sees the file, so each part validates its
    events as the reader validates a batch; a problem in any part is a TraceFormatError naming the trace, the
    events and the problem, while the same file unbroken gives the Python verdict."""
    from conformance.checks import TraceFormatError
    from conformance.spark.load import path_frame

    run = synthesize(7, SynthConfig(messages=40, keys=6))
    events = list(run.events)
    good = write_parquet(tmp_path / "good.parquet", run.header, events)
    frame, header = path_frame(spark, str(good))
    same_verdicts(check_frames(spark, frame, {0: header}, parts=2)[0], check_trace(good))
    rewound = list(events)  # (Spark keeps no file order: each part sorts its events by 'i', so a time going back)
    rewound[30] = dataclasses.replace(events[30], t=events[0].t - 1)
    receive = next(n for n, e in enumerate(events) if e.op.value == "receive" and n > 20)
    keyless = list(events)
    keyless[receive] = dataclasses.replace(events[receive], consumer=None)
    cases = [
        (write_parquet(tmp_path / "rewound.parquet", run.header, rewound), "t decreasing"),
        (_jsonl(tmp_path / "keyless.jsonl", run.header, keyless), "missing consumer"),
    ]
    for path, problem in cases:
        frame, header = path_frame(spark, str(path), run.header)
        with pytest.raises(TraceFormatError) as caught:
            check_frames(spark, frame, {0: header}, parts=2, names={0: "s3a://bucket/run"})
        message = str(caught.value)
        assert message.startswith("s3a://bucket/run:events i=") and message.endswith(f"{problem} (as Spark read it)")
        assert "\n" not in message


def test_a_bad_row_only_part_1_reads_fails_with_the_readers_error(spark: Any, tmp_path: Path) -> None:
    """Each task validates only its own rows: a receive of part 1's key without a consumer fails part 1's task,
    and the caller gets the Python engine's one-line error (file, row, problem)."""
    from conformance.checks import TraceFormatError
    from conformance.spark import check_with_spark
    from conformance.spark.engine import plan_trace

    run = synthesize(5, SynthConfig(messages=40, keys=6))
    events = list(run.events)
    path = write_parquet(tmp_path / "good.parquet", run.header, events)
    plan = plan_trace(open_trace(path), 2)
    assert plan is not None
    target = next(n for n, e in enumerate(events) if e.op.value == "receive" and plan.scope[n] == 1 and n > 20)
    events[target] = dataclasses.replace(events[target], consumer=None)
    path = write_parquet(tmp_path / "bad.parquet", run.header, events)
    with pytest.raises(TraceFormatError) as python_engine:
        check_trace(path)
    assert f"row {target}: receive" in str(python_engine.value)
    with pytest.raises(TraceFormatError) as on_spark:
        check_with_spark(open_trace(path), spark=spark, parts=2)
    assert str(on_spark.value) == str(python_engine.value)


def test_warm_workers_start_the_python_workers_the_next_job_uses(spark: Any, tmp_path: Path) -> None:
    """``keyshared check`` on a large trace starts Spark's Python workers while its plan is still being made
    (:func:`~conformance.spark.engine.warm_workers`); the check's own job then runs on them and agrees."""
    from conformance.spark import check_with_spark
    from conformance.spark.engine import plan_trace, warm_workers

    run = synthesize(6, SynthConfig(messages=40, keys=6))
    path = write_parquet(tmp_path / "t.parquet", run.header, list(run.events))
    warm_workers(spark, 2)
    verdict = check_with_spark(open_trace(path), spark=spark, parts=2, plan=plan_trace(open_trace(path), 2))
    same = check_trace(path)
    assert (verdict.valid, verdict.events, verdict.counts) == (same.valid, same.events, same.counts)


def test_the_sessions_python_workers_allocate_through_the_c_library(spark: Any) -> None:
    """``session_config`` hands the workers ``ARROW_DEFAULT_MEMORY_POOL=system`` (``conformance.spark.arrow_pool``):
    what a task's pyarrow really uses, asked in the task."""

    def pools(_rows: Any) -> Any:
        import pyarrow as pa

        yield pa.default_memory_pool().backend_name

    assert spark.sparkContext.parallelize(range(2), 2).mapPartitions(pools).collect() == ["system", "system"]
