"""Traces stored as directories of Parquet chunks whose later chunks have columns the first lacks (as soak runs
write them: ``conformance.trace.chunks``, extension columns only grow)."""

from __future__ import annotations

from pathlib import Path

from conformance.trace.builder import TraceBuilder
from conformance.trace.chunks import ChunkWriter


def scoped_fault(named: list[str] | None) -> TraceBuilder:
    """c1 holds 1:0 of key ``k`` when a client reconnect touching ``named`` (``consumers``; None: the field is
    absent, so every consumer) is recorded, then c2 receives 1:1 of ``k``.  Naming c2 leaves c1's hold:
    ``key_overlap``; naming c1, or nobody named, releases it.  With ``rows=4`` chunks the fault is in the second
    chunk, and the first has no ``fault`` or ``consumers`` column."""
    b = TraceBuilder()
    b.open("c1"), b.open("c2"), b.publish("k", "1:0"), b.publish("k", "1:1")
    b.receive("c1", "k", "1:0"), b.add("fault", fault="client_reconnect", consumers=named)
    b.receive("c2", "k", "1:1"), b.ack("c1", "1:0"), b.ack("c2", "1:1"), b.end()
    return b


def write_chunks(b: TraceBuilder, directory: Path, rows: int) -> Path:
    """``b``'s events as the soak's writer stores them: a chunk every ``rows`` events."""
    writer = ChunkWriter(directory, b.header, rows=rows)
    for event in b.events:
        writer.append(event)
    writer.close()
    return directory
