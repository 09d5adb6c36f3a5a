"""Traces as Parquet: the same columns as the JSON Lines fields, the header in the file metadata.

Core fields keep their types (``i``, ``t``, ``seq``, ``redelivery_count`` int64; ``drained`` bool; the rest
strings).  Each extension field becomes a column of its own: scalar values keep their type (bool, int64,
float64 or string); a field holding objects or lists (``policy``) is stored as JSON text and listed in the
metadata key ``keyshared.json_columns`` so readers decode it.  The header is the JSON object of the JSON
Lines header line, under the metadata key ``keyshared.header``.

Converting JSON Lines to Parquet once pays off for large traces: both checker engines read Parquet several
times faster (``docs/checker.md``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from enum import Enum
from pathlib import Path
from typing import Any

from conformance.trace.events import CORE_FIELDS, Event
from conformance.trace.header import TraceHeader
from conformance.trace.reader import PARQUET_HEADER_KEY, PARQUET_JSON_COLUMNS_KEY, open_trace
from conformance.trace.rows import EXTRA, Row

__all__ = ["CORE_TYPES", "convert_to_parquet", "extension_kinds", "merge_kinds", "write_parquet", "write_parquet_rows"]

#: pyarrow type names of the core columns.
CORE_TYPES: dict[str, str] = {
    "i": "int64",
    "t": "int64",
    "op": "string",
    "topic": "string",
    "subscription": "string",
    "consumer": "string",
    "producer": "string",
    "key": "string",
    "msg_id": "string",
    "seq": "int64",
    "uid": "string",
    "result": "string",
    "redelivery_count": "int64",
    "drained": "bool",
}

_ROW_GROUP = 65536


def _ext_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    return "json"


def _merge_kind(a: str | None, b: str) -> str:
    if a is None or a == b:
        return b
    if {a, b} == {"int64", "float64"}:
        return "float64"
    return "json"


def merge_kinds(a: Mapping[str, str], b: Mapping[str, str]) -> dict[str, str]:
    """The column kinds that hold the values of both ``a`` and ``b`` (sorted by name)."""
    merged = dict(a)
    for name, kind in b.items():
        merged[name] = _merge_kind(merged.get(name), kind)
    return dict(sorted(merged.items()))


def extension_kinds(events: Iterable[Event]) -> dict[str, str]:
    """Extension column -> its kind (``int64``, ``float64``, ``bool``, ``string`` or ``json``), over ``events``."""
    return _extension_kinds(events)


def _extension_kinds(events: Iterable[Event]) -> dict[str, str]:
    kinds: dict[str, str] = {}
    for event in events:
        for name, value in event.extra.items():
            if name in CORE_TYPES or value is None:
                continue
            kinds[name] = _merge_kind(kinds.get(name), _ext_kind(value))
    return dict(sorted(kinds.items()))


def write_parquet(
    path: str | Path,
    header: TraceHeader,
    events: Iterable[Event] | Callable[[], Iterable[Event]],
    *,
    columns: Mapping[str, str] | None = None,
) -> Path:
    """Write ``events`` (an iterable, or a function returning a fresh iterable for two passes) to ``path``.

    ``columns`` (extension column -> kind, see :func:`extension_kinds`) adds columns the events may lack, so
    files written apart (the chunks of :mod:`.chunks`) share one schema; the events' own kinds are merged in.
    """
    if callable(events):
        kinds = _extension_kinds(events())
        rows: Iterable[Event] = events()
    else:
        materialized = list(events)
        kinds = _extension_kinds(materialized)
        rows = materialized
    if columns is not None:
        kinds = merge_kinds(columns, kinds)
    schema = _schema(header, kinds)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    import pyarrow.parquet as pq

    with pq.ParquetWriter(out, schema) as writer:
        buffer: list[Event] = []
        for event in rows:
            buffer.append(event)
            if len(buffer) >= _ROW_GROUP:
                writer.write_batch(_batch(buffer, schema, kinds))
                buffer.clear()
        if buffer:
            writer.write_batch(_batch(buffer, schema, kinds))
    return out


def write_parquet_rows(
    path: str | Path, header: TraceHeader, rows: list[Row], *, columns: Mapping[str, str] | None = None
) -> dict[str, str]:
    """:func:`write_parquet` for events given as rows (:mod:`.rows`): the same file, byte for byte, from a column
    per field taken straight from the tuples (no ``Event`` made).  Returns the extension columns it wrote
    (``columns`` and the rows' own, as :func:`merge_kinds` gives them)."""
    kinds: dict[str, str] = {}
    shadowing = False  # an extension field named like a core field (``to_dict`` lets it fill a None core field)
    for row in rows:
        extra = row[EXTRA]
        if extra:
            for name, value in extra.items():
                if name in CORE_TYPES:
                    shadowing = True
                elif value is not None:
                    kinds[name] = _merge_kind(kinds.get(name), _ext_kind(value))
    kinds = merge_kinds(columns or {}, kinds)
    schema = _schema(header, kinds)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    import pyarrow.parquet as pq

    with pq.ParquetWriter(out, schema) as writer:
        for start in range(0, len(rows), _ROW_GROUP):
            writer.write_batch(_row_batch(rows[start : start + _ROW_GROUP], schema, kinds, shadowing))
    return kinds


def _schema(header: TraceHeader, kinds: Mapping[str, str]) -> Any:
    """The file's schema: the core columns, then the extension columns ``kinds``; the header in the metadata."""
    import pyarrow as pa

    types = {
        "int64": pa.int64(),
        "string": pa.string(),
        "bool": pa.bool_(),
        "float64": pa.float64(),
        "json": pa.string(),
    }
    fields = [pa.field(name, types[kind]) for name, kind in CORE_TYPES.items()]
    fields += [pa.field(name, types[kind]) for name, kind in kinds.items()]
    json_columns = [name for name, kind in kinds.items() if kind == "json"]
    metadata = {
        PARQUET_HEADER_KEY: header.to_json().encode(),
        PARQUET_JSON_COLUMNS_KEY: json.dumps(json_columns).encode(),
    }
    return pa.schema(fields, metadata=metadata)


def _batch(events: list[Event], schema: Any, kinds: dict[str, str]) -> Any:
    """One record batch: the values of ``event.to_dict()`` column by column (built a column at a time, without
    a dict per event: a long soak writes every event through here)."""
    columns: dict[str, list[Any]] = {name: _core_column(events, name) for name in CORE_FIELDS}
    extras = [event.extra for event in events]
    return _to_batch(columns, extras, schema, kinds)


def _row_batch(rows: list[Row], schema: Any, kinds: dict[str, str], shadowing: bool) -> Any:
    """:func:`_batch` for rows: the core columns are the tuples' positions."""
    values = list(zip(*rows, strict=True))
    columns: dict[str, Any] = dict(zip(CORE_FIELDS, values, strict=False))
    extras = [extra or _NO_EXTRA for extra in values[EXTRA]]
    if shadowing:  # as _core_column: a None core field shows an extension field of the same name
        for name in CORE_FIELDS:
            column = list(columns[name])
            for n, value in enumerate(column):
                if value is None and name in extras[n]:
                    column[n] = extras[n][name]
            columns[name] = column
    return _to_batch(columns, extras, schema, kinds)


_NO_EXTRA: dict[str, Any] = {}


def _to_batch(columns: dict[str, Any], extras: list[dict[str, Any]], schema: Any, kinds: dict[str, str]) -> Any:
    import pyarrow as pa

    for name, kind in kinds.items():
        values = [extra.get(name) for extra in extras]
        if kind == "json":
            values = [None if v is None else json.dumps(v, separators=(",", ":"), ensure_ascii=False) for v in values]
        elif kind == "float64":
            values = [None if v is None else float(v) for v in values]
        columns[name] = values
    return pa.RecordBatch.from_arrays([pa.array(columns[f.name], f.type) for f in schema], schema=schema)


def _core_column(events: list[Event], name: str) -> list[Any]:
    """``[event.to_dict().get(name) for event in events]`` for a core field ``name``: an enum gives its value, and
    a core field that is None gives an extension field of the same name, if any (as ``to_dict`` lets it)."""
    out: list[Any] = []
    append = out.append
    for event in events:
        value = getattr(event, name)
        if value is None:
            extra = event.extra
            if extra:
                value = extra.get(name)
        elif isinstance(value, Enum):
            value = value.value
        append(value)
    return out


def convert_to_parquet(src: str | Path, dst: str | Path) -> Path:
    """Convert a JSON Lines trace (plain or gzip) to Parquet, validating it on the way (two passes)."""
    source = open_trace(src)
    return write_parquet(dst, source.header, source.events)
