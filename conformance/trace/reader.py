"""Reading traces: JSON Lines (optionally gzip) or Parquet, validated, as events or as columnar batches.

Two ways to read the same trace:

* :meth:`TraceSource.events` decodes line by line with :mod:`json` and validates each event with
  :class:`~conformance.trace.validation.EventValidator`: complete (every extension field) and exact in its
  errors.
* :meth:`TraceSource.batches` is the fast path the checkers use: pyarrow parses JSON Lines (or reads Parquet
  row groups) into record batches of :data:`FAST_SCHEMA`, checked with vector operations.  Fields the checkers
  do not use are dropped.  If anything looks wrong, the input is re-read with the exact path to name the line
  and the problem, so both paths raise the same :class:`~conformance.trace.validation.TraceFormatError`.
  :meth:`TraceSource.row_batches` is the same, shaped for the streaming checker (:mod:`.decode`) and read
  ahead in a background thread.  :meth:`TraceSource.unchecked_batches` is the same read before the vector
  checks, for a caller that keeps only some rows and checks those itself (a Spark task, its own part).

A malformed trace always raises ``TraceFormatError`` (an ``InvalidArgument``: exit code 2 in the CLI), with
the file, the line (or Parquet row) and what is wrong.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from conformance.trace.events import Event
from conformance.trace.header import HeaderError, TraceHeader
from conformance.trace.validation import BatchState, EventValidator, TraceFormatError, check_batch

__all__ = [
    "PARQUET_HEADER_KEY",
    "PARQUET_JSON_COLUMNS_KEY",
    "FastPathFailed",
    "FastPathUnavailable",
    "TraceSource",
    "decode_json_column",
    "fast_schema",
    "open_trace",
    "read_trace",
]

PARQUET_HEADER_KEY = b"keyshared.header"
PARQUET_JSON_COLUMNS_KEY = b"keyshared.json_columns"

_GZIP_MAGIC = b"\x1f\x8b"
_PARQUET_MAGIC = b"PAR1"


def fast_schema() -> Any:
    """The pyarrow schema of the columns the checkers read (``FAST_SCHEMA``; extension fields they ignore are
    dropped)."""
    return _SCHEMA.get()


def _fast_schema() -> Any:
    import pyarrow as pa

    policy = pa.struct(
        [
            ("key_shared_mode", pa.string()),
            ("allow_out_of_order_delivery", pa.bool_()),
            ("sticky_ranges", pa.list_(pa.list_(pa.int64()))),
        ]
    )
    return pa.schema(
        [
            ("i", pa.int64()),
            ("t", pa.int64()),
            ("op", pa.string()),
            ("topic", pa.string()),
            ("subscription", pa.string()),
            ("consumer", pa.string()),
            ("producer", pa.string()),
            ("key", pa.string()),
            ("msg_id", pa.string()),
            ("seq", pa.int64()),
            ("uid", pa.string()),
            ("result", pa.string()),
            ("redelivery_count", pa.int64()),
            ("drained", pa.bool_()),
            ("t0", pa.int64()),
            ("deliver_after_ms", pa.int64()),  # on a publish: delayed delivery (the delayed check reads it)
            ("fault", pa.string()),  # on a fault: what happened (an expiry is judged: checks/expiry.py)
            ("expire_seconds", pa.int64()),  # on an expire_messages fault: the TTL it ran with
            ("error", pa.string()),  # the client's error (on a refused open: checks/assignment.py judges it)
            ("send_seq", pa.int64()),  # on a publish of a batch sent with its ids: CommandSend.sequence_id
            ("highest_seq", pa.int64()),  # ... and its highest_sequence_id (checks/duplicates.py dup_threshold)
            ("name", pa.string()),
            ("receiver_queue", pa.int64()),
            ("policy", policy),
            ("consumers", pa.list_(pa.string())),  # on a fault: the consumers it touched
            ("unattributed", pa.list_(pa.string())),  # on a fault: handlers the driver could not name
        ]
    )


class _LazySchema:
    _value: Any = None

    def get(self) -> Any:
        if self._value is None:
            self._value = _fast_schema()
        return self._value


_SCHEMA = _LazySchema()


def __getattr__(name: str) -> Any:  # FAST_SCHEMA without importing pyarrow at module import
    if name == "FAST_SCHEMA":
        return _SCHEMA.get()
    raise AttributeError(name)


@dataclass(frozen=True)
class TraceSource:
    """An opened trace file: its header, its format, and two ways to read its events."""

    path: Path
    header: TraceHeader
    format: str  #: "jsonl", "parquet" or "bucketed" (a directory in the bucketed layout: :mod:`.buckets`)
    compressed: bool = False
    has_header_line: bool = False
    #: a directory of Parquet chunks: its chunk files in trace order (by name); empty for one file
    chunks: tuple[Path, ...] = ()
    #: the bucketed layout's manifest (a :class:`~conformance.trace.buckets.BucketLayout`), else None
    layout: Any = None

    @property
    def files(self) -> tuple[Path, ...]:
        """The files holding the events, in trace order (one, or a directory's chunks)."""
        return self.chunks or (self.path,)

    @property
    def source(self) -> str:
        return str(self.path)

    def known_events(self) -> int | None:
        """How many events the trace holds, when its metadata says so without a read (a bucketed layout's
        manifest, Parquet footers); None for JSON Lines."""
        if self.format == "bucketed":
            return int(self.layout.events)
        if self.format != "parquet":
            return None
        import pyarrow.parquet as pq

        return int(sum(pq.ParquetFile(f).metadata.num_rows for f in self.files))

    # -- exact path ------------------------------------------------------------------------------------
    def events(self) -> Iterator[Event]:
        """Every event, validated one by one (all extension fields kept)."""
        if self.format in ("parquet", "bucketed"):
            yield from self._parquet_events()
        else:
            yield from self._jsonl_events()

    def _open_text(self) -> IO[str]:
        if self.compressed:
            return gzip.open(self.path, "rt", encoding="utf-8")
        return open(self.path, encoding="utf-8")

    def _jsonl_events(self) -> Iterator[Event]:
        validator = EventValidator(self.source)
        with self._open_text() as fh:
            line_no = 0
            for line_no, line in enumerate(_decoded_lines(fh, self.source), start=1):
                if line_no == 1 and self.has_header_line:
                    continue
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise validator.fail(line_no, f"not valid JSON ({_json_problem(line, exc)})") from None
                yield validator.event(obj, line_no)

    def _parquet_events(self) -> Iterator[Event]:
        validator = EventValidator(self.source, unit="row")
        if self.format == "bucketed":
            row = 0
            for batch in self.unchecked_batches():
                for obj in batch.to_pylist():
                    yield validator.event(_without_nulls(obj), row)
                    row += 1
            return
        for path in self.files:
            validator.source = str(path)  # a chunk's problem names the chunk and its row; order spans chunks
            pf = _open_parquet(path)
            json_columns = _json_columns(pf.schema_arrow.metadata)
            row = 0
            for batch in pf.iter_batches(batch_size=65536):
                for obj in batch.to_pylist():
                    clean = {k: v for k, v in obj.items() if v is not None}
                    for name in json_columns:
                        if name in clean and isinstance(clean[name], str):
                            try:
                                clean[name] = json.loads(clean[name])
                            except json.JSONDecodeError:
                                raise validator.fail(
                                    row, f"column {name!r} holds invalid JSON: {clean[name]!r}"
                                ) from None
                    yield validator.event(clean, row)
                    row += 1

    # -- fast path -------------------------------------------------------------------------------------
    def batches(self, *, use_threads: bool = False, block_size: int = 8 << 20) -> Iterator[Any]:
        """Validated pyarrow record batches, in trace order: the columns of :data:`FAST_SCHEMA` and the
        derived ``mkey``, ``stream``, ``ledger``, ``entry``, ``bidx``
        (:data:`~conformance.trace.validation.DERIVED_COLUMNS`)."""
        try:
            # (Parquet: pyarrow decodes a batch's columns in its thread pool, as it does by default)
            threads = use_threads or self.format == "parquet"
            yield from self._checked(self.unchecked_batches(use_threads=threads, block_size=block_size))
        except FastPathFailed as failed:
            self._locate(failed.problem)

    def unchecked_batches(
        self, *, use_threads: bool = False, block_size: int = 8 << 20, dictionaries: Collection[str] = ()
    ) -> Iterator[Any]:
        """The trace's pyarrow record batches as stored, in trace order, *not yet validated*: the columns of
        :data:`FAST_SCHEMA` (a column the file lacks is null; a Parquet file's JSON columns decoded), without the
        derived columns.

        For a caller that keeps only some rows and validates those itself, batch after batch, with
        :func:`~conformance.trace.validation.check_batch` and one :class:`~conformance.trace.validation.BatchState`
        (a Spark task checking its own part: :mod:`conformance.spark.rows`); everything else reads
        :meth:`batches`.  ``use_threads``: let pyarrow decode a batch in its thread pool (worth it only with a
        core to spare); ``block_size``: bytes of JSON Lines per batch (a Parquet batch is 65,536 rows).
        ``dictionaries``: string columns a Parquet file gives dictionary-encoded, as it stores them (columns of
        few distinct values, such as ``op``, ``consumer`` or ``result``, then cost no string per row: measured
        four times cheaper to read); their type is then ``dictionary<int32, string>``, which
        :func:`~conformance.trace.validation.check_batch` and :func:`~conformance.trace.decode.row_columns` take.
        A column of many distinct values (``msg_id``, ``uid``, and the keys of a trace that gives each message
        its own) costs more so, every batch carrying the dictionary of its row group.  JSON Lines ignores it.

        Raises :class:`FastPathFailed` when pyarrow cannot read the trace as that schema (a column of another
        type, text that is not JSON); its ``problem`` is terse: :meth:`batches` words the trace's first problem
        for users (:class:`~conformance.trace.validation.TraceFormatError`, or :class:`FastPathUnavailable`).
        """
        if self.format == "bucketed":  # the whole trace, merged by i (the checkers read it bucket by bucket)
            from conformance.trace.buckets import whole_batches

            yield from whole_batches(self.layout)
        elif self.format == "parquet":
            for path in self.files:
                yield from _parquet_file_batches(path, use_threads, frozenset(dictionaries))
        else:
            yield from self._jsonl_batches(use_threads, block_size)

    def row_batches(self, *, use_threads: bool = False, read_ahead: bool = True) -> Iterator[Any]:
        """:meth:`batches` in the form the streaming checker decodes (:func:`~conformance.trace.decode.row_columns`),
        read, validated and shaped in a background thread while the caller works (``read_ahead``; see
        :mod:`~conformance.trace.readahead`).  Errors are those of :meth:`batches`, raised at the same point."""
        from conformance.trace.decode import row_columns

        def shaped() -> Iterator[Any]:
            for batch in self.batches(use_threads=use_threads):
                yield row_columns(batch)

        if not read_ahead:
            return shaped()
        from conformance.trace.readahead import read_ahead as ahead

        return ahead(shaped)

    def _checked(self, batches: Iterable[Any]) -> Iterator[Any]:
        state = BatchState()
        for batch in batches:
            problem, derived = check_batch(batch, state)
            if problem is not None:
                raise FastPathFailed(problem)
            yield derived

    def _jsonl_batches(self, use_threads: bool, block_size: int) -> Iterator[Any]:
        import pyarrow as pa
        import pyarrow.json as pj

        schema = _SCHEMA.get()
        raw: Any = gzip.open(self.path, "rb") if self.compressed else open(self.path, "rb")  # noqa: SIM115
        with raw:
            if self.has_header_line:
                raw.readline()
            try:
                reader = pj.open_json(
                    raw,
                    read_options=pj.ReadOptions(use_threads=use_threads, block_size=block_size),
                    parse_options=pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"),
                )
                while True:
                    try:
                        batch = reader.read_next_batch()
                    except StopIteration:
                        break
                    yield batch
            except (pa.ArrowInvalid, pa.ArrowTypeError, OSError, EOFError) as exc:
                raise FastPathFailed(str(exc)) from None

    def _locate(self, problem: str) -> None:
        """The fast path saw a problem: find and word it with the exact path (which raises).

        If the exact path accepts the trace after all (a value pyarrow cannot hold but the format allows),
        raise :class:`FastPathUnavailable` so the caller reads :meth:`events` instead.
        """
        for _ in self.events():
            pass
        raise FastPathUnavailable(problem)


class FastPathUnavailable(Exception):
    """The columnar path cannot read this (valid) trace; read it with :meth:`TraceSource.events`."""


class FastPathFailed(Exception):
    """The columnar path cannot take this trace as it is (:meth:`TraceSource.unchecked_batches`, or a problem
    :func:`~conformance.trace.validation.check_batch` found).

    ``problem`` says what in a few words, without the row: it is not meant for users.  :meth:`TraceSource.batches`
    reads the trace again with the exact path to word its first problem (a ``TraceFormatError`` naming the file,
    the row and the rule), so a message never depends on which path, or which Spark task, saw it first.
    """

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


def _parquet_file_batches(path: Path, use_threads: bool, dictionaries: frozenset[str] = frozenset()) -> Iterator[Any]:
    """The batches of one Parquet file as :data:`FAST_SCHEMA` (missing columns null, JSON columns decoded; the
    string columns named in ``dictionaries`` dictionary-encoded)."""
    import pyarrow as pa

    schema = _SCHEMA.get()
    pf = _open_parquet(path)
    file_schema = pf.schema_arrow
    json_columns = _json_columns(file_schema.metadata)
    present = [f.name for f in schema if f.name in file_schema.names]
    for f in schema:
        if f.name in file_schema.names and f.name not in json_columns:
            have = file_schema.field(f.name).type
            if have != f.type and not _castable(have, f.type):
                raise FastPathFailed(f"column {f.name!r} has type {have}, not {f.type}")
    encoded = [name for name in present if name in dictionaries and name not in json_columns]
    if encoded:
        schema = pa.schema(
            [pa.field(f.name, pa.dictionary(pa.int32(), f.type)) if f.name in encoded else f for f in schema]
        )
        pf = _open_parquet(path, read_dictionary=encoded)
    for batch in pf.iter_batches(batch_size=65536, columns=present, use_threads=use_threads):
        arrays = []
        for f in schema:
            if f.name not in batch.schema.names:
                arrays.append(pa.nulls(batch.num_rows, f.type))
            elif f.name in json_columns:
                arrays.append(decode_json_column(batch.column(f.name), f.type))
            else:
                column = batch.column(f.name)
                arrays.append(column if column.type == f.type else column.cast(f.type))
        yield pa.RecordBatch.from_arrays(arrays, schema=schema)


def _castable(have: Any, want: Any) -> bool:
    import pyarrow.types as pt

    if pt.is_integer(want):
        return bool(pt.is_integer(have))
    if pt.is_string(want):
        return bool(pt.is_string(have) or pt.is_large_string(have) or pt.is_dictionary(have))
    return False


def decode_json_column(column: Any, want: Any) -> Any:
    """A JSON-text column decoded to ``want``; only its non-null values are parsed (``policy`` is set on opens
    only, so nearly every row of a large trace is null)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(column)
    if column.null_count == n:
        return pa.nulls(n, want)
    try:
        if column.null_count == 0:
            return pa.array([json.loads(v) for v in column.to_pylist()], type=want)
        present = pc.is_valid(column)
        decoded = pa.array([json.loads(v) for v in column.filter(present).to_pylist()], type=want)
        # scatter back: the k-th present row takes the k-th decoded value
        positions = pc.subtract(pc.cumulative_sum(present.cast(pa.int64())), 1)
        return pc.if_else(present, pc.take(decoded, pc.max_element_wise(positions, 0)), pa.nulls(n, want))
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, json.JSONDecodeError) as exc:
        raise FastPathFailed(str(exc)) from None


def _json_columns(metadata: dict[bytes, bytes] | None) -> frozenset[str]:
    if not metadata or PARQUET_JSON_COLUMNS_KEY not in metadata:
        return frozenset()
    try:
        return frozenset(json.loads(metadata[PARQUET_JSON_COLUMNS_KEY]))
    except (json.JSONDecodeError, TypeError):
        return frozenset()


def _open_parquet(path: Path, read_dictionary: list[str] | None = None) -> Any:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path, read_dictionary=read_dictionary)
    except (pa.ArrowInvalid, OSError) as exc:
        raise TraceFormatError(str(path), None, f"not a readable Parquet file ({exc})") from None


def _json_problem(line: str, exc: json.JSONDecodeError) -> str:
    """What is wrong with one line of JSON Lines and where, as its 1-based column on that line.

    ``json`` counts columns from the last newline before the problem: a line cut short (``..."topic":`` then
    the newline) is a value missing at the end of the line, which ``json`` places at "line 2, column 1".  The
    column here is counted on the line itself (past its end when the line stops too early).
    """
    text = line.rstrip("\r\n")
    where = f"at column {len(text) + 1}, the end of the line" if exc.pos >= len(text) else f"at column {exc.pos + 1}"
    msg = exc.msg[: -len(" at")] if exc.msg.endswith(" at") else exc.msg  # "Invalid control character at"
    return f"{msg} {where}"


def _decoded_lines(fh: IO[str], source: str) -> Iterator[str]:
    try:
        yield from fh
    except UnicodeDecodeError as exc:
        raise TraceFormatError(source, None, f"not UTF-8 text ({exc.reason})") from None
    except (OSError, EOFError) as exc:  # truncated or corrupt gzip
        raise TraceFormatError(source, None, f"cannot be decompressed ({exc})") from None


def open_trace(path: str | Path) -> TraceSource:
    """Open a trace file (or a directory of Parquet chunks), read its header, and tell its format from its
    first bytes."""
    p = Path(path)
    try:
        with open(p, "rb") as fh:
            magic = fh.read(4)
    except FileNotFoundError:
        raise TraceFormatError(str(p), None, "no such file") from None
    except IsADirectoryError:
        return _open_chunks(p)
    except OSError as exc:
        raise TraceFormatError(str(p), None, f"cannot be read ({exc.strerror})") from None
    if magic == _PARQUET_MAGIC:
        pf = _open_parquet(p)
        metadata = pf.schema_arrow.metadata or {}
        header = TraceHeader.unknown()
        if PARQUET_HEADER_KEY in metadata:
            header = _header_from_text(metadata[PARQUET_HEADER_KEY].decode("utf-8", "replace"), str(p), None)
        return TraceSource(p, header, "parquet")
    compressed = magic[:2] == _GZIP_MAGIC
    opener = gzip.open(p, "rt", encoding="utf-8") if compressed else open(p, encoding="utf-8")  # noqa: SIM115
    with opener as fh:
        first = ""
        for line in _decoded_lines(fh, str(p)):
            first = line
            break
    header, has_header = TraceHeader.unknown(), False
    if first.strip():
        try:
            obj = json.loads(first)
        except json.JSONDecodeError as exc:
            raise TraceFormatError(str(p), "1", f"not valid JSON ({_json_problem(first, exc)})") from None
        if isinstance(obj, dict) and "trace_format" in obj:
            header, has_header = _header_from_obj(obj, str(p), "1"), True
    return TraceSource(p, header, "jsonl", compressed=compressed, has_header_line=has_header)


def _without_nulls(obj: Any) -> Any:
    """A row as the format writes it: no null field, in objects nested too (a stored policy)."""
    if isinstance(obj, dict):
        return {k: _without_nulls(v) for k, v in obj.items() if v is not None}
    return obj


def _open_chunks(directory: Path) -> TraceSource:
    """A directory of Parquet chunks (as long runs write them): its ``*.parquet`` files in name order, one
    trace.  Files whose names start with ``_`` or ``.`` are skipped (``_SUCCESS``, Spark's checksums).  A
    directory with a ``manifest.json`` is in the bucketed layout (:mod:`.buckets`)."""
    from conformance.trace.buckets import MANIFEST, read_manifest

    if (directory / MANIFEST).exists():
        layout = read_manifest(directory)
        return TraceSource(directory, layout.header, "bucketed", layout=layout)
    chunks = tuple(sorted(f for f in directory.glob("*.parquet") if f.is_file() and not f.name.startswith(("_", "."))))
    if not chunks:
        hint = _trace_inside(directory)
        also = f"; did you mean {hint}?" if hint is not None else ""
        raise TraceFormatError(str(directory), None, f"is a directory without Parquet chunks (*.parquet){also}")
    header = TraceHeader.unknown()
    for chunk in chunks:  # the header: the first chunk carrying one; every chunk carrying one must agree
        metadata = _open_parquet(chunk).schema_arrow.metadata or {}
        if PARQUET_HEADER_KEY in metadata:
            found = _header_from_text(metadata[PARQUET_HEADER_KEY].decode("utf-8", "replace"), str(chunk), None)
            if header == TraceHeader.unknown():
                header = found
            elif found != header:
                raise TraceFormatError(str(chunk), None, f"header differs from the one in {chunks[0].name}")
    return TraceSource(directory, header, "parquet", chunks=chunks)


#: What a run's artifacts directory names its trace: ``trace.jsonl`` (and compressed or Parquet forms) from
#: ``keyshared run``/``replay``, ``trace/`` (a directory of chunks) from ``keyshared soak``.
_TRACE_NAMES = ("trace.jsonl", "trace.jsonl.gz", "trace.parquet", "trace")


def _trace_inside(directory: Path) -> Path | None:
    """The trace a run's artifacts directory holds (given where the trace was meant), or None."""
    for name in _TRACE_NAMES:
        candidate = directory / name
        if candidate.is_file() or (candidate.is_dir() and any(candidate.glob("*.parquet"))):
            return candidate
    return None


def _header_from_text(text: str, source: str, where: str | None) -> TraceHeader:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceFormatError(source, where, f"header is not valid JSON ({exc.msg})") from None
    if not isinstance(obj, dict):
        raise TraceFormatError(source, where, "header is not a JSON object")
    return _header_from_obj(obj, source, where)


def _header_from_obj(obj: dict[str, Any], source: str, where: str | None) -> TraceHeader:
    try:
        return TraceHeader.from_dict(obj)
    except HeaderError as exc:
        raise TraceFormatError(source, where, f"header: {exc}") from None


def read_trace(path: str | Path) -> tuple[TraceHeader, list[Event]]:
    """The header and every event of a trace file (validated; fine for small traces and tests)."""
    source = open_trace(path)
    return source.header, list(source.events())
