"""The streaming engine over a trace in the bucketed layout (:mod:`conformance.trace.buckets`): bucket by bucket,
so that its memory is bounded by the largest bucket plus the shared events, not by the trace.

Each bucket is a part of the Spark engine's split, stored: its scope pass is the merge (by ``i``) of the shared
events and the bucket's, checked by a :class:`~conformance.checks.partition.PartChecker` with the identity fields
blanked (:func:`~conformance.spark.split.scope_batch`), and its identity pass the bucket's identity file.  The
parts' results are combined by :func:`~conformance.checks.partition.merge_parts`, as the Spark engine combines
its tasks'; a trace the split cannot hold (``exact`` false) or where a part found what another part may excuse
(:func:`~conformance.checks.partition.needs_whole_trace`) is checked again whole, every file merged by ``i``
(in memory: the rare case).

Validation: every row passes the reader's vectorised batch check (:func:`~conformance.trace.validation.check_batch`)
in its bucket's merged order (``i`` increasing, ``t`` not decreasing, fields, message ids, one incarnation per
consumer: the shared events every bucket holds carry the membership); the file counts are the manifest's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from conformance.checks.partition import PartChecker, PartResult, merge_parts, needs_whole_trace
from conformance.profiles import Profile
from conformance.trace.buckets import BucketLayout, bucket_table, identity_table, receipts_table, whole_batches
from conformance.trace.validation import BatchState, TraceFormatError, check_batch
from conformance.verdict import Verdict

__all__ = ["check_bucket", "check_bucketed", "check_whole", "merge_buckets"]


def check_bucketed(layout: BucketLayout, profile: str | Profile | None = None) -> Verdict:
    """The verdict of the trace stored in ``layout``: the streaming engine's, checked bucket by bucket."""
    results = [_freed(check_bucket(layout, n, profile)) for n in range(layout.buckets)] if layout.exact else None
    return merge_buckets(layout, profile, results, engine="python")


def _freed(result: Any) -> Any:
    """``result``, once the state of the part that gave it is freed: a checker's state holds reference cycles,
    which only the cyclic collector frees, and a check runs with it paused (``collector_paused``): one
    collection per bucket keeps the peak to one bucket's state."""
    import gc

    gc.collect()
    return result


def check_bucket(layout: BucketLayout, n: int, profile: str | Profile | None = None) -> tuple[PartResult, PartResult]:
    """Bucket ``n``'s ``(scope pass, identity pass)`` results, from its own files and the shared one (what a
    Spark task checking a bucketed trace runs); in a one-pass layout the one pass is both."""
    scope = _scope_pass(layout, n, profile)
    return (scope, scope) if layout.one_pass else (scope, _identity_pass(layout, n, profile))


def merge_buckets(
    layout: BucketLayout,
    profile: str | Profile | None,
    results: list[tuple[PartResult, PartResult]] | None,
    *,
    engine: str,
    whole: Any = None,
) -> Verdict:
    """The verdict from every bucket's results (:func:`check_bucket`, in bucket order), merged as the Spark
    engine merges its parts (:func:`~conformance.checks.partition.merge_parts`).

    ``results`` None (an inexact split), or a part whose kinds may depend on another part's events
    (:func:`_needs_whole`: in a layout whose identity files split a producer's ids apart, a ``lost_write`` or,
    deduplication on, ``stored_below_highest``; a scope pass under an unacked-message limit): the trace
    is checked again whole, in one part (:func:`check_whole`, or ``whole()`` if given: a Spark task), as the
    Spark engine does with its parts.
    """
    header = layout.header
    how = "bucket"
    if results is None or (layout.buckets > 1 and _needs_whole(layout, results)):
        how = "whole"
        one = whole() if whole is not None else check_whole(layout, profile)
        scope, identity = [one], [one]
    else:
        scope, identity = [s for s, _i in results], [i for _s, i in results]
    verdict = merge_parts(header, profile, scope, identity, engine=engine)
    return dataclasses.replace(
        verdict, extra={**verdict.extra, "layout": "bucketed", "buckets": layout.buckets, "split": how}
    )


def _needs_whole(layout: BucketLayout, results: list[tuple[PartResult, PartResult]]) -> bool:
    """Whether a bucket's result may depend on another bucket's events (:func:`needs_whole_trace`).

    Identity files split by producer (``identity_by`` ``producer``) hold every id of their producers: what an
    identity pass finds by comparing a producer's ids (``lost_write``, ``stored_below_highest``,
    ``last_sequence_id_behind``) is decided there, and only a scope pass's need counts.  (A receive of a uid
    nobody published is filed by its uid, apart from any producer: the checker learns a uid's ``(producer, seq)``
    from its publishes only, which that uid's receives follow, so such a receive is evidence for no producer.)
    """
    from conformance.trace.buckets import IDENTITY_BY_PRODUCER

    if any(needs_whole_trace(scope) for scope, _identity in results):
        return True
    return layout.identity_by != IDENTITY_BY_PRODUCER and any(needs_whole_trace(i) for _s, i in results)


