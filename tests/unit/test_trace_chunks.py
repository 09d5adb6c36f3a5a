"""A trace stored as a directory of Parquet chunks (as long runs write them) reads as the one trace it is."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pyarrow")

from trace_synth import SynthConfig, synthesize

from conformance.checks import TraceFormatError, check_trace
from conformance.trace.parquet import write_parquet
from conformance.trace.reader import open_trace
from conformance.violations import Kind


def _chunked(directory: Path, header: object, events: list[object], n: int) -> Path:
    size = -(-len(events) // n)
    for k in range(n):
        write_parquet(directory / f"part-{k:05d}.parquet", header, events[k * size : (k + 1) * size])  # type: ignore[arg-type]
    return directory


def test_a_directory_of_chunks_gives_the_verdict_of_the_whole_file(tmp_path: Path) -> None:
    run = synthesize(5, SynthConfig(messages=60, partitions=2), plant={Kind.KEY_OVERLAP})
    events = list(run.events)
    whole = check_trace(write_parquet(tmp_path / "whole.parquet", run.header, events))
    chunks = _chunked(tmp_path / "chunks", run.header, events, 4)
    (chunks / "_SUCCESS").write_text("")  # what Spark leaves next to its chunks: ignored
    source = open_trace(chunks)
    assert source.header == run.header and len(source.files) == 4
    chunked = check_trace(chunks)
    assert chunked.identities() == whole.identities() and chunked.events == whole.events == len(events)
    assert chunked.notes == whole.notes and not chunked.valid
    assert len(list(source.events())) == len(events)  # the exact path reads every chunk too


def test_a_chunk_out_of_order_is_named(tmp_path: Path) -> None:
    run = synthesize(6, SynthConfig(messages=20))
    events = list(run.events)
    half = len(events) // 2
    write_parquet(tmp_path / "a.parquet", run.header, events[half:])  # later events in the first chunk by name
    write_parquet(tmp_path / "b.parquet", run.header, events[:half])
    with pytest.raises(TraceFormatError, match=r"b\.parquet.*row 0.*'i' must increase"):
        check_trace(tmp_path)


def test_an_empty_directory_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="directory without Parquet chunks"):
        open_trace(tmp_path)


def test_an_end_naming_unreachable_consumers_round_trips_through_every_form(tmp_path: Path) -> None:
    """``unreachable`` (a list, on ``end``) is an extension field: kept by JSON Lines, Parquet (a JSON text
    column) and chunk directories (a column only the last chunk has), and every form is judged alike."""
    from small_traces import cut_off_at_the_end

    from conformance.trace.chunks import ChunkWriter, read_chunks
    from conformance.trace.parquet import convert_to_parquet
    from conformance.trace.reader import read_trace

    b = cut_off_at_the_end(drained=False)
    jsonl = b.write(tmp_path / "t.jsonl")
    gz = b.write(tmp_path / "t.jsonl.gz")
    parquet = convert_to_parquet(jsonl, tmp_path / "t.parquet") or tmp_path / "t.parquet"
    chunks = ChunkWriter(tmp_path / "chunks", b.header, rows=3)  # the soak's writer: rows, 3 chunks
    for event in b.events:
        chunks.append(event)
    chunks.close()
    assert chunks.chunks == 3
    for path in (jsonl, gz, parquet):
        header, events = read_trace(path)
        assert events == b.events and events[-1].extra["unreachable"] == ["c2"], path
    header, chunked = read_chunks(tmp_path / "chunks")
    assert list(chunked) == b.events and header == b.header
    verdicts = [check_trace(path) for path in (jsonl, gz, parquet, tmp_path / "chunks")]
    for verdict in verdicts:
        assert verdict.validity.value == "unknown" and verdict.unjudged == (Kind.UNDELIVERED,)
        assert not verdict.violations and verdict.notes == verdicts[0].notes
    # the same trace drained: the message c2 never received is judged, and lost
    drained = check_trace(cut_off_at_the_end(drained=True).write(tmp_path / "drained.jsonl"))
    assert [v.kind for v in drained.violations] == [Kind.UNDELIVERED]


@pytest.mark.parametrize("rows", [4, 6], ids=["fault in chunk 1", "fault in chunk 0"])
def test_a_column_only_later_chunks_have_is_read_chunk_by_chunk(rows: int, tmp_path: Path) -> None:
    """A fault naming c2 in a chunk after one without a ``consumers`` column: the reader (pyarrow, each chunk
    with its own schema) keeps the list, so c1's hold stands (``key_overlap``), on the Python engine and in the
    Spark engine's tasks (which read a local trace the same way, part by part, with the driver's plan)."""
    import pyarrow.parquet as pq
    from chunk_traces import scoped_fault, write_chunks

    from conformance.spark.engine import _merged, check_task, plan_trace

    b = scoped_fault(["c2"])
    chunks = write_chunks(b, tmp_path / "chunks", rows=rows)
    source = open_trace(chunks)
    assert ("consumers" in pq.ParquetFile(source.files[0]).schema_arrow.names) == (rows == 6)
    faults = [
        c
        for batch in source.batches()
        for op, c in zip(batch["op"].to_pylist(), batch["consumers"].to_pylist(), strict=True)
        if op == "fault"
    ]
    assert faults == [["c2"]]
    python = check_trace(chunks)
    assert python.identities() == check_trace(b.events, header=b.header).identities()
    assert {v.kind for v in python.violations} == {Kind.KEY_OVERLAP, Kind.OUT_OF_ORDER}
    plan = plan_trace(source, 2)
    results = []
    for part in range(2):
        _whole, found = check_task(b.header, None, ("path", str(chunks)), part, 2, plan=plan)
        results += [(0, pass_, part, result) for pass_, result in found]
    assert _merged(results, {0: b.header}, None)[0].identities() == python.identities()
