"""``out_of_order`` (and the witnesses of ``key_overlap``) on Spark: native flags, then a sweep of flagged scopes.

Twin of :mod:`conformance.checks.ordering`.  Whether some earlier message of the key is free, or held by
another consumer, at a receive is a question in two dimensions (time and topic-log position) that window
frames cannot ask exactly.  So the engine asks window functions a cheaper question first, one that every
violation makes true — *can this scope have one?* — and runs the exact sweep only over the scopes it flags:

* held elsewhere at the receive: then the scope has a key overlap (:func:`~conformance.spark.exclusivity.overlap_flag`);
* free since its first receipt and received later: a receive of a later message came first — the running
  maximum position of the receives before this message's own first receive exceeds its position; or the
  message's first free period did not end with a receive of it, and a receive followed its publish;
* free since a release (or a late receive): the next row of the scope after the release is not a receive
  that comes after the period ended.

On a correct run the flags are rare (a planted or real violation; redeliveries after a close), so the sweep —
Python, in ``mapInArrow`` over rows already partitioned and sorted by scope — sees a small, compact input: the
holds, free periods and exempt periods of flagged scopes, a few integers and strings per row.  It walks each
scope in event order with heaps by position (O(n log n)) and reports both kinds with their witnesses.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Iterator
from typing import Any

from conformance.spark.exclusivity import overlap_flag
from conformance.spark.membership import POS

__all__ = ["SCOPE", "SWEEP_COLUMNS", "flagged_scopes", "sweep_batches", "sweep_scope"]

_MSG_OPS = frozenset({"publish", "receive", "ack", "nack"})
SCOPE = ("tid", "sub", "stream", "key")
SWEEP_COLUMNS = (*SCOPE, "kind", "i", "end", "inc", "consumer", "ledger", "entry", "batch", "msg", "m_op",
                 "m_consumer", "vkind", "refs", "aux", "acked")  # fmt: skip


def flagged_scopes(scope_rows: Any) -> Any:
    """The holds (``H``), free (``F``) and exempt (``E``) periods of the scopes that may hold a violation, and
    every violation already decided per message (``V``, passed through to the sweep).

    ``scope_rows`` must be partitioned by scope; the rows come out sorted by scope and ``i`` within partitions.
    The ``V`` rows ride along rather than being split off before this step: two consumers of one DataFrame
    would make Spark push each filter below the shuffle by scope and compute every message's state twice.
    They form window partitions of their own (``_v``), so they change no flag, and need no extra shuffle.
    """
    from pyspark.sql import Window as W
    from pyspark.sql import functions as F

    col, when = F.col, F.when
    rank = when(col("kind") == "E", 0).when(col("kind") == "F", 1).otherwise(2)
    rows = scope_rows.select("*", rank.alias("_rank"), (col("kind") == "V").alias("_v"))
    w = W.partitionBy(*SCOPE, "_v").orderBy("i", "_rank")
    before = w.rowsBetween(W.unboundedPreceding, -1)
    whole = w.rowsBetween(W.unboundedPreceding, W.unboundedFollowing)
    hold, free = col("kind") == "H", col("kind") == "F"
    pos = F.struct("ledger", "entry", "batch")
    prev_pos = F.max(when(hold, pos)).over(before)
    nxt = F.lead(F.struct(col("kind").alias("kind"), col("i").alias("i"))).over(w)
    last_hold = F.max(when(hold, col("i"))).over(whole)
    end = F.coalesce(col("end"), F.lit(POS))
    flag = (
        overlap_flag(w)
        | (hold & col("flag") & F.coalesce(prev_pos > pos, F.lit(False)))  # received after a later message
        | (free & col("flag") & ~col("by_receive") & F.coalesce(last_hold > col("i"), F.lit(False)))
        | (free & ~col("flag") & nxt.isNotNull() & ((nxt["kind"] != "H") | (nxt["i"] < end)))
    )
    rows = rows.select("*", flag.alias("_flag"))
    rows = rows.select("*", F.max(col("_flag")).over(whole).alias("_scope_flag"))
    return rows.where(col("_v") | (col("_scope_flag") & col("kind").isin("H", "F", "E"))).select(*SWEEP_COLUMNS)


def sweep_batches(batches: Iterator[Any]) -> Iterator[Any]:
    """``mapInArrow`` body: rows sorted by scope and event in, violation rows out (``V`` rows as they are)."""
    import pyarrow as pa

    schema = _out_schema()
    current: tuple[Any, ...] | None = None
    group: list[tuple[Any, ...]] = []
    for batch in batches:
        out: list[dict[str, Any]] = []
        columns = [batch.column(name).to_pylist() for name in SWEEP_COLUMNS]
        for row in zip(*columns, strict=True):
            if row[4] == "V":
                out.append(_decided(row))
                continue
            scope = row[:4]
            if scope != current:
                if group:
                    out.extend(sweep_scope(current, group))  # type: ignore[arg-type]
                current, group = scope, []
            group.append(row)
        if out:
            yield pa.RecordBatch.from_pylist(out, schema=schema)
    if group:
        out = sweep_scope(current, group)  # type: ignore[arg-type]
        if out:
            yield pa.RecordBatch.from_pylist(out, schema=schema)


def _decided(row: tuple[Any, ...]) -> dict[str, Any]:
    """A violation decided per message (``undelivered``, ``redelivered_after_ack``, a misassigned suspect)."""
    return {"tid": row[0], "kind": row[15], "sub": row[1], "key": row[3], "refs": row[16], "aux": row[17]}


def _out_schema() -> Any:
    import pyarrow as pa

    ref = pa.struct([("i", pa.int64()), ("op", pa.string()), ("consumer", pa.string()), ("msg", pa.string())])
    return pa.schema(
        [("tid", pa.int64()), ("kind", pa.string()), ("sub", pa.string()), ("key", pa.string()),
         ("refs", pa.list_(ref)), ("aux", pa.string())]
    )  # fmt: skip


def _ref(i: int, op: str, consumer: str | None, msg: str | None) -> dict[str, Any]:
    return {"i": i, "op": op, "consumer": consumer, "msg": msg if op in _MSG_OPS else None}


def sweep_scope(scope: tuple[Any, ...], rows: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    """Judge every receive of one scope: key overlaps and the earliest message free, or held elsewhere, at it.

    Rows: ``(tid, sub, stream, key, kind, i, end, inc, consumer, ledger, entry, batch, msg, m_op,
    m_consumer, vkind, refs, aux, acked)``; a hold (``H``) is also the receive that started it (``acked``: of a
    message owed to nobody).  At one index, ends come before the
    receive, which comes before what starts there.
    """
    tid, sub, _stream, key = scope
    points: list[tuple[float, int, int]] = []  # (index, order, row number): order 0 end, 1 receive, 2 start
    for n, row in enumerate(rows):
        kind, start, end = row[4], row[5], row[6]
        if kind == "H":
            points.append((start, 1, n))
        points.append((start, 2, n))
        points.append((float("inf") if end is None else end, 0, n))
    points.sort()
    active: set[int] = set()
    free_heap: list[tuple[tuple[int, int, int], int]] = []
    exempt_heap: list[tuple[tuple[int, int, int], int]] = []
    holds_of: dict[int, dict[int, None]] = {}  # incarnation -> its active hold rows (in start order)
    holders_of: dict[str, dict[int, int]] = {}  # message -> active hold row -> incarnation
    out: list[dict[str, Any]] = []
    for _at, order, n in points:
        row = rows[n]
        kind = row[4]
        if order == 2:
            active.add(n)
            if kind == "F":
                heapq.heappush(free_heap, ((row[9], row[10], row[11]), n))
            elif kind == "E":
                heapq.heappush(exempt_heap, ((row[9], row[10], row[11]), n))
            else:
                holds_of.setdefault(row[7], {})[n] = None
                holders_of.setdefault(row[12], {})[n] = row[7]
        elif order == 0:
            active.discard(n)
            if kind == "H":
                del holds_of[row[7]][n]
                del holders_of[row[12]][n]
        else:
            got = _ref(row[5], "receive", row[8], row[12])
            if not holds_of.get(row[7]):
                for inc, held in holds_of.items():
                    if inc != row[7] and held:
                        first = rows[next(iter(held))]
                        holder = _ref(first[5], "receive", first[8], first[12])
                        aux = json.dumps({"holder": first[8], "receiver": row[8]})
                        out.append({"tid": tid, "kind": "key_overlap", "sub": sub, "key": key,
                                    "refs": [holder, got], "aux": aux})  # fmt: skip
            earlier = _earliest(rows, row, active, free_heap, exempt_heap, holds_of, holders_of)
            if earlier is not None:
                ref, msg, holder_name = earlier
                aux = json.dumps({"consumer": row[8], "earlier_msg": msg, "holder": holder_name})
                out.append({"tid": tid, "kind": "out_of_order", "sub": sub, "key": key, "refs": [ref, got], "aux": aux})
    return out


def _earliest(
    rows: list[tuple[Any, ...]],
    query: tuple[Any, ...],
    active: set[int],
    free_heap: list[tuple[tuple[int, int, int], int]],
    exempt_heap: list[tuple[tuple[int, int, int], int]],
    holds_of: dict[int, dict[int, None]],
    holders_of: dict[str, dict[int, int]],
) -> tuple[dict[str, Any], str, str | None] | None:
    """The smallest earlier message free, or held by others and not by the receiver (unless the key is exempt)."""
    me = query[7]
    pos = (query[9], query[10], query[11])
    best: tuple[Any, ...] | None = None
    while free_heap and free_heap[0][1] not in active:
        heapq.heappop(free_heap)
    if free_heap and free_heap[0][0] < pos:
        f = rows[free_heap[0][1]]
        best = (free_heap[0][0], _ref(f[5], f[13], f[14], f[12]), f[12], None)
    for inc, held in holds_of.items():
        if inc == me:
            continue
        for n in held:
            h = rows[n]
            hpos = (h[9], h[10], h[11])
            if hpos >= pos or h[18] or (best is not None and hpos >= best[0]):
                continue  # later, acknowledged (owed to nobody), or not the smallest
            holders = holders_of[h[12]]
            if me in holders.values():
                continue
            first = rows[min(holders, key=lambda m: rows[m][5])]
            best = (hpos, _ref(first[5], "receive", first[8], first[12]), h[12], first[8])
    if best is None:
        return None
    while exempt_heap and exempt_heap[0][1] not in active:
        heapq.heappop(exempt_heap)
    if exempt_heap and exempt_heap[0][0] < pos:
        return None
    return best[1], best[2], best[3]
