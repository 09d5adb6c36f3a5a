"""Traces in the bucketed layout (trace format 2): a directory made for checking in parts, each part from its
own files only.

The split is the Spark engine's (:mod:`conformance.spark.split`, one definition): its *scope pass* puts each
event about one message (acks and nacks with their message's key) in the bucket of its message's key, and the
events that act across keys (``open``, ``close``, ``crash``, ``redeliver``, ``fault``, ``end``, ...) in every
part; its *identity pass* puts the publishes and uid-carrying receives in the bucket of the ``(producer, seq)``
they are evidence for.  Stored:

* ``manifest.json``: ``{"trace_format": 2, "layout": "bucketed", "buckets": N, "events": ..., "exact": ...,
  "header": {...}, "shared": rows, "bucket_events": [...], "identity_events": [...]}``;
* ``shared.parquet``: the cross-key events (stored once; every bucket's check reads them);
* ``bucket-NNNN.parquet``: the message events of bucket N, full rows;
* ``identity-NNNN.parquet``: the identity evidence of bucket N (copies of rows stored in the scope files).

Every event is in ``shared.parquet`` or in one ``bucket-NNNN.parquet``, in trace order (``i``) within each file;
the trace is their merge by ``i``.  The files hold the columns the checkers read
(:data:`~conformance.trace.reader.FAST_SCHEMA`; extension fields no checker reads are not kept), the header under
``keyshared.header`` as every Parquet trace.  ``exact`` false: the plan found a message under two keys or a uid
under two ``(producer, seq)`` (``Plan.mixed``): the trace is checked whole, by merging every file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from conformance.trace.header import TraceHeader
from conformance.trace.validation import TraceFormatError

__all__ = [
    "DEFAULT_BUCKETS",
    "LAYOUT",
    "MANIFEST",
    "TRACE_FORMAT",
    "TRACE_LAYOUTS",
    "BucketLayout",
    "bucket_table",
    "bucketed_name",
    "convert_to_buckets",
    "identity_table",
    "merged_batches",
    "parse_layout",
    "read_manifest",
    "receipts_table",
    "whole_batches",
    "write_bucketed_copy",
]

MANIFEST = "manifest.json"
TRACE_FORMAT = 2
LAYOUT = "bucketed"
SHARED = "shared.parquet"
#: The identity files split by producer (what :func:`convert_to_buckets` writes for a trace with deduplication
#: on), or by ``(producer, seq)`` (deduplication off, and the first layouts, whose manifests name no
#: ``identity_by``: with deduplication on their checks run whole).
IDENTITY_BY_PRODUCER: Final = "producer"
IDENTITY_BY_SEQ: Final = "producer_seq"
_FLUSH_ROWS = 16384  # rows a bucket's writer buffers before writing a row group: a merge of every file (a trace
# checked whole) holds one row group of each at a time


#: The bucket count when none is given (``keyshared convert``, ``--trace-layout bucketed``, ``bucketed``).
DEFAULT_BUCKETS: Final = 16
#: The layouts the project's writers can leave a trace in: ``flat`` (the trace as recorded, alone) or ``bucketed``
#: (beside it, this layout: :func:`write_bucketed_copy`).
TRACE_LAYOUTS: Final = ("flat", "bucketed")


def bucket_name(n: int) -> str:
    return f"bucket-{n:04d}.parquet"


def identity_name(n: int) -> str:
    return f"identity-{n:04d}.parquet"


def receipts_name(n: int) -> str:
    return f"receipts-{n:04d}.parquet"


@dataclass(frozen=True)
class BucketLayout:
    """A bucketed trace directory as its manifest describes it."""

    directory: Path
    header: TraceHeader
    buckets: int
    events: int
    exact: bool  #: False: a message of two keys or a uid of two (producer, seq): checked whole
    shared: int  #: rows of shared.parquet
    bucket_events: tuple[int, ...]
    identity_events: tuple[int, ...]
    #: what the identity files are split by: ``producer`` (every id of a producer in one file: the rules that
    #: compare a producer's ids are decided per bucket) or ``producer_seq`` (a manifest without the field)
    identity_by: str = "producer_seq"
    #: with deduplication on: each bucket's identity pass also reads ``receipts-NNNN.parquet``, the other buckets'
    #: publishes it needs (:func:`conformance.spark.router.needless_receipts` left out) and every producer's
    #: creation, so the rules comparing a producer's ids are decided per bucket (``receipt_events`` their counts)
    receipts: bool = False
    receipt_events: tuple[int, ...] = ()
    #: every uid's and (producer, seq)'s evidence lies in one bucket: no identity files; each bucket's scope pass
    #: keeps the identity fields and judges every kind (its receipts, with deduplication on, beside it)
    one_pass: bool = False

    @property
    def shared_path(self) -> Path:
        return self.directory / SHARED

    def bucket_path(self, n: int) -> Path:
        return self.directory / bucket_name(n)

    def identity_path(self, n: int) -> Path:
        return self.directory / identity_name(n)

    def receipts_path(self, n: int) -> Path:
        return self.directory / receipts_name(n)

    def scope_files(self) -> list[Path]:
        return [self.shared_path, *(self.bucket_path(n) for n in range(self.buckets))]


def read_manifest(directory: Path) -> BucketLayout:
    """The layout of a bucketed trace directory; a malformed manifest raises ``TraceFormatError`` naming it."""
    path = directory / MANIFEST
    where = str(path)
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise TraceFormatError(where, None, f"cannot be read ({exc.strerror})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TraceFormatError(where, None, f"is not valid JSON ({exc})") from None
    if not isinstance(obj, dict):
        raise TraceFormatError(where, None, "is not a JSON object")
    if obj.get("trace_format") != TRACE_FORMAT or obj.get("layout") != LAYOUT:
        raise TraceFormatError(
            where,
            None,
            f"holds trace_format {obj.get('trace_format')!r} layout {obj.get('layout')!r},"
            f" not {TRACE_FORMAT} {LAYOUT!r}",
        )

    def count(name: str) -> int:
        value = obj.get(name)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise TraceFormatError(where, None, f"{name!r} is {value!r}, not a count")
        return value

    def counts(name: str, n: int) -> tuple[int, ...]:
        value = obj.get(name)
        if (
            not isinstance(value, list)
            or len(value) != n
            or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value)
        ):
            raise TraceFormatError(where, None, f"{name!r} is not a list of {n} counts")
        return tuple(value)

    buckets = count("buckets")
    if buckets < 1:
        raise TraceFormatError(where, None, "'buckets' is 0, not at least 1")
    exact = obj.get("exact")
    if not isinstance(exact, bool):
        raise TraceFormatError(where, None, f"'exact' is {exact!r}, not true or false")
    header_obj = obj.get("header")
    if not isinstance(header_obj, dict):
        raise TraceFormatError(where, None, "'header' is not a JSON object")
    try:
        header = TraceHeader.from_dict(header_obj)
    except Exception as exc:  # the header's own error, worded
        raise TraceFormatError(where, None, f"header: {exc}") from None
    identity_by = obj.get("identity_by", IDENTITY_BY_SEQ)
    if identity_by not in (IDENTITY_BY_PRODUCER, IDENTITY_BY_SEQ):
        raise TraceFormatError(
            where, None, f"'identity_by' is {identity_by!r}, not {IDENTITY_BY_PRODUCER!r} or {IDENTITY_BY_SEQ!r}"
        )
    receipts = obj.get("receipts", False)
    if not isinstance(receipts, bool):
        raise TraceFormatError(where, None, f"'receipts' is {receipts!r}, not true or false")
    one_pass = obj.get("one_pass", False)
    if not isinstance(one_pass, bool):
        raise TraceFormatError(where, None, f"'one_pass' is {one_pass!r}, not true or false")
    layout = BucketLayout(
        directory,
        header,
        buckets,
        count("events"),
        exact,
        count("shared"),
        counts("bucket_events", buckets),
        counts("identity_events", buckets),
        identity_by,
        receipts,
        counts("receipt_events", buckets) if receipts else (),
        one_pass,
    )
    if layout.shared + sum(layout.bucket_events) != layout.events:
        raise TraceFormatError(where, None, "'events' is not the shared events plus every bucket's")
    receipt_files = [layout.receipts_path(n) for n in range(buckets)] if receipts else []
    identity_files = [] if one_pass else [layout.identity_path(n) for n in range(buckets)]
    for file in [*layout.scope_files(), *identity_files, *receipt_files]:
        if not file.is_file():
            raise TraceFormatError(where, None, f"names {buckets} buckets but {file.name} is missing")
    return layout


def convert_to_buckets(src: str | Path, out: str | Path, buckets: int, *, by_producer: bool = False) -> BucketLayout:
    """Write the trace ``src`` (any form :func:`~conformance.trace.reader.open_trace` reads) into the directory
    ``out`` (new or empty) in the bucketed layout of ``buckets`` buckets, by the split's plan.

    Reads the trace twice: once validated, for the plan (:func:`conformance.spark.split.plan_split`), once to
    write its rows.  Memory: the plan (two bytes an event) and a row group per bucket.  With deduplication on,
    each bucket's receipts file is written beside its identity file (:func:`_receipts_of`); ``by_producer``
    writes the earlier layout instead (identity files split by producer: one producer's ids all in one file).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from conformance.spark.split import ALL, plan_split
    from conformance.trace.reader import PARQUET_HEADER_KEY, FastPathUnavailable, fast_schema, open_trace

    if buckets < 1:
        raise ValueError(f"buckets must be at least 1, not {buckets}")
    from conformance.checks.replication import is_replication_run

    source = open_trace(src)
    if source.format == LAYOUT:
        raise TraceFormatError(str(src), None, "is already in the bucketed layout")
    if is_replication_run(source.header):  # its events, whole, are what the replication check reads
        raise TraceFormatError(
            str(src),
            None,
            "is a failover run's trace (its header names clusters): its replication check reads fields the bucketed"
            " layout does not store; check it as it is",
        )
    target = Path(out)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise TraceFormatError(str(target), None, "exists and is not an empty directory")
    # the identity files by (producer, seq), spread evenly whatever the producers; with deduplication on, beside
    # each the receipts its bucket needs of the others, so the rules comparing a producer's ids are decided per
    # bucket (else the whole trace would be checked again)
    by_producer = by_producer and bool(source.header.deduplication)
    receipts = bool(source.header.deduplication) and not by_producer and buckets > 1
    try:  # validated: a malformed trace fails here, in the reader's words
        plan = plan_split(source.batches(), buckets, one_pass=not by_producer, by_producer=by_producer)
    except FastPathUnavailable as exc:  # valid, but beyond the columns the layout stores
        raise TraceFormatError(str(src), None, f"cannot be stored in the bucketed layout ({exc})") from None
    created = not target.exists()
    target.mkdir(parents=True, exist_ok=True)
    schema = fast_schema().with_metadata({PARQUET_HEADER_KEY: source.header.to_json().encode("utf-8")})
    one_pass = plan.one_pass  # every evidence in its scope bucket: no identity files, the scope pass judges all
    names = [SHARED, *(bucket_name(n) for n in range(buckets))]
    if not one_pass:
        names += [identity_name(n) for n in range(buckets)]
    if receipts:
        names += [receipts_name(n) for n in range(buckets)]
    excusing: list[set[str]] = [set() for _ in range(buckets)]  # per bucket, as needless_receipts keeps it
    writers = {name: pq.ParquetWriter(target / f".{name}.tmp", schema) for name in names}
    pending: dict[str, list[Any]] = {name: [] for name in names}
    rows = dict.fromkeys(names, 0)

    def put(name: str, batch: Any, force: bool = False) -> None:
        if batch is not None and batch.num_rows:
            pending[name].append(batch)
            rows[name] += batch.num_rows
        if pending[name] and (force or sum(b.num_rows for b in pending[name]) >= _FLUSH_ROWS):
            writers[name].write_table(pa.Table.from_batches(pending[name], schema))
            pending[name] = []

    offset = 0
    try:
        for raw in source.unchecked_batches():
            n = raw.num_rows
            batch = pa.RecordBatch.from_arrays(raw.columns, schema=schema)
            scope, identity = plan.scope[offset : offset + n], plan.identity[offset : offset + n]
            offset += n
            for part, held in _grouped(batch, scope):
                put(SHARED if part == ALL else bucket_name(part), held)
            if not one_pass:
                for part, held in _grouped(batch, identity):
                    if part >= 0:
                        put(identity_name(part), held)
            if receipts:  # the receipts of the pass that judges the identity kinds
                for part, held in _receipts_of(batch, scope if one_pass else identity, excusing, not one_pass):
                    put(receipts_name(part), held)
        if offset != plan.events:
            raise TraceFormatError(str(src), None, "changed while it was converted")
        for name in names:
            put(name, None, force=True)
    except BaseException:  # a malformed row, a full disk, Ctrl-C: no half-written files left behind
        for writer in writers.values():
            writer.close()
        _remove_partial(target, [f".{name}.tmp" for name in names], created)
        raise
    for writer in writers.values():
        writer.close()
    for name in names:
        os.replace(target / f".{name}.tmp", target / name)
    manifest = {
        "trace_format": TRACE_FORMAT,
        "layout": LAYOUT,
        "buckets": buckets,
        "events": plan.events,
        "exact": not plan.mixed,
        "shared": rows[SHARED],
        "bucket_events": [rows[bucket_name(b)] for b in range(buckets)],
        "identity_events": [0 if one_pass else rows[identity_name(b)] for b in range(buckets)],
        "identity_by": IDENTITY_BY_PRODUCER if by_producer else IDENTITY_BY_SEQ,
        "header": source.header.to_dict(),
    }
    if one_pass:
        manifest["one_pass"] = True
    if receipts:
        manifest["receipts"] = True
        manifest["receipt_events"] = [rows[receipts_name(b)] for b in range(buckets)]
    tmp = target / f".{MANIFEST}.tmp"
    tmp.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, target / MANIFEST)  # written last: a directory without it is no trace
    return read_manifest(target)


