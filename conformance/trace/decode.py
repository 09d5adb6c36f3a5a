"""Arrow record batches to the columns of Python values the streaming checker works on, in two stages.

The streaming checker (:mod:`conformance.checks.streaming`) is a loop over Python values: per event the fields
of :data:`ROW_FIELDS`.  Turning a stored trace's columns into those values costs nearly as much as the checks
themselves when it is done value by value, so it is split in two:

* :func:`row_columns` (Arrow only): derives the message key, stream and position from ``topic`` and ``msg_id``
  when the batch lacks them (``conformance.trace.identity``), fills the defaults the loop expects (the empty
  key, position ``-1``) and dictionary-encodes the string columns.  Its work is done in pyarrow's kernels,
  which release the GIL, so a reader can run it in a background thread while the checker works
  (:meth:`~conformance.trace.reader.TraceSource.row_batches`);
* :class:`RowDecoder` (Python objects): one list per field.  A dictionary-encoded column becomes a list by
  indexing a small array of its distinct values (numpy, not one pyarrow call per value), so every distinct
  string is made once per batch, and equal labels (op, consumer, key, stream, producer, result) are the same
  object across batches: the checker's dictionaries then find them by identity, with the hash computed once.

Both engines call this: the Python engine on the batches of a stored trace, the Spark engine on the parts it
routes (``StreamingChecker.feed_batch`` takes a batch of either form).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["ROW_FIELDS", "DecodedBatch", "RowDecoder", "decode_batch", "is_row_columns", "row_columns"]

#: The fields the checker's loop reads, in order.  ``key`` is never None (the empty key instead); ``ledger``,
#: ``entry`` and ``batch`` are ``-1`` where there is no message id; ``n`` is the event's index in its batch: the
#: fields only rare ops need (:data:`RARE_FIELDS`) are fetched by it.
ROW_FIELDS: tuple[str, ...] = (
    "i", "t", "op", "consumer", "key", "mkey", "stream", "uid", "producer", "seq", "result", "t0", "ledger", "entry",
    "batch", "redelivery_count", "n",
)  # fmt: skip
#: Fields only rare ops read (open, end, fault, failover): kept as Arrow columns, read one event at a time.
RARE_FIELDS: tuple[str, ...] = (
    "topic", "subscription", "name", "policy", "drained", "consumers", "unattributed", "deliver_after_ms", "fault",
    "expire_seconds", "error", "send_seq", "highest_seq", "receiver_queue",
)  # fmt: skip
#: Labels with few distinct values: one object per value for the whole trace.
_LABELS = frozenset({"op", "consumer", "key", "stream", "producer", "result"})
#: Strings encoded as dictionaries by :func:`row_columns` (labels, and the per-message ``mkey`` and ``uid``,
#: which recur in a message's publish, receive and ack).
_ENCODED = _LABELS | {"mkey", "uid"}
_POSITION = ("ledger", "entry", "batch")
_INTEGERS = ("i", "t", "seq", "t0", "redelivery_count")
#: Schema metadata marking a batch :func:`row_columns` made.
_MARK = b"keyshared.row_columns"
#: Interned labels kept at most (a trace with more distinct keys still decodes; the table starts again).
_MAX_INTERNED = 1 << 20


def is_row_columns(batch: Any) -> bool:
    """Whether ``batch`` is already in the form :func:`row_columns` gives."""
    metadata = batch.schema.metadata
    return bool(metadata) and _MARK in metadata


def row_columns(batch: Any) -> Any:
    """The Arrow stage: a record batch of the columns ``ROW_FIELDS[:-1]`` then the present :data:`RARE_FIELDS`.

    ``batch``: a validated batch of the reader's schema (``FAST_SCHEMA``), with or without the derived columns
    (``mkey``, ``stream``, ``ledger``, ``entry``, ``bidx``) that :func:`~conformance.trace.validation.check_batch`
    adds.  Missing columns are null.  String columns of :data:`ROW_FIELDS` come out dictionary-encoded with
    null as a dictionary value (so the indices have no nulls).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if is_row_columns(batch):
        return batch
    n = batch.num_rows
    names = batch.schema.names
    col = batch.column

    def get(name: str, kind: Any) -> Any:
        return col(name) if name in names else pa.nulls(n, kind)

    if "mkey" in names:
        derived = {name: col(name) for name in ("mkey", "stream", "ledger", "entry")} | {"batch": col("bidx")}
    else:
        from conformance.trace.identity import derive_message_columns_with_position

        topic, msg_id = get("topic", pa.string()), get("msg_id", pa.string())
        mkey, stream, _canon, (ledger, entry, index) = derive_message_columns_with_position(topic, msg_id)
        derived = {"mkey": mkey, "stream": stream, "ledger": ledger, "entry": entry, "batch": index}
    key = get("key", pa.string())
    derived["key"] = pc.fill_null(key, "") if key.null_count else key
    minus_one = pa.scalar(-1, pa.int64())
    arrays: list[Any] = []
    for name in ROW_FIELDS[:-1]:
        kind = pa.int64() if name in _INTEGERS else pa.string()
        array = derived[name] if name in derived else get(name, kind)
        if name in _POSITION and array.null_count:
            array = pc.fill_null(array, minus_one)
        elif name in _ENCODED and array.null_count < n:
            if not pa.types.is_dictionary(array.type):
                array = pc.dictionary_encode(array, null_encoding="encode")
            elif array.null_count:  # null indices become a null in the dictionary
                dictionary = pa.concat_arrays([array.dictionary, pa.nulls(1, array.dictionary.type)])
                indices = pc.fill_null(array.indices, pa.scalar(len(array.dictionary), array.indices.type))
                array = pa.DictionaryArray.from_arrays(indices, dictionary)
        arrays.append(array)
    rare = [name for name in RARE_FIELDS if name in names]
    arrays += [col(name) for name in rare]
    fields = [*ROW_FIELDS[:-1], *rare]
    schema = pa.schema([pa.field(name, a.type) for name, a in zip(fields, arrays, strict=True)], metadata={_MARK: b"1"})
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


