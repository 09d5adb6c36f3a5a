"""Where the events of a run against a real broker go once recorded: the trace file and the live checker.

(Listeners get the lines of each batch, as written to the file, encoded once.)

``TraceWriter`` gives every event its place (``i``) and time (``t``) under its lock, in the thread that
observed it.  Everything after that (encoding the line, the ``write`` and ``flush`` system calls, the
checker) happens in one thread of its own, fed through a queue and working in batches, so it never sits
between a client call and the next: the harness must not slow the clients it observes
(``benchmarks/bench_driver.py``).  Python runs one thread at a time, so after each batch the thread yields.

Lines are flushed after every batch and at least every ``flush_every_s``, so a run that hangs still leaves
its trace on disk; :meth:`close` writes and checks everything still queued.  The file is byte for byte what
``TraceWriter(path, header)`` writes: the same header line, then ``Event.to_json()`` per event.  With no
``path`` nothing is written here: ``event_listeners`` (the soak's Parquet chunk writer) get the events.  Runs against
the model need none of this (no threads there): the writer keeps its own file and feeds the checker inline.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from conformance.trace import Event, TraceHeader

__all__ = ["TracePipeline"]

_CLOSE = object()
#: Events handled per batch before the thread yields to the client threads.
BATCH = 64


class TracePipeline:
    """``writer.add_listener(pipeline.append)``; ``pipeline.close()`` after the last event."""

    def __init__(
        self,
        path: Path | None,
        header: TraceHeader,
        listeners: list[Callable[[bytes], None]],
        *,
        flush_every_s: float = 0.02,
        event_listeners: list[Callable[[list[Event]], None]] | None = None,
    ) -> None:
        self.path = path
        self._fh: IO[str] | None = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = path.open("w", encoding="utf-8")
            self._fh.write(header.to_json() + "\n")
            self._fh.flush()
        self._listeners = listeners
        #: called with each batch of events, in trace order, on the pipeline's thread (e.g. a chunk writer)
        self._event_listeners = event_listeners or []
        self.errors: list[str] = []
        self._flush_every_s = flush_every_s
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="ks-trace-pipeline", daemon=True)
        self._thread.start()

    def append(self, event: Event) -> None:
        """Called by the trace writer, in trace order (a queue put: nothing else on the caller's thread)."""
        self._queue.put(event)

    def _run(self) -> None:
        fh = self._fh
        get, get_nowait = self._queue.get, self._queue.get_nowait
        while True:
            try:
                item = get(timeout=self._flush_every_s)
            except queue.Empty:
                continue
            batch: list[Event] = []
            closing = False
            while True:
                if item is _CLOSE:
                    closing = True
                    break
                batch.append(item)
                if len(batch) >= BATCH:
                    break
                try:
                    item = get_nowait()
                except queue.Empty:
                    break
            if batch:
                if fh is not None or self._listeners:
                    text = "".join([event.to_json() + "\n" for event in batch])
                    if fh is not None:
                        fh.write(text)
                        fh.flush()
                    if self._listeners:
                        data = text.encode()
                        for listener in self._listeners:
                            listener(data)
                for event_listener in self._event_listeners:
                    try:
                        event_listener(batch)
                    except Exception as exc:  # a failing sink must not stop the others (or the run)
                        if len(self.errors) < 10:
                            self.errors.append(f"{type(exc).__name__}: {exc}")
            if closing:
                return
            time.sleep(0)  # let a client thread whose call just returned take the interpreter

    def close(self, timeout_s: float = 120.0) -> bool:
        """Write and check everything queued, then close the file; False if that did not finish in time."""
        self._queue.put(_CLOSE)
        self._thread.join(timeout_s)
        finished = not self._thread.is_alive()
        if self._fh is not None:
            with contextlib.suppress(OSError):
                self._fh.flush()
                if finished:
                    self._fh.close()
        return finished
