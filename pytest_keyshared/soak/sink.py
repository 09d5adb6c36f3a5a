"""The soak's trace sink in a process of its own: the Parquet chunks and the live check, off the clients' interpreter.

Why a process: against a real broker the harness's cost is the time its Python work takes from the client
threads it observes (Python runs one thread at a time), and a send waits for whatever holds the
interpreter.  Encoding every event as JSON for a checker process and building Parquet columns for the chunk
writer cost about 45 us of interpreter time per event in the recording process, three events a message; a
chunk of 20,000 events held it for most of a second (``benchmarks/bench_soak.py``).  So the recording process
only makes each event a row (:mod:`conformance.trace.rows`, no ``Event`` object) and hands the rows over in
one pickle per batch (about 1 us an event); this process writes the chunks from the rows
(:meth:`~conformance.trace.chunks.ChunkWriter.append_row`) and runs the live check (:class:`~.live.LiveCount`,
the streaming checker with bounded memory, on the events rebuilt from the rows), on another core.

Wire format.  Parent to child: a 4-byte big-endian length and a pickle, first ``{"directory", "header",
"rows", "max_age_s", "live", "profile", "status_path"}``, then lists of rows; end of input means "finish".
Child to parent, at the end: a length and a pickle of ``("done", summary)`` or ``("error", text)``.  The child
is our own program, started by us; nothing else writes to these pipes.  The child writes ``status_path``
(``"<events> <violations>"``) once it has loaded what it needs (pyarrow, the checker), which is how the run
knows it is ready (:meth:`TraceSink.wait_ready`: the run starts its load after that, so the sink's start-up does
not compete with it), then rewrites it about every second (the status line), and writes a chunk at least
every ``max_age_s`` even when no event comes.  Every wait on it is bounded.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pickle
import selectors
import sys
import time
from pathlib import Path
from typing import Any

from conformance.trace import TraceHeader
from conformance.trace.chunks import chunk_paths
from conformance.trace.rows import Row
from pytest_keyshared.driver.frames import FRAME, ReplyingChild, to_frame

__all__ = ["SinkError", "TraceSink", "child_main"]

#: Linux's F_SETPIPE_SZ: a larger pipe absorbs bursts without blocking the recording process.
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
_PIPE_BYTES = 1 << 20


class SinkError(Exception):
    """The sink process failed or did not finish in time: the chunks may lack events."""


class TraceSink:
    """Parent side: ``feed(events)`` from the trace pipeline's thread, ``finish()`` once after the last event."""

    def __init__(
        self,
        directory: Path,
        header: TraceHeader,
        *,
        rows: int,
        max_age_s: float | None,
        live: bool,
        profile: Any,
        status_path: Path,
        log_path: Path,
    ) -> None:
        stale = chunk_paths(directory, missing_ok=True)
        if stale:  # as ChunkWriter would refuse, but here, before anything starts
            raise FileExistsError(f"{directory} already holds trace chunks ({stale[0].name}, ...)")
        # Ctrl-C reaches the run (the child has a session of its own), which ends the trace; the sink finishes it
        self._child = ReplyingChild(
            "pytest_keyshared.soak.sink_child", name="the trace sink process", error=SinkError, log_path=log_path
        )
        with contextlib.suppress(OSError):
            fcntl.fcntl(self._child.stdin.fileno(), _F_SETPIPE_SZ, _PIPE_BYTES)
        self.summary: dict[str, Any] = {}
        self._status_path = status_path
        with contextlib.suppress(OSError):
            status_path.unlink()  # a stale one would say "ready" too early
        self._send(
            {
                "directory": str(directory),
                "header": header.to_dict(),
                "rows": rows,
                "max_age_s": max_age_s,
                "live": live,
                "profile": profile,
                "status_path": str(status_path),
            }
        )

    @property
    def pid(self) -> int:
        return self._child.proc.pid

    @property
    def failed(self) -> str | None:
        """Why the sink stopped reading, once it has (the run goes on; :meth:`finish` reports it)."""
        return self._child.failed

    def wait_ready(self, timeout_s: float) -> bool:
        """Wait (at most ``timeout_s``) until the child has loaded what it needs; False if it has not (or failed)."""
        deadline = time.monotonic() + timeout_s
        while not self._status_path.exists():
            if self._child.proc.poll() is not None or time.monotonic() >= deadline:
                return False
            time.sleep(0.01)
        return True

    def feed(self, rows: list[Row]) -> None:
        """A batch of rows (:mod:`conformance.trace.rows`), in trace order (from one thread)."""
        if self.failed is None:
            self._send(rows)

    def _send(self, obj: Any) -> None:
        self._child.write(to_frame(obj))

    def finish(self, timeout_s: float) -> dict[str, Any]:
        """Wait for the last chunk; returns the sink's summary, raises :class:`SinkError` when it failed."""
        self.summary = dict(self._child.answer("done", "its summary", timeout_s))
        return self.summary