@dataclass(frozen=True)
class DecodedBatch:
    """One batch as the checker's loop reads it: ``columns[f][n]`` is field ``ROW_FIELDS[f]`` of event ``n``
    (all fields but ``n``), ``count`` events, and ``extras(n)``: event ``n``'s :data:`RARE_FIELDS`."""

    columns: list[list[Any]]
    count: int
    extras: Callable[[int], dict[str, Any]]

    def row(self, n: int) -> tuple[Any, ...]:
        """Event ``n`` as a tuple of :data:`ROW_FIELDS`."""
        return (*(column[n] for column in self.columns), n)


class RowDecoder:
    """The Python stage: batches (either form) to :class:`DecodedBatch`, labels shared across batches.

    One decoder per checker (its table of labels grows with the trace's distinct labels, as the checker's own
    state does).
    """

    def __init__(self) -> None:
        self._labels: dict[str, str] = {}

    def decode(self, batch: Any) -> DecodedBatch:
        import pyarrow as pa

        rc = row_columns(batch)
        n = rc.num_rows
        columns: list[list[Any]] = []
        for index, name in enumerate(ROW_FIELDS[:-1]):
            array = rc.column(index)
            if array.null_count == n:
                columns.append([None] * n)
            elif pa.types.is_dictionary(array.type):
                columns.append(self._strings(array, name in _LABELS))
            elif array.null_count or array.type != pa.int64():
                columns.append(array.to_pylist())
            else:
                columns.append(array.to_numpy().tolist())
        rare = rc.schema.names[len(ROW_FIELDS) - 1 :]

        def extras(row: int) -> dict[str, Any]:
            return {name: rc.column(name)[row].as_py() for name in rare}

        return DecodedBatch(columns, n, extras)

    def _strings(self, array: Any, label: bool) -> list[Any]:
        """A dictionary-encoded string column as a list: its distinct values made once, then indexed."""
        import numpy as np

        dictionary = array.dictionary
        lookup: Any
        if label:
            labels = self._labels
            if len(labels) > _MAX_INTERNED:
                labels.clear()
            texts = dictionary.to_pylist()
            values = list(map(labels.get, texts))  # after the first batches, every label is known
            if None in values:
                for k, text in enumerate(texts):
                    if values[k] is None and text is not None:
                        values[k] = labels.setdefault(text, sys.intern(text))
            lookup = np.empty(len(values), dtype=object)
            lookup[:] = values
        else:
            lookup = np.empty(len(dictionary), dtype=object)
            lookup[:] = dictionary.to_pylist()
        indices = array.indices
        if indices.null_count:  # a dictionary array from elsewhere: nulls in the indices, not the dictionary
            grown = np.empty(len(lookup) + 1, dtype=object)  # an object array starts as all None
            grown[:-1] = lookup
            lookup = grown
            indices = indices.fill_null(len(lookup) - 1)
        result: list[Any] = lookup[indices.to_numpy()].tolist()
        return result


def decode_batch(batch: Any) -> DecodedBatch:
    """One batch decoded by a fresh :class:`RowDecoder` (labels shared within the batch only)."""
    return RowDecoder().decode(batch)
