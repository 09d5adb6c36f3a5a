"""Parquet trace chunks: written with bounded memory, read back in order, one schema growing, checkable."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from conformance.checks import check_trace
from conformance.trace import SubscriptionSpec, TraceHeader, TraceWriter, read_trace, write_parquet
from conformance.trace.chunks import ChunkWriter, chunk_paths, concatenate_chunks, read_chunks
from conformance.trace.validation import TraceFormatError


def _events(n: int) -> tuple[TraceHeader, list]:
    header = TraceHeader(target="model", subscription=SubscriptionSpec(name="s"))
    writer = TraceWriter(None, header, clock=iter(range(0, 10**9, 1000)).__next__)
    writer.record("open", topic="t", subscription="s", consumer="c1", result="ok", name="c1")
    for seq in range(n):
        writer.record("publish", topic="t", producer="p", key=f"k{seq % 3}", msg_id=f"0:{seq}:-1:-1", seq=seq,
                      uid=f"p:{seq}", result="ok", t0=seq)  # fmt: skip
        writer.record("receive", topic="t", subscription="s", consumer="c1", producer="p", key=f"k{seq % 3}",
                      msg_id=f"0:{seq}:-1:-1", seq=seq, uid=f"p:{seq}", redelivery_count=0)  # fmt: skip
        writer.record("ack", topic="t", subscription="s", consumer="c1", key=f"k{seq % 3}", msg_id=f"0:{seq}:-1:-1",
                      uid=f"p:{seq}")  # fmt: skip
    writer.record("fault", topic="t", fault="net_cut", consumers=["c1"])  # a later chunk adds a column
    writer.record("end", topic="t", subscription="s", drained=True)
    assert writer.events is not None
    return header, writer.events


def test_chunks_read_back_as_the_events_written_and_check_like_one_file(tmp_path: Path) -> None:
    header, events = _events(250)
    chunks = ChunkWriter(tmp_path / "trace", header, rows=100)
    for event in events:
        chunks.append(event)
        assert len(chunks._buffer) < 100  # never more than one chunk in memory
    chunks.close()
    paths = chunk_paths(tmp_path / "trace")
    assert [p.name for p in paths] == [f"part-{n:06d}.parquet" for n in range(len(paths))] and len(paths) == 8
    read_header, read_events = read_chunks(tmp_path / "trace")
    assert read_header == header
    assert [e.to_json() for e in read_events] == [e.to_json() for e in events]
    # the last chunk's schema holds every column of the earlier ones (the fault's 'consumers' came last)
    first, last = (pq.read_schema(p) for p in (paths[0], paths[-1]))
    assert set(first.names) < set(last.names) and "consumers" in last.names
    single = concatenate_chunks(tmp_path / "trace", tmp_path / "all.parquet")
    assert [e.to_json() for e in read_trace(single)[1]] == [e.to_json() for e in events]
    whole = write_parquet(tmp_path / "whole.parquet", header, events)
    assert check_trace(single).counts == check_trace(whole).counts
    assert check_trace(read_chunks(tmp_path / "trace")[1], header=header).valid


def test_a_missing_chunk_is_named(tmp_path: Path) -> None:
    header, events = _events(100)
    chunks = ChunkWriter(tmp_path, header, rows=50)
    chunks.extend(events)
    chunks.close()
    (tmp_path / "part-000002.parquet").unlink()
    with pytest.raises(TraceFormatError, match="where i=100 was due"):
        list(read_chunks(tmp_path)[1])


def test_no_chunks_and_existing_chunks_are_refused(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="holds no trace chunks"):
        read_chunks(tmp_path)
    header, events = _events(3)
    chunks = ChunkWriter(tmp_path, header)
    chunks.extend(events)
    chunks.close()
    with pytest.raises(FileExistsError):
        ChunkWriter(tmp_path, header)


def test_age_bound_writes_a_chunk_without_waiting_for_rows(tmp_path: Path) -> None:
    header, events = _events(5)
    now = [0.0]
    chunks = ChunkWriter(tmp_path, header, rows=10_000, max_age_s=1.0, clock=lambda: now[0])
    chunks.append(events[0])
    assert chunk_paths(tmp_path, missing_ok=True) == []
    now[0] = 1.5
    chunks.append(events[1])
    assert len(chunk_paths(tmp_path)) == 1