def check_whole(layout: BucketLayout, profile: str | Profile | None = None) -> PartResult:
    """The whole trace in one part: every scope file merged by ``i`` (streamed, one batch of each at a time)."""
    return _check(layout, "the trace", whole_batches(layout), layout.header, profile, lambda batch: batch)


def _identity_shape(batch: Any) -> Any:
    """The identity pass reads none of the rare fields (the Spark tasks shape it so) but the topic, which a
    ``producer_open`` in it (identity files split by producer) is judged on (``last_sequence_id_behind``)."""
    from conformance.spark.split import _RARE_FIELDS

    return batch.select([name for name in batch.schema.names if name == "topic" or name not in _RARE_FIELDS])


def _scope_pass(layout: BucketLayout, n: int, profile: str | Profile | None) -> PartResult:
    from conformance.spark.split import scope_batch

    table = bucket_table(layout, n)
    if table.num_rows != layout.shared + layout.bucket_events[n]:
        raise TraceFormatError(str(layout.bucket_path(n)), None, "holds another count of events than the manifest")
    copies = layout.shared if n else 0  # the shared events are counted by bucket 0
    if not layout.one_pass:
        batches = table.to_batches(max_chunksize=65536)
        return _check(layout, f"bucket {n}", batches, layout.header, profile, scope_batch, copies=copies)
    if not layout.receipts:  # one pass: the identity fields kept, every kind judged here
        batches = table.to_batches(max_chunksize=65536)
        return _check(layout, f"bucket {n}", batches, layout.header, profile, lambda batch: batch, copies=copies)
    return _with_receipts(layout, n, table, f"bucket {n}", profile, lambda batch: batch, copies)


def _with_receipts(
    layout: BucketLayout, n: int, table: Any, what: str, profile: str | Profile | None, shape: Any, copies: int
) -> PartResult:
    """A pass over ``table`` (a bucket's own rows, in trace order) and its receipts file merged by ``i``, the
    receipts' publishes read as receipt copies: the pass decides the rules comparing a producer's ids."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from conformance.spark.router import as_receipt_copies

    receipts = receipts_table(layout, n)
    if receipts.num_rows != layout.receipt_events[n]:
        raise TraceFormatError(str(layout.receipts_path(n)), None, "holds another count of events than the manifest")
    merged = pa.concat_tables([table, receipts])
    order = pc.sort_indices(merged.column("i"))
    copied = np.concatenate(
        [
            np.zeros(table.num_rows, bool),
            np.asarray(pc.equal(receipts.column("op"), "publish").to_numpy(zero_copy_only=False), bool),
        ]
    )[np.asarray(order)]
    batches = merged.take(order).to_batches(max_chunksize=65536)
    masks = iter(np.split(copied, np.cumsum([b.num_rows for b in batches])[:-1]))

    def relabelled(batch: Any) -> Any:  # the validated batches come in order, one for each: its copies relabelled
        return shape(as_receipt_copies(batch, next(masks)))

    copies += int(copied.sum())
    return _check(layout, what, batches, layout.header, profile, relabelled, copies=copies, all_receipts=True)


def _identity_pass(layout: BucketLayout, n: int, profile: str | Profile | None) -> PartResult:
    table = identity_table(layout, n)
    if table.num_rows != layout.identity_events[n]:
        raise TraceFormatError(str(layout.identity_path(n)), None, "holds another count of events than the manifest")
    what = f"identity bucket {n}"
    if not layout.receipts:
        return _check(layout, what, table.to_batches(max_chunksize=65536), layout.header, profile, _identity_shape)
    return _with_receipts(layout, n, table, what, profile, _identity_shape, 0)


def _check(
    layout: BucketLayout,
    what: str,
    batches: Any,
    header: Any,
    profile: str | Profile | None,
    shape: Any,
    *,
    copies: int = 0,
    all_receipts: bool = False,
) -> PartResult:
    from conformance.trace.decode import row_columns

    part = PartChecker(header, profile)
    for batch in _validated(layout, what, batches):
        part.feed(row_columns(shape(batch)))
    return part.result(copies, all_receipts=all_receipts)


def _validated(layout: BucketLayout, what: str, batches: Any) -> Iterator[Any]:
    state = BatchState()
    for batch in batches:
        problem, derived = check_batch(batch, state)
        if problem is not None:
            first, last = batch.column("i")[0].as_py(), batch.column("i")[-1].as_py()
            raise TraceFormatError(str(layout.directory), f"{what}, i={first}..{last}", problem)
        yield derived
