"""Events as rows: one tuple of plain values per event, the form a trace takes on its way to disk.

Why rows: recording an event is work done in the threads that drive the clients, and against a real broker
every microsecond of it is taken from them (Python runs one thread at a time).  An :class:`Event` is a frozen
dataclass of fifteen fields, with enums for ``op`` and ``result``: building one costs several times a tuple of
the same values, and pickling it for another process costs about five times as much again.  So the
:class:`~conformance.trace.writer.TraceWriter` makes a row first and an ``Event`` only for those who ask for
one; the Parquet chunks are written from rows (:func:`conformance.trace.parquet.write_parquet_rows`), and the
soak's sink process receives rows.

A row is the core fields in :data:`~conformance.trace.events.CORE_FIELDS` order, ``op`` and ``result`` as
their string values, then the extension fields (a dict, or None when there are none).
"""

from __future__ import annotations

from typing import Any

from conformance.trace.events import CORE_FIELDS, Event, Op, Result

__all__ = ["EXTRA", "OP", "Row", "event_row", "row_event"]

Row = tuple[Any, ...]

#: Positions in a row.
OP = CORE_FIELDS.index("op")
EXTRA = len(CORE_FIELDS)

_OPS = {op.value: op for op in Op}
_RESULTS = {r.value: r for r in Result}


def event_row(e: Event) -> Row:
    """``e`` as a row."""
    return (
        e.i, e.t, e.op.value, e.topic, e.subscription, e.consumer, e.producer, e.key, e.msg_id, e.seq, e.uid,
        None if e.result is None else e.result.value, e.redelivery_count, e.drained, e.extra or None,
    )  # fmt: skip


def row_event(row: Row) -> Event:
    """The event of ``row`` (equal to the one :func:`event_row` was given)."""
    i, t, op, topic, sub, consumer, producer, key, msg_id, seq, uid, result, rc, drained, extra = row
    return Event(
        i, t, _OPS[op], topic, sub, consumer, producer, key, msg_id, seq, uid,
        None if result is None else _RESULTS[result], rc, drained, extra or {},
    )  # fmt: skip
