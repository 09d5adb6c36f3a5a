"""The bucketed layout (trace format 2, :mod:`conformance.trace.buckets`) and the Python engine checking it bucket
by bucket (:mod:`conformance.checks.buckets`): the verdict is the streaming engine's on the original trace, in
several bucket counts, both ways (planted faults found, clean traces valid); bad input is one line, exit 2."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from part_checks import same_verdicts
from trace_synth import PLANTABLE, SynthConfig, fuzz, synthesize

from conformance.checks import check_trace
from conformance.trace import SubscriptionSpec, TraceHeader
from conformance.trace.buckets import convert_to_buckets
from conformance.trace.builder import TraceBuilder
from conformance.trace.parquet import write_parquet
from conformance.trace.reader import open_trace
from conformance.trace.validation import TraceFormatError
from conformance.verdict import Validity
from conformance.violations import Kind
from pytest_keyshared.cli import main

DATA = Path(__file__).parent.parent / "quality" / "data"


def bucketed(
    tmp: Path, header: TraceHeader, events: list[Any], buckets: int, name: str = "t", *, by_producer: bool = False
) -> Path:
    flat = write_parquet(tmp / f"{name}.parquet", header, events)
    out = tmp / f"{name}-{buckets}{'-p' if by_producer else ''}"
    convert_to_buckets(flat, out, buckets, by_producer=by_producer)
    return out


def test_bucketed_traces_give_the_streaming_verdict(tmp_path: Path) -> None:
    rnd = random.Random(2711)
    kinds = sorted(PLANTABLE)
    found: set[Any] = set()
    splits: set[str] = set()
    for k in range(27):
        s = rnd.randrange(2**32)
        if k % 4 == 3:
            run = fuzz(s, faults=k % 8 == 3, selector="auto-split")
        else:
            cfg = SynthConfig(partitions=k % 3, messages=20, keys=3 + k % 4, fault_rate=0.03 * (k % 5 == 0), churn=0.1)
            run = synthesize(s, cfg, plant={kinds[k % len(kinds)]})
        events = list(run.events)
        want = check_trace(events, header=run.header)
        found |= {v.kind for v in want.all_violations()}
        for buckets in (1, 2 + k % 4):
            got = check_trace(bucketed(tmp_path, run.header, events, buckets, f"t{k}"))
            same_verdicts(got, want)
            splits.add(got.extra["split"])
    assert found == set(PLANTABLE)
    assert {"bucket", "whole"} <= splits


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_clean_trace_stays_valid_in_buckets(tmp_path: Path, seed: int) -> None:
    run = synthesize(seed, SynthConfig(partitions=2, messages=60, keys=8, churn=0.1))
    assert check_trace(list(run.events), header=run.header).validity is Validity.VALID
    for buckets in (2, 5):
        got = check_trace(bucketed(tmp_path, run.header, list(run.events), buckets, f"c{seed}"))
        assert got.validity is Validity.VALID, got.all_violations()


@pytest.mark.parametrize("stored", sorted(p.name for p in DATA.glob("*.jsonl.gz")))
def test_stored_traces_give_the_same_verdict_in_buckets(tmp_path: Path, stored: str) -> None:
    want = check_trace(DATA / stored)
    for buckets in (2, 4, 7):
        out = tmp_path / f"b{buckets}"
        layout = convert_to_buckets(DATA / stored, out, buckets)
        assert layout.events == want.events
        same_verdicts(check_trace(out), want)


def test_each_bucket_holds_its_keys_and_the_shared_part_the_cross_key_events(tmp_path: Path) -> None:
    run = synthesize(7, SynthConfig(partitions=2, messages=60, keys=8))
    out = bucketed(tmp_path, run.header, list(run.events), 3)
    layout = open_trace(out).layout
    shared_ops = set(pq.read_table(layout.shared_path, columns=["op"]).column("op").to_pylist())
    assert shared_ops and not shared_ops & {"publish", "receive", "ack", "nack"}
    seen: dict[str, int] = {}
    for n in range(3):
        rows = pq.read_table(layout.bucket_path(n), columns=["op", "msg_id"]).to_pylist()
        assert {r["op"] for r in rows} <= {"publish", "receive", "ack", "nack"}
        for r in rows:  # every event of a message (acks too) in one bucket
            if r["msg_id"]:
                assert seen.setdefault(r["msg_id"].split(":")[1], n) == n
        if not layout.one_pass:
            identity = pq.read_table(layout.identity_path(n), columns=["op"]).column("op").to_pylist()
            assert set(identity) <= {"publish", "receive"}
        if layout.receipts:  # only other buckets' publishes (a one-pass scope pass reads the creations as shared)
            receipts = pq.read_table(layout.receipts_path(n), columns=["op", "msg_id"]).to_pylist()
            assert {r["op"] for r in receipts} <= ({"publish"} if layout.one_pass else {"publish", "producer_open"})
            assert all(seen.get(r["msg_id"].split(":")[1], -1) != n for r in receipts if r["op"] == "publish")
    assert layout.shared + sum(layout.bucket_events) == len(run.events)
    assert layout.one_pass and layout.receipts and not (out / "identity-0000.parquet").exists()


def test_a_split_that_cannot_hold_is_checked_whole(tmp_path: Path) -> None:
    dedup = TraceHeader("x", SubscriptionSpec("s"), deduplication=True)
    b = TraceBuilder(dedup)
    b.open("c1"), b.publish("k", "1:0", producer="p1", seq=0, uid="a")
    b.publish("k", "1:1", producer="p2", seq=0, uid="a"), b.end()
    out = bucketed(tmp_path, b.header, b.events, 4)
    assert not open_trace(out).layout.exact
    got = check_trace(out)
    assert got.extra["split"] == "whole"
    same_verdicts(got, check_trace(b.events, header=b.header))


def test_a_lost_write_excused_in_another_bucket_is_judged_whole(tmp_path: Path) -> None:
    from exemption_traces import gapped_sequence, lost_write_above_the_highest

    for b, kinds in ((gapped_sequence(), []), (lost_write_above_the_highest(), ["lost_write"])):
        for buckets in (2, 3, 4):
            got = check_trace(bucketed(tmp_path, b.header, b.events, buckets, f"{len(kinds)}-{buckets}"))
            assert [v.kind.value for v in got.violations] == kinds
            same_verdicts(got, check_trace(b.events, header=b.header))


def test_convert_and_check_on_the_command_line(tmp_path: Path, capsys: Any) -> None:
    run = synthesize(4, SynthConfig(messages=30, keys=5), plant={sorted(PLANTABLE)[0]})
    flat = write_parquet(tmp_path / "t.parquet", run.header, list(run.events))
    assert main(["convert", str(flat), str(tmp_path / "b"), "--buckets", "3"]) == 0
    assert "in 3 buckets" in capsys.readouterr().out
    assert main(["check", str(flat), "--json"]) == main(["check", str(tmp_path / "b"), "--json"]) == 1
    flat_out, bucket_out = capsys.readouterr().out.strip().splitlines()
    assert json.loads(flat_out)["violations"] == json.loads(bucket_out)["violations"]
    assert main(["convert", str(flat), str(tmp_path / "b"), "--buckets", "3"]) == 2  # not an empty directory
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not an empty directory" in err


@pytest.mark.parametrize(
    "change, words",
    [
        (lambda m: m.update(buckets=5), "'bucket_events' is not a list of 5 counts"),
        (lambda m: m.update(layout="flat"), "layout 'flat'"),
        (lambda m: m.update(events=1), "not the shared events plus every bucket's"),
        (lambda m: m.pop("header"), "'header' is not a JSON object"),
        (lambda m: m.update(exact="yes"), "'exact' is 'yes'"),
        (lambda m: m.update(identity_by="seq"), "'identity_by' is 'seq', not 'producer' or 'producer_seq'"),
    ],
)
def test_a_malformed_manifest_is_one_line(tmp_path: Path, capsys: Any, change: Any, words: str) -> None:
    run = synthesize(4, SynthConfig(messages=10, keys=3))
    out = bucketed(tmp_path, run.header, list(run.events), 2)
    manifest = json.loads((out / "manifest.json").read_text())
    change(manifest)
    (out / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(TraceFormatError, match=r"manifest\.json"):
        open_trace(out)
    assert main(["check", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and words in err, err


def test_a_bucket_out_of_order_is_one_line(tmp_path: Path, capsys: Any) -> None:
    run = synthesize(4, SynthConfig(messages=20, keys=3))
    out = bucketed(tmp_path, run.header, list(run.events), 2)
    path = out / "bucket-0001.parquet"
    table = pq.read_table(path)
    pq.write_table(table.take(list(reversed(range(table.num_rows)))), path)  # its own rows, i going back
    assert main(["check", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "bucket-0001.parquet" in err and "out of order" in err, err


@pytest.mark.parametrize("answer", [5, 2])
def test_a_producers_answered_sequence_id_is_judged_in_buckets(tmp_path: Path, answer: int) -> None:
    from exemption_traces import gapped_id_stored, producer_answered

    for k, b in enumerate((producer_answered(answer), gapped_id_stored())):
        want = check_trace(b.events, header=b.header)
        for buckets in (2, 3):
            same_verdicts(check_trace(bucketed(tmp_path, b.header, b.events, buckets, f"p{k}-{buckets}")), want)


def test_deduplication_traces_are_judged_bucket_by_bucket(tmp_path: Path) -> None:
    """With deduplication on, each bucket's identity pass reads, beside its own evidence (split by ``(producer,
    seq)``, spread evenly whatever the producers), its receipts file: the other buckets' publishes it needs and
    every producer's creation.  The rules that compare a producer's ids (``lost_write``, ``stored_below_highest``,
    ``last_sequence_id_behind``) are then decided bucket by bucket, with the whole trace's verdict, both ways;
    the earlier layout split by producer (``identity_by: producer``) still reads so; a manifest without
    ``identity_by`` nor receipts (the first layouts) is checked whole, as before."""
    from exemption_traces import gapped_id_stored, gapped_sequence, lost_write_above_the_highest, producer_answered

    dedup = [Kind.LOST_WRITE, Kind.STORED_BELOW_HIGHEST, Kind.DUPLICATE_PUBLISH]
    cases = [(b.header, b.events) for b in (gapped_sequence(), lost_write_above_the_highest(), gapped_id_stored())]
    cases += [(b.header, b.events) for b in (producer_answered(5), producer_answered(2))]
    for k in range(12):
        run = synthesize(900 + k, SynthConfig(producers=1 + k % 3, messages=40, keys=6), plant={dedup[k % 3]})
        cases.append((run.header, list(run.events)))
    found: set[Kind] = set()
    by_bucket = 0
    for k, (header, events) in enumerate(cases):
        assert header.deduplication
        want = check_trace(events, header=header)
        found |= {v.kind for v in want.violations}
        for buckets, by_producer in ((2, False), (3, False), (4, False), (3, True)):
            out = bucketed(tmp_path, header, events, buckets, f"d{k}", by_producer=by_producer)
            got = check_trace(out)
            same_verdicts(got, want)
            layout = open_trace(out).layout
            assert layout.identity_by == ("producer" if by_producer else "producer_seq")
            assert layout.receipts is not by_producer
            if layout.exact:
                assert got.extra["split"] == "bucket", (k, buckets)
                by_bucket += 1
    assert by_bucket >= 2 * len(cases)  # default batches of several keys make some splits inexact
    assert {Kind.LOST_WRITE, Kind.STORED_BELOW_HIGHEST, Kind.LAST_SEQUENCE_ID_BEHIND} <= found
    off = synthesize(950, SynthConfig(messages=20, keys=4, deduplication=False))  # spread by (producer, seq)
    layout = open_trace(bucketed(tmp_path, off.header, list(off.events), 2, "off")).layout
    assert layout.identity_by == "producer_seq" and not layout.receipts
    b = gapped_id_stored()
    out = bucketed(tmp_path, b.header, b.events, 3, "old")
    manifest = json.loads((out / "manifest.json").read_text())
    for name in ("identity_by", "receipts", "receipt_events"):
        del manifest[name]
    (out / "manifest.json").write_text(json.dumps(manifest))
    got = check_trace(out)
    assert got.extra["split"] == "whole"
    same_verdicts(got, check_trace(b.events, header=b.header))


def test_a_single_producers_receipts_stay_near_its_publishes(tmp_path: Path) -> None:
    """One producer, deduplication on, 8 buckets: its identity evidence spreads over every bucket (none holds
    more than a third of it), and all buckets' receipts together stay near the trace's publishes (about one copy
    per run of other buckets' publishes in each topic partition) rather than every bucket reading every other's
    (7 times as many)."""
    run = synthesize(77, SynthConfig(producers=1, messages=400, keys=40, partitions=0))
    events = list(run.events)
    layout = open_trace(bucketed(tmp_path, run.header, events, 8, "one")).layout
    publishes = sum(1 for e in events if e.op.value == "publish")
    assert layout.receipts and max(layout.identity_events) < sum(layout.identity_events) / 3
    assert sum(layout.receipt_events) < 1.5 * publishes, (publishes, layout.receipt_events)
    same_verdicts(check_trace(layout.directory), check_trace(events, header=run.header))


def test_a_conversion_that_fails_leaves_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Interrupted while it writes (Ctrl-C in a writer's run, say): no temporary file, no directory it made."""
    import conformance.trace.buckets as buckets

    run = synthesize(5, SynthConfig(messages=20, keys=3))
    flat = write_parquet(tmp_path / "t.parquet", run.header, list(run.events))

    def interrupted(batch: Any, parts: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(buckets, "_grouped", interrupted)
    with pytest.raises(KeyboardInterrupt):
        convert_to_buckets(flat, tmp_path / "new", 3)
    assert not (tmp_path / "new").exists()
    (tmp_path / "given").mkdir()
    with pytest.raises(KeyboardInterrupt):
        convert_to_buckets(flat, tmp_path / "given", 3)
    assert (tmp_path / "given").is_dir() and not any((tmp_path / "given").iterdir())
