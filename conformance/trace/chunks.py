"""Traces as a directory of Parquet chunks: written while a long run goes on, with bounded memory.

Layout: ``DIR/part-000000.parquet``, ``part-000001.parquet``, ...; lexical order of the names is event order, and
each chunk holds the events that follow the previous chunk's (``i`` continues across chunks).  Every chunk is
an ordinary Parquet trace (:mod:`.parquet`): the same core columns and types, the header under the metadata key
``keyshared.header`` in every chunk.  Extension columns only grow: a chunk has every extension column of the
chunks before it (null where its events lack the field), so the union of the chunks' schemas is the last
chunk's.  A chunk is written to ``.part-NNNNNN.parquet.tmp`` and renamed when complete, so a reader never sees
half a chunk, and a run that is killed leaves every finished chunk readable.

The writer keeps at most ``rows`` events in memory (plus pyarrow's buffers while a chunk is written), as rows
(:mod:`.rows`): ``append_row`` takes them as the trace writer makes them, and a chunk is written from them
column by column (:func:`~.parquet.write_parquet_rows`, the same file as from the events).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from conformance.trace.events import Event
from conformance.trace.header import TraceHeader
from conformance.trace.parquet import write_parquet, write_parquet_rows
from conformance.trace.reader import open_trace
from conformance.trace.rows import Row, event_row
from conformance.trace.validation import TraceFormatError

__all__ = ["CHUNK_PATTERN", "ChunkWriter", "chunk_paths", "concatenate_chunks", "read_chunks"]

#: The name of chunk ``n``.
CHUNK_PATTERN = "part-{:06d}.parquet"


class ChunkWriter:
    """``append(event)`` or ``append_row(row)`` in trace order; a chunk is written every ``rows`` events or
    ``max_age_s`` seconds.

    ``max_age_s`` (wall clock) is for runs against real brokers, so a hung run leaves recent chunks on disk;
    runs against the model pass None so that chunk boundaries, like everything else, depend on the seed only.
    """

    def __init__(
        self,
        directory: str | Path,
        header: TraceHeader,
        *,
        rows: int = 50_000,
        max_age_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if rows < 1:
            raise ValueError(f"rows must be >= 1, got {rows}")
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        stale = chunk_paths(self.directory, missing_ok=True)
        if stale:
            raise FileExistsError(f"{self.directory} already holds trace chunks ({stale[0].name}, ...)")
        self.header = header
        self.rows = rows
        self.max_age_s = max_age_s
        self._clock = clock
        self._buffer: list[Row] = []
        self._started = clock()
        self._columns: dict[str, str] = {}
        self.chunks = 0
        self.events = 0
        self.closed = False

    def append(self, event: Event) -> None:
        self.append_row(event_row(event))

    def append_row(self, row: Row) -> None:
        self._buffer.append(row)
        self.events += 1
        if len(self._buffer) >= self.rows or (
            self.max_age_s is not None and self._clock() - self._started >= self.max_age_s
        ):
            self.flush()

    def extend_rows(self, rows: list[Row]) -> None:
        """:meth:`append_row` for a batch of rows in trace order (the age of the chunk is looked at once)."""
        buffer = self._buffer
        start = 0
        while len(rows) - start >= self.rows - len(buffer):  # the batch fills the chunk: write it
            take = self.rows - len(buffer)
            buffer.extend(rows[start : start + take])
            self.events += take
            start += take
            self.flush()
            buffer = self._buffer
        if start < len(rows):
            buffer.extend(rows[start:])
            self.events += len(rows) - start
            if self.max_age_s is not None and self._clock() - self._started >= self.max_age_s:
                self.flush()

    def extend(self, events: list[Event]) -> None:
        for event in events:
            self.append(event)

    def flush(self) -> Path | None:
        """Write what is buffered as the next chunk (nothing when the buffer is empty)."""
        self._started = self._clock()
        if not self._buffer:
            return None
        rows = self._buffer  # cleared only once written: an interrupted write is done again by close()
        name = CHUNK_PATTERN.format(self.chunks)
        tmp = self.directory / f".{name}.tmp"
        columns = write_parquet_rows(tmp, self.header, rows, columns=self._columns)
        final = self.directory / name
        os.replace(tmp, final)
        self._buffer = []
        self._columns = columns
        self.chunks += 1
        return final

    def close(self) -> None:
        if not self.closed:
            self.flush()
            self.closed = True


def chunk_paths(directory: str | Path, *, missing_ok: bool = False) -> list[Path]:
    """The chunks of a trace directory in event order; raises ``TraceFormatError`` if there are none."""
    d = Path(directory)
    paths = sorted(p for p in d.glob("part-*.parquet") if p.is_file()) if d.is_dir() else []
    if not paths and not missing_ok:
        raise TraceFormatError(str(d), None, "holds no trace chunks (part-NNNNNN.parquet)")
    return paths


def read_chunks(directory: str | Path) -> tuple[TraceHeader, Iterator[Event]]:
    """The header (of the first chunk) and every event of every chunk, in order, validated chunk by chunk.

    Raises ``TraceFormatError`` when a chunk's events do not continue the previous chunk's (a chunk missing).
    """
    paths = chunk_paths(directory)
    header = open_trace(paths[0]).header

    def events() -> Iterator[Event]:
        expected = 0
        for path in paths:
            for event in open_trace(path).events():
                if event.i != expected:
                    raise TraceFormatError(str(path), None, f"event i={event.i} where i={expected} was due")
                expected += 1
                yield event

    return header, events()


def concatenate_chunks(directory: str | Path, dst: str | Path) -> Path:
    """One Parquet trace file from a chunk directory (for tools that read single files)."""
    header, _ = read_chunks(directory)
    return write_parquet(dst, header, lambda: read_chunks(directory)[1])
