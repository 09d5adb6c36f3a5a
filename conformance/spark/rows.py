"""A Spark task's own rows of a stored Parquet trace: read, kept by key or by the plan, and only then validated
and decoded.

A task needs only the events of its part: the rows of its key part in the scope pass, the copies every part holds
(:data:`~.split.ALL`), and (with a plan made once by the driver, :func:`conformance.spark.engine.plan_trace`) its
rows of the identity pass. Routed by key (:func:`routed_batches`), a task knows its rows from the ``op`` and ``key``
columns of each batch (:class:`~conformance.spark.router.KeyRouter`). Each batch is filtered with pyarrow (C++)
straight after the Parquet read, so the validating check (:func:`conformance.trace.validation.check_batch`: types,
required fields, message ids, the derived message columns) and the checker's decoding run over the part's rows only,
not over the whole trace in every task. What every task still reads whole is the Parquet file itself (the reader's
unvalidated batches, :meth:`~conformance.trace.reader.TraceSource.unchecked_batches`), so that read is made cheap:
in the task's one thread, and the string columns of few values dictionary-encoded as Parquet stores them.

Validation stays whole, shared out:

* every row is in the scope pass of exactly one part or copied into all, so the row rules are judged on every
  row by some task;
* ``i`` strictly increasing and ``t`` non-decreasing are judged by every task on the full ``i`` and ``t``
  columns (two integer columns: cheap), across batches and files;
* the one-incarnation membership rule reads ``open``, ``close`` and ``crash`` only, which every split copies into
  every part, so each task judges it on its own events exactly as on the whole trace.

A task that finds a problem raises :class:`OwnRowsInvalid`; the job fails and the driver reads the trace again
with the reader (:meth:`~conformance.trace.reader.TraceSource.batches`), which words the first problem of the
trace as the Python engine does: the message never depends on which task found it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from conformance.spark.split import _RARE_FIELDS, ALL, Plan, scope_batch
from conformance.trace.reader import FastPathFailed, TraceSource
from conformance.trace.validation import BatchState, check_batch

__all__ = ["OwnRowsInvalid", "own_batches", "own_part_batches", "routed_batches"]


class OwnRowsInvalid(Exception):
    """A task's rows (or the trace's order) break a rule; the driver words it with the reader."""


class _Order:
    """``i`` strictly increasing and ``t`` non-decreasing over the full columns, batch after batch."""

    def __init__(self) -> None:
        self.last_i: int | None = None
        self.last_t: int | None = None

    def check(self, batch: Any) -> None:
        import pyarrow.compute as pc

        n = batch.num_rows
        if not n:
            return
        i, t = batch.column("i"), batch.column("t")
        if i.null_count or t.null_count:
            raise OwnRowsInvalid("missing i or t")
        if n > 1 and not (
            pc.all(pc.greater(i.slice(1), i.slice(0, n - 1))).as_py()
            and pc.all(pc.greater_equal(t.slice(1), t.slice(0, n - 1))).as_py()
        ):
            raise OwnRowsInvalid("i or t out of order")
        first_i, first_t = i[0].as_py(), t[0].as_py()
        if self.last_i is not None and self.last_t is not None and (first_i <= self.last_i or first_t < self.last_t):
            raise OwnRowsInvalid("i or t out of order across batches")
        self.last_i, self.last_t = i[n - 1].as_py(), t[n - 1].as_py()


#: String columns of few distinct values in any trace, read dictionary-encoded as Parquet stores them: no string
#: per row to make, filter and encode again (measured at 3M events: these columns read in 0.06 s instead of
#: 0.22 s).  ``key`` is not one: a trace may give every message a key of its own.
_FEW_VALUES = ("op", "topic", "subscription", "consumer", "producer", "result", "name")


def _raw_batches(source: TraceSource) -> Iterator[Any]:
    """The trace's batches as :data:`~conformance.trace.reader.FAST_SCHEMA` (:data:`_FEW_VALUES` encoded, and
    ``key`` where the files store it so: :func:`_keys_coded`), not yet validated, read in this thread only (a
    task has one core: pyarrow's thread pool would take it from the other tasks)."""
    coded = (*_FEW_VALUES, "key") if _keys_coded(source) else _FEW_VALUES
    try:
        yield from source.unchecked_batches(use_threads=False, dictionaries=coded)
    except FastPathFailed as failed:  # a column of the wrong type: the reader words it
        raise OwnRowsInvalid(failed.problem) from None


def _keys_coded(source: TraceSource) -> bool:
    """Whether every row group of the trace stores ``key`` dictionary-encoded (its data pages hold indices: at
    most 4 bytes a value, beside a dictionary page of at most 1 MB): read so, the keys cost no string per row
    (measured at 3M events: 0.04 s instead of 0.15 s).  Where a writer gave up its dictionary (many distinct
    keys), reading the column as one would hash every row, and every batch would carry the row group's
    dictionary so far."""
    import pyarrow.parquet as pq

    for path in source.files:
        metadata = pq.read_metadata(path)
        names = metadata.schema.to_arrow_schema().names
        if "key" not in names:
            return False
        index = names.index("key")
        for group in range(metadata.num_row_groups):
            chunk = metadata.row_group(group).column(index)
            if not chunk.has_dictionary_page or chunk.total_uncompressed_size > 4 * chunk.num_values + (1 << 20):
                return False
    return True


def own_batches(source: TraceSource, plan: Plan, part: int, *, identity: bool) -> Iterator[tuple[Any, Any, Any]]:
    """``(validated batch, in scope part, in identity part)`` per batch of a Parquet trace: the batch holds the
    rows of ``part``'s scope pass (its own and the copies) and, with ``identity``, of its identity pass; the two
    numpy masks say which of its rows belong to which pass.  Raises :class:`OwnRowsInvalid` (see the module)."""

    def choose(raw: Any, offset: int) -> tuple[Any, Any]:
        n = raw.num_rows
        if offset + n > plan.events:
            raise RuntimeError("the trace holds more events than when its split was planned (was it rewritten?)")
        scope = plan.scope[offset : offset + n]
        in_scope = (scope == part) | (scope == ALL)
        return in_scope, plan.identity[offset : offset + n] == part if identity else None

    offset = 0
    for rows, in_scope, in_identity, n in _chosen(source, choose):
        offset += n
        yield rows, in_scope, in_identity
    if offset != plan.events:
        raise RuntimeError("the trace holds fewer events than when its split was planned (was it rewritten?)")


def routed_batches(source: TraceSource, router: Any, part: int, copies: list[int]) -> Iterator[Any]:
    """The validated rows of ``part`` of a Parquet trace routed by key (``router``, a
    :class:`~conformance.spark.router.KeyRouter`: its own rows and the copies), batch by batch; ``copies`` gets one
    count per batch of the copies kept (rows every part holds).  Raises :class:`OwnRowsInvalid` (see the
    module).  ``router`` may be a number of parts: routed by the keys the events carry."""
    from conformance.spark.router import KeyRouter

    if isinstance(router, int):
        router = KeyRouter(router)

    def choose(raw: Any, _offset: int) -> tuple[Any, Any]:
        keep, receipts = router.route(raw, part, copies)  # the receipts mask stands in the identity pass's place
        return keep, receipts

    for rows, _s, receipts, _n in _chosen(source, choose):
        yield router.receipt_rows(rows, receipts)


def _chosen(source: TraceSource, choose: Any) -> Iterator[tuple[Any, Any, Any, int]]:
    """``(validated rows kept, in scope, in identity, rows read)`` per batch: ``choose(raw batch, offset)`` gives
    the numpy mask of a batch's rows in the scope pass and, or None, of those in the identity pass; the rows in
    either are validated (:func:`~conformance.trace.validation.check_batch`), and ``i``/``t`` order is judged on
    every row read."""
    order, state = _Order(), BatchState()
    offset = 0
    for raw in _raw_batches(source):
        n = raw.num_rows
        in_scope, in_identity = choose(raw, offset)
        offset += n
        order.check(raw)
        keep = in_scope if in_identity is None else in_scope | in_identity
        problem, rows = check_batch(_kept(raw, keep), state)
        if problem is not None:
            raise OwnRowsInvalid(problem)
        yield rows, in_scope[keep], (in_identity[keep] if in_identity is not None else None), n


def _kept(batch: Any, keep: Any) -> Any:
    """The rows of ``batch`` where the numpy mask ``keep`` is set; a column null in every row (the fields a trace
    does not use: most of the schema's extension columns) is made null anew rather than filtered."""
    import pyarrow as pa

    used = [k for k, column in enumerate(batch.columns) if column.null_count < len(column)]
    if len(used) == batch.num_columns:
        return batch.filter(pa.array(keep))
    rows = batch.select(used).filter(pa.array(keep))
    arrays, n = [], rows.num_rows
    for k, field in enumerate(batch.schema):
        arrays.append(rows.column(used.index(k)) if k in used else pa.nulls(n, field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=batch.schema)


def own_part_batches(source: TraceSource, plan: Plan, part: int) -> Iterator[tuple[Any, Any]]:
    """``(scope batch, identity batch)`` of ``part`` per batch (the two-pass way; see :func:`.split.part_batches`)."""
    import pyarrow as pa

    for rows, in_scope, in_identity in own_batches(source, plan, part, identity=True):
        names = rows.schema.names
        keep = [name for name in names if name not in _RARE_FIELDS or (name == "topic" and "mkey" not in names)]
        # the identity batch's few columns chosen before its rows: the rare ones are never filtered for it
        yield scope_batch(rows.filter(pa.array(in_scope))), rows.select(keep).filter(pa.array(in_identity))
