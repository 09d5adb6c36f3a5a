"""Append-only, crash-safe trace recording.

Every event is written and flushed as it happens, so a run that hangs, crashes or is interrupted still
leaves a trace that can be checked.  The writer is thread-safe: consumer threads record concurrently and
the lock gives the single observation order (``i``) the format needs; ``t`` comes from one monotonic clock
and is forced non-decreasing.  Listeners (the live checker, progress reporting) see each event in order.

Each event is made as a row first (:mod:`.rows`), and as an :class:`Event` only when something wants one (a
file, ``keep``, an event listener): row listeners (:meth:`TraceWriter.add_row_listener`) get the row alone,
which is what a soak against a real broker records through, in the threads that drive the clients.
:meth:`TraceWriter.emit` is :meth:`TraceWriter.record` for the recorder's frequent events, without keyword
arguments to sort.
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
from conformance.trace.rows import Row, row_event

__all__ = ["Clock", "TraceWriter"]

Clock = Callable[[], int]
Listener = Callable[[Event], None]
RowListener = Callable[[Row], None]

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
        self._row_listeners: list[RowListener] = []
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

    def add_row_listener(self, listener: RowListener) -> None:
        """Call ``listener(row)`` (:mod:`.rows`) for every event recorded from now on, in order, under the writer's
        lock, before the event listeners."""
        self._row_listeners.append(listener)

    def record(self, op: Op | str, **fields: Any) -> Event:
        """Record one event now.  Core fields by keyword; anything else becomes an extension field."""
        get = fields.get
        result = get("result")
        if result is not None:
            result = Result(result).value
        extra = {k: v for k, v in fields.items() if k not in _CORE_KW and v is not None}
        event = self._commit(
            Op(op).value, get("topic"), get("subscription"), get("consumer"), get("producer"), get("key"),
            get("msg_id"), get("seq"), get("uid"), result, get("redelivery_count"), get("drained"), extra or None,
            want_event=True,
        )  # fmt: skip
        assert event is not None
        return event

    def emit(
        self,
        op: str,
        topic: str | None = None,
        subscription: str | None = None,
        consumer: str | None = None,
        producer: str | None = None,
        key: str | None = None,
        msg_id: str | None = None,
        seq: int | None = None,
        uid: str | None = None,
        result: str | None = None,
        redelivery_count: int | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        """Record one event now, as :meth:`record` would, without making an :class:`Event` unless something wants
        one.  For the recorder's frequent events (the threads that drive the clients call it): ``op`` is an
        :class:`Op` value and ``result`` a :class:`Result` value (strings, not checked here), ``extra`` holds no
        None values and no core field."""
        self._commit(
            op, topic, subscription, consumer, producer, key, msg_id, seq, uid, result, redelivery_count, None,
            extra or None, want_event=False,
        )  # fmt: skip

    def _commit(self, op: str, *fields: Any, want_event: bool) -> Event | None:
        """Give the event its place and time, then hand it to the file and the listeners (under the lock)."""
        event: Event | None = None
        with self._lock:
            t = self._clock()
            if t < self._last_t:
                t = self._last_t
            row = (self._next_i, t, op, *fields)
            self._next_i += 1
            self._last_t = t
            for row_listener in self._row_listeners:
                row_listener(row)
            if want_event or self._listeners or self._fh is not None or self.events is not None:
                event = self._event(row)
        return event

    def _event(self, row: Row) -> Event:
        """The event of ``row``, written to the file, kept and given to the event listeners (under the lock)."""
        event = row_event(row)
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
