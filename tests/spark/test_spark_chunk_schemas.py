"""A trace whose later lines or chunks have a column the first lacks, on both of the Spark engine's reads.

A soak's directory of Parquet chunks grows its extension columns as events need them (``conformance.trace.chunks``):
a fault's ``consumers`` list appears with the first fault, the end's ``unreachable`` in the last chunk only.
The DataFrame path (a URI only Spark reads: ``path_frame``) once took the first chunk's schema, read a later
chunk's ``consumers`` as null, and judged a fault naming one consumer as one touching every consumer: another
verdict than the Python engine's.  Here every form goes through both of the Spark engine's paths and gives the
Python verdict, read from the stored file and from the events alike.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from chunk_traces import scoped_fault, write_chunks

from conformance.checks import Kind, check_trace
from conformance.trace.builder import TraceBuilder

pytestmark = pytest.mark.spark


def _same(spark_verdict: Any, python_verdict: Any) -> None:
    assert spark_verdict.identities() == python_verdict.identities()
    assert (spark_verdict.validity, spark_verdict.counts, spark_verdict.events) == (
        python_verdict.validity,
        python_verdict.counts,
        python_verdict.events,
    )
    assert (spark_verdict.notes, spark_verdict.unjudged) == (python_verdict.notes, python_verdict.unjudged)
    texts = sorted((v.identity(), v.explanation) for v in spark_verdict.all_violations())
    assert texts == sorted((v.identity(), v.explanation) for v in python_verdict.all_violations())


def _widening(b: TraceBuilder) -> TraceBuilder:
    """``b`` with two extension columns the checkers ignore whose kind widens from the first chunk to the second
    (``x``: int64 then float64; ``y``: int64 then JSON text): Spark cannot merge those chunks' schemas."""
    events = b.events
    events[2] = dataclasses.replace(events[2], extra={**events[2].extra, "x": 1, "y": 1})
    events[5] = dataclasses.replace(events[5], extra={**events[5].extra, "x": 1.5, "y": "s"})
    return b


def _stored(tmp_path: Path) -> list[tuple[str, Path, TraceBuilder]]:
    """(what, stored trace, its events); a fault naming c2 is the sharp case: null would release c1's hold."""
    c2, c1, nobody, wide = (
        scoped_fault(["c2"]),
        scoped_fault(["c1"]),
        scoped_fault(None),
        _widening(scoped_fault(["c2"])),
    )
    return [
        ("fault naming c2 in chunk 1", write_chunks(c2, tmp_path / "c2", rows=4), c2),
        ("fault naming c1 in chunk 1", write_chunks(c1, tmp_path / "c1", rows=4), c1),
        ("every column in chunk 0", write_chunks(c2, tmp_path / "first", rows=6), c2),
        ("a fault naming nobody", write_chunks(nobody, tmp_path / "nobody", rows=4), nobody),
        ("kinds widening in chunk 1", write_chunks(wide, tmp_path / "wide", rows=4), wide),
        ("JSON Lines", c2.write(tmp_path / "t.jsonl"), c2),  # 'consumers' first on line 7
    ]


def test_a_column_only_later_chunks_have_is_read_on_the_dataframe_path(spark: Any, tmp_path: Path) -> None:
    from conformance.spark import check_frames
    from conformance.spark.load import path_frame

    stored = _stored(tmp_path)
    frames, headers = [], {}
    for tid, (_name, path, b) in enumerate(stored):
        frame, headers[tid] = path_frame(spark, f"file://{path}", b.header, tid)  # as for a URI only Spark reads
        frames.append(frame)
    assert [r.consumers for r in frames[0].where("op = 'fault'").collect()] == [["c2"]]
    union = frames[0]
    for frame in frames[1:]:
        union = union.unionByName(frame)
    verdicts = check_frames(spark, union, headers, parts=2)
    for tid, (name, path, b) in enumerate(stored):
        python = check_trace(path)
        assert python.identities() == check_trace(b.events, header=b.header).identities(), name
        _same(verdicts[tid], python)
    assert {v.kind for v in verdicts[0].violations} == {Kind.KEY_OVERLAP, Kind.OUT_OF_ORDER}
    assert {v.kind for v in verdicts[1].violations} == {Kind.OUT_OF_ORDER}  # c1's hold released


def test_a_column_only_later_chunks_have_is_read_by_the_tasks(spark: Any, tmp_path: Path) -> None:
    """The tasks read a stored trace this machine has with pyarrow, chunk by chunk, each with its own schema."""
    from conformance.spark.engine import run_tasks

    stored = _stored(tmp_path)
    verdicts = run_tasks(spark, [(b.header, ("path", str(path))) for _n, path, b in stored], parts=2)
    for verdict, (_name, path, _b) in zip(verdicts, stored, strict=True):
        _same(verdict, check_trace(path))
    assert {v.kind for v in verdicts[0].violations} == {Kind.KEY_OVERLAP, Kind.OUT_OF_ORDER}