def _receipts_of(batch: Any, parts: Any, excusing: list[set[str]], creations: bool) -> Iterator[tuple[int, Any]]:
    """``(bucket, its receipts in this batch)``: for each bucket, the publishes of the other buckets (``parts``: the
    pass's part of each row: the identity pass's, or in a one-pass layout the scope pass's) it needs (those
    :func:`~conformance.spark.router.needless_receipts` does not leave out, its own publishes and the creations
    bounding the runs) and, with ``creations``, every ``producer_open``, which an identity pass does not read
    otherwise (a scope pass reads them in the shared file) (``excusing``: per bucket, the producers with a
    duplicate receipt of its own so far).  About one copy per run of other buckets' publishes: all buckets'
    receipts together stay near the trace's publishes."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from conformance.spark.router import needless_receipts
    from conformance.trace.identity import derive_message_columns_with_position

    ops = batch.column("op")
    publish = np.asarray(pc.equal(ops, "publish").fill_null(False).to_numpy(zero_copy_only=False), bool)
    opened = np.asarray(pc.equal(ops, "producer_open").fill_null(False).to_numpy(zero_copy_only=False), bool)
    publish &= parts >= 0
    rows_at = np.flatnonzero(publish | opened)
    if not len(rows_at):
        return
    rows = batch.take(pa.array(rows_at))
    _mkey, stream, _canon, (ledger, entry, index) = derive_message_columns_with_position(
        rows.column("topic"), rows.column("msg_id")
    )
    derived = rows
    for name, column in (("stream", stream), ("ledger", ledger), ("entry", entry), ("bidx", index)):
        derived = derived.append_column(name, column)
    part_of = parts[rows_at]
    is_publish, is_opened = publish[rows_at], opened[rows_at]
    for n in range(len(excusing)):
        others = is_publish & (part_of != n)
        if not others.any() and not (creations and is_opened.any()):
            continue
        wanted = others & ~needless_receipts(derived, others, excusing[n])
        if creations:
            wanted |= is_opened
        if wanted.any():
            yield n, rows.filter(pa.array(wanted))


def parse_layout(text: str) -> int | None:
    """The bucket count a layout setting names: ``flat`` None (no bucketed copy), ``bucketed`` the default
    (:data:`DEFAULT_BUCKETS`), ``bucketed:N`` N buckets.  Raises ``ValueError`` saying what would work."""
    name, sep, count = text.strip().lower().partition(":")
    if name == "flat" and not sep:
        return None
    if name == LAYOUT:
        if not sep:
            return DEFAULT_BUCKETS
        if count.isdigit() and int(count) >= 1:
            return int(count)
        raise ValueError(f"expected a bucket count of at least 1 after 'bucketed:', not {count!r}")
    raise ValueError(f"expected flat, bucketed or bucketed:N (N buckets), not {text!r}")


def bucketed_name(trace: str | Path) -> Path:
    """Where a writer's bucketed copy of ``trace`` goes: beside it, named by its stem and ``-buckets``
    (``run/trace.jsonl`` -> ``run/trace-buckets``, a soak's ``trace/`` chunks -> ``trace-buckets``)."""
    path = Path(trace)
    stem = path.name
    for suffix in (".jsonl.gz", ".jsonl", ".parquet"):
        if stem.endswith(suffix) and len(stem) > len(suffix):
            stem = stem[: -len(suffix)]
            break
    return path.with_name(f"{stem}-buckets")


def write_bucketed_copy(trace: str | Path, buckets: int) -> BucketLayout:
    """The one place the project's writers (``keyshared run``, ``keyshared soak``, the plugin's recorder) store a
    finished trace in the bucketed layout too: :func:`convert_to_buckets` into :func:`bucketed_name`.

    Written once the trace has ended, not event by event: an event's bucket is its message's key, which an ack
    carries but the split's plan decides over the whole trace (a message seen under two keys, a uid under two
    ``(producer, seq)``: ``exact`` false), so the layout can only be final when the trace is.  The trace as
    recorded stays (the live check, the report and ``keyshared replay`` read it).
    """
    return convert_to_buckets(trace, bucketed_name(trace), buckets)


def _remove_partial(target: Path, files: list[str], created: bool) -> None:
    """The temporary files of a conversion that failed, and its directory if the conversion made it."""
    import contextlib

    for name in files:
        with contextlib.suppress(OSError):
            (target / name).unlink()
    if created:
        with contextlib.suppress(OSError):
            target.rmdir()  # (only if empty)


#: numpy's stable sort (a named constant: ``kind=`` with a string literal is how violation kinds must not be spelt)
_STABLE_SORT: Final = "stable"


def _grouped(batch: Any, parts: Any) -> Iterator[tuple[int, Any]]:
    """``(part, its rows)`` for each part present in ``parts`` (numpy, one per row), rows kept in trace order:
    one stable sort and one take per batch, not a filter per bucket."""
    import numpy as np

    order = np.argsort(parts, kind=_STABLE_SORT)  # the rows of a bucket keep their order
    ordered = parts[order]
    taken = batch.take(order)
    values, starts = np.unique(ordered, return_index=True)
    ends = [*starts[1:], len(ordered)]
    for value, start, end in zip(values, starts, ends, strict=True):
        yield int(value), taken.slice(int(start), int(end - start))


def _read(path: Path) -> Any:
    """One file of the layout as a table of :data:`FAST_SCHEMA` (the reader's own Parquet batches)."""
    import pyarrow as pa

    from conformance.trace.reader import FastPathFailed, _parquet_file_batches, fast_schema

    try:
        table = pa.Table.from_batches(list(_parquet_file_batches(path, False)), fast_schema())
    except (FastPathFailed, pa.ArrowInvalid, OSError) as exc:
        raise TraceFormatError(str(path), None, f"cannot be read as a bucket of the trace ({exc})") from None
    _in_order(path, table.column("i"))
    return table


def _in_order(path: Path, i: Any) -> None:
    """A file of the layout holds its events in trace order (``i`` increasing): the merges rely on it."""
    import pyarrow.compute as pc

    n = len(i)
    if i.null_count:
        raise TraceFormatError(str(path), None, "holds an event without i")
    if n > 1 and not pc.all(pc.greater(i.slice(1), i.slice(0, n - 1))).as_py():
        raise TraceFormatError(str(path), None, "holds its events out of order (i not increasing)")


def _by_i(tables: list[Any]) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    table = pa.concat_tables(tables)
    return table.take(pc.sort_indices(table.column("i")))


def bucket_table(layout: BucketLayout, n: int) -> Any:
    """The scope pass of bucket ``n``: the shared events and the bucket's, merged by ``i`` (a table)."""
    return _by_i([_read(layout.shared_path), _read(layout.bucket_path(n))])


def identity_table(layout: BucketLayout, n: int) -> Any:
    """The identity evidence of bucket ``n`` (a table in trace order)."""
    return _read(layout.identity_path(n))


def receipts_table(layout: BucketLayout, n: int) -> Any:
    """The receipts bucket ``n``'s identity pass reads beside its own evidence (a table in trace order)."""
    return _read(layout.receipts_path(n))


def merged_batches(paths: list[Path]) -> Iterator[Any]:
    """The rows of several files of the layout, each in trace order, merged by ``i`` as batches, holding one
    batch of each file at a time (a streamed k-way merge: memory bounded by the files' batches, not their rows).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    from conformance.trace.reader import FastPathFailed, _parquet_file_batches, fast_schema

    def read(path: Path) -> Iterator[Any]:
        try:
            last = None
            for batch in _parquet_file_batches(path, False):
                if batch.num_rows:
                    _in_order(path, batch.column("i"))
                    if last is not None and batch.column("i")[0].as_py() <= last:
                        raise TraceFormatError(str(path), None, "holds its events out of order (i not increasing)")
                    last = batch.column("i")[-1].as_py()
                    yield batch
        except (FastPathFailed, pa.ArrowInvalid, OSError) as exc:
            raise TraceFormatError(str(path), None, f"cannot be read as a bucket of the trace ({exc})") from None

    sources = [read(path) for path in paths]
    current: list[Any] = [next(source, None) for source in sources]
    while any(batch is not None for batch in current):
        live = [k for k, batch in enumerate(current) if batch is not None]
        bound = min(current[k].column("i")[-1].as_py() for k in live)  # every file's rows up to it are at hand
        pieces = []
        for k in live:
            batch = current[k]
            take = int(pc.sum(pc.less_equal(batch.column("i"), bound)).as_py() or 0)
            if take:
                pieces.append(batch.slice(0, take))
            current[k] = batch.slice(take) if take < batch.num_rows else next(sources[k], None)
        table = pa.Table.from_batches(pieces, fast_schema())
        yield from table.take(pc.sort_indices(table.column("i"))).to_batches(max_chunksize=65536)


def whole_batches(layout: BucketLayout) -> Iterator[Any]:
    """Every event of the trace, merged by ``i`` (streamed: :func:`merged_batches`)."""
    yield from merged_batches(layout.scope_files())