# --- child side -------------------------------------------------------------------------------------------


def _frames(fd: int, wait_s: float) -> Any:
    """Yield each unpickled frame from ``fd``, or None after ``wait_s`` without input; stops at end of input."""
    buffer = bytearray()
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            while len(buffer) >= FRAME.size:
                (size,) = FRAME.unpack_from(buffer)
                if len(buffer) < FRAME.size + size:
                    break
                frame = bytes(buffer[FRAME.size : FRAME.size + size])
                del buffer[: FRAME.size + size]
                yield pickle.loads(frame)
            if not selector.select(wait_s):
                yield None
                continue
            data = os.read(fd, 1 << 20)
            if not data:
                return
            buffer += data


#: The sink's niceness: on a busy machine the broker and the clients it records come first; the sink catches up
#: (the pipe and the pipeline's queue hold what it has not read yet; the run waits for it at the end, bounded).
NICE = 5


def _write_status(path: Path, events: int, violations: int) -> None:
    """``"<events> <violations>"``, replaced whole (a reader never sees half a line)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(f"{events} {violations}\n", encoding="utf-8")
    os.replace(tmp, path)


def child_main() -> int:  # pragma: no cover - runs in the child (exercised through the parent by the tests)
    import pyarrow.parquet  # noqa: F401 - loaded now, before the run's load starts, not at the first chunk

    from conformance.trace.chunks import ChunkWriter
    from pytest_keyshared.soak.live import SINK_SLICE_EVENTS, LiveCount

    with contextlib.suppress(OSError):
        os.nice(NICE)
    frames = _frames(sys.stdin.fileno(), 1.0)
    reply: tuple[str, Any]
    chunks: ChunkWriter | None = None
    try:
        first = next(frames)
        header = TraceHeader.from_dict(first["header"])
        chunks = ChunkWriter(Path(first["directory"]), header, rows=first["rows"])  # ages kept here (idle too)
        max_age_s = first["max_age_s"]
        live = LiveCount(header, first["profile"], slice_events=SINK_SLICE_EVENTS) if first["live"] else None
        status = Path(first["status_path"])
        events = written = 0
        _write_status(status, 0, 0)  # ready
        last_chunk = last_status = time.monotonic()
        for frame in frames:
            if frame is not None:
                chunks.extend_rows(frame)
                if live is not None:
                    live.feed_rows(frame)
                events += len(frame)
            now = time.monotonic()
            if chunks.chunks != written:  # a full chunk went out
                written, last_chunk = chunks.chunks, now
            elif max_age_s is not None and now - last_chunk >= max_age_s:
                chunks.flush()
                written, last_chunk = chunks.chunks, now
            if now - last_status >= 1.0:
                last_status = now
                if live is not None:
                    live.catch_up()
                _write_status(status, events, 0 if live is None else live.violations)
        chunks.close()
        if live is not None:
            live.close()  # the last slice
        summary = {
            "events": events,
            "chunks": chunks.chunks,
            "violations": 0 if live is None else live.violations,
            "kinds": {} if live is None else dict(live.kinds),
            "notes": [] if live is None else list(live.notes),
        }
        reply = ("done", summary)
    except Exception as exc:
        reply = ("error", f"{type(exc).__name__}: {exc}")
        for _ in frames:  # keep reading, so the parent never blocks on a full pipe
            pass
    try:
        sys.stdout.buffer.write(to_frame(reply))
        sys.stdout.buffer.flush()
    except BrokenPipeError:  # the run is gone (killed): nobody waits for the answer; the chunks are written
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the flush at exit does not fail again
    return 0
