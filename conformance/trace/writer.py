"""Append-only, crash-safe trace recording.

Every event is written and flushed as it happens, so a run that hangs, crashes or is interrupted still
leaves a trace that can be checked.  The writer is thread-safe: consumer threads record concurrently and
the lock gives the single observation order (``i``) the format needs; ``t`` comes from one monotonic clock
and is forced non-decreasing.  Listeners (the live checker, progress reporting) see each event in order.
"""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from conformance.trace.events import Event, Op, Result
from conformance.trace.header import TraceHeader

__all__ = ["Clock", "TraceWriter"]

Clock = Callable[[], int]
Listener = Callable[[Event], None]

_CORE_KW = frozenset(
    {"topic", "subscription", "consumer", "producer", "key", "msg_id", "seq", "uid", "result",
     "redelivery_count", "drained"}
)  # fmt: skip


class TraceWriter:
    """Records events to ``path`` (``.jsonl`` or ``.jsonl.gz``) or only in memory when ``path`` is None.

    ``clock`` returns nanoseconds; real runs use :func:`time.monotonic_ns`, the model passes its simulated
    clock so that the same seed gives the same trace byte for byte.
    """

    def __init__(
        self,
        path: str | Path | None,
        header: TraceHeader,
        *,
        clock: Clock = time.monotonic_ns,
        keep: bool = True,
    ) -> None:
        self.path = None if path is None else Path(path)
        self.header = header
        self._clock = clock
        self._lock = threading.Lock()
        self._next_i = 0
        self._last_t = 0
        self._listeners: list[Listener] = []
        self.events: list[Event] | None = [] if keep else None
        self._fh: IO[str] | None = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self.path.suffix == ".gz":
                self._fh = gzip.open(self.path, "wt", encoding="utf-8")  # noqa: SIM115 - closed in close()
            else:
                self._fh = open(self.path, "w", encoding="utf-8")  # noqa: SIM115 - closed in close()
            self._fh.write(header.to_json() + "\n")
            self._fh.flush()

    def add_listener(self, listener: Listener) -> None:
        """Call ``listener(event)`` for every event recorded from now on, in order, under the writer's lock."""
        self._listeners.append(listener)

    def record(self, op: Op | str, **fields: Any) -> Event:
        """Record one event now.  Core fields by keyword; anything else becomes an extension field."""
        core = {k: v for k, v in fields.items() if k in _CORE_KW}
        extra = {k: v for k, v in fields.items() if k not in _CORE_KW and v is not None}
        if "result" in core and core["result"] is not None:
            core["result"] = Result(core["result"])
        with self._lock:
            t = max(self._clock(), self._last_t)
            event = Event(i=self._next_i, t=t, op=Op(op), extra=extra, **core)
            self._next_i += 1
            self._last_t = t
            if self._fh is not None:
                self._fh.write(event.to_json() + "\n")
                self._fh.flush()
            if self.events is not None:
                self.events.append(event)
            for listener in self._listeners:
                listener(event)
        return event

    @property
    def count(self) -> int:
        return self._next_i

    def close(self) -> None:
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
