"""Where the events of a run against a real broker go once recorded: the trace file and the live checker.

(Listeners get the lines of each batch, as written to the file, encoded once.)

``TraceWriter`` gives every event its place (``i``) and time (``t``) under its lock, in the thread that
observed it.  Everything after that (encoding the line, the ``write`` and ``flush`` system calls, the
checker) happens in one thread of its own, which takes the events in batches every ``flush_every_s``, so it
never sits between a client call and the next: the harness must not slow the clients it observes
(``benchmarks/bench_driver.py``).  Python runs one thread at a time, so after each batch the thread yields.

Lines are flushed after every batch and at least every ``flush_every_s``, so a run that hangs still leaves
its trace on disk; :meth:`close` writes and checks everything still queued.  The file is byte for byte what
``TraceWriter(path, header)`` writes: the same header line, then ``Event.to_json()`` per event.  With no
``path`` and no ``listeners`` nothing is encoded here: ``event_listeners`` get the items as appended, in
batches; the soak's trace sink takes rows (``writer.add_row_listener(pipeline.append)``,
:mod:`conformance.trace.rows`), so no ``Event`` is made in the clients' process at all.  Runs against
the model need none of this (no threads there): the writer keeps its own file and feeds the checker inline.
"""

from __future__ import annotations

import collections
import contextlib
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from conformance.trace import TraceHeader

__all__ = ["TracePipeline"]

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
        event_listeners: list[Callable[[list[Any]], None]] | None = None,
        batch: int = BATCH,
    ) -> None:
        self.path = path
        self._fh: IO[str] | None = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = path.open("w", encoding="utf-8")
            self._fh.write(header.to_json() + "\n")
            self._fh.flush()
        self._listeners = listeners
        #: called with each batch of events, in trace order, on the pipeline's thread (e.g. the soak's sink)
        self._event_listeners = event_listeners or []
        self.errors: list[str] = []
        self._flush_every_s = flush_every_s
        self._batch = batch
        self._pending: collections.deque[Any] = collections.deque()
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ks-trace-pipeline", daemon=True)
        self._thread.start()

    def append(self, event: Any) -> None:
        """Called by the trace writer, in trace order (an ``Event``, or a row from a row listener when nothing is
        encoded here): one ``deque.append``, which wakes nobody.

        (A queue whose reader waits on it would wake the pipeline thread at every event, and each wake-up is a
        hand-over of the interpreter between threads; polling every ``flush_every_s`` takes the events in
        batches instead.)
        """
        self._pending.append(event)

    def _run(self) -> None:
        pending = self._pending
        while True:
            closing = self._closing.wait(self._flush_every_s)
            while pending:  # after ``close``: everything appended before it
                batch: list[Any] = []
                popleft = pending.popleft
                with contextlib.suppress(IndexError):
                    while len(batch) < self._batch:
                        batch.append(popleft())
                self._handle(batch)
                time.sleep(0)  # let a client thread whose call just returned take the interpreter
            if closing:
                return

    def _handle(self, batch: list[Any]) -> None:
        fh = self._fh
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

    def close(self, timeout_s: float = 120.0) -> bool:
        """Write and check everything queued, then close the file; False if that did not finish in time."""
        self._closing.set()
        self._thread.join(timeout_s)
        finished = not self._thread.is_alive()
        if self._fh is not None:
            with contextlib.suppress(OSError):
                self._fh.flush()
                if finished:
                    self._fh.close()
        return finished
