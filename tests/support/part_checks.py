"""What the Spark engine's split tests share: the verdicts the engines must agree on, and a trace stored as a
directory of Parquet chunks (batches and files for a split to cross)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conformance.trace.header import TraceHeader
from conformance.trace.parquet import write_parquet

__all__ = ["same_verdicts", "stored_in_chunks"]


def same_verdicts(got: Any, want: Any) -> None:
    """``got`` (a split's merged verdict) says what ``want`` (the streaming engine's) says: violations and their
    explanations, validity, counts, events, notes, unjudged kinds."""
    assert got.identities() == want.identities()
    assert (got.validity, got.counts, got.events) == (want.validity, want.counts, want.events)
    assert (got.notes, got.unjudged) == (want.notes, want.unjudged)
    texts = sorted((v.identity(), v.explanation) for v in got.all_violations())
    assert texts == sorted((v.identity(), v.explanation) for v in want.all_violations())


def stored_in_chunks(directory: Path, header: TraceHeader, events: list[Any], chunks: int = 3) -> Path:
    """``events`` as a directory of ``chunks`` Parquet files."""
    directory.mkdir()
    step = -(-len(events) // chunks)
    for n in range(chunks):
        write_parquet(directory / f"{n:03d}.parquet", header, events[n * step : (n + 1) * step])
    return directory
