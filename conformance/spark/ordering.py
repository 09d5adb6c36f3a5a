"""``out_of_order`` on Spark (twin of :mod:`conformance.checks.ordering`).

Window functions give every message its *periods* — free (``timeline.free_start`` .. ``free_end``), exempt,
and each hold — and mark the receives to judge.  Whether some earlier message of the key is free, or held by
another consumer, at a receive is a two-dimensional question (time and topic-log position) that window frames
cannot ask, so the last step is a sweep per key: rows are partitioned by (subscription, stream, key) and
sorted within partitions, and :func:`sweep_batches` (``mapInArrow``) walks each key's periods in event order
with heaps by position — O(n log n) per key, run in parallel across keys.  It shares no code with the
streaming engine, which derives the same periods event by event; the differential test holds them equal.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Iterator
from typing import Any

from conformance.spark.prepare import Prepared
from conformance.spark.rows import VIOLATION_SCHEMA

__all__ = ["ordering_violations", "sweep_batches", "sweep_scope"]

_MSG_OPS = frozenset({"publish", "receive", "ack", "nack"})
SCOPE = ("tid", "sub", "stream", "key")
COLUMNS = (*SCOPE, "typ", "start", "end", "ledger", "entry", "batch", "mkey", "msg", "inc", "consumer", "mop",
           "mconsumer")  # fmt: skip


def ordering_violations(p: Prepared) -> Any:
    from pyspark.sql import functions as F

    tl = p.timeline
    msg = p.messages.select("tid", "sub", "mkey", "key", "stream", "ledger", "entry", "batch", "msg")
    N = F.lit(None)
    free = tl.where(F.col("free_start")).select(
        "tid", "sub", "mkey", F.lit("F").alias("typ"), F.col("i").alias("start"), F.col("free_end").alias("end"),
        N.cast("long").alias("inc"), N.cast("string").alias("consumer"), F.col("op").alias("mop"),
        F.col("consumer").alias("mconsumer"),
    )  # fmt: skip
    exempt = tl.where(F.col("exempt_after") & ~F.col("exempt_prev")).select(
        "tid", "sub", "mkey", F.lit("E").alias("typ"), F.col("i").alias("start"), F.col("exempt_end").alias("end"),
        N.cast("long").alias("inc"), N.cast("string").alias("consumer"), N.cast("string").alias("mop"),
        N.cast("string").alias("mconsumer"),
    )  # fmt: skip
    holds = p.holds.select(
        "tid", "sub", "mkey", F.lit("H").alias("typ"), "start", "end", "inc", "consumer",
        N.cast("string").alias("mop"), N.cast("string").alias("mconsumer"),
    )  # fmt: skip
    queries = p.receives.where(~F.col("absorbed")).select(
        "tid", "sub", "mkey", F.lit("Q").alias("typ"), F.col("i").alias("start"), N.cast("long").alias("end"),
        "inc", "consumer", N.cast("string").alias("mop"), N.cast("string").alias("mconsumer"),
    )  # fmt: skip
    rows = free.unionByName(exempt).unionByName(holds).unionByName(queries).join(msg, ["tid", "sub", "mkey"])
    rows = rows.select(*COLUMNS).repartition(*SCOPE).sortWithinPartitions(*SCOPE)
    return rows.mapInArrow(sweep_batches, VIOLATION_SCHEMA)


def sweep_batches(batches: Iterator[Any]) -> Iterator[Any]:
    """``mapInArrow`` body: rows sorted by scope in, violation rows out."""
    import pyarrow as pa

    schema = _out_schema()
    current: tuple[Any, ...] | None = None
    group: list[tuple[Any, ...]] = []
    for batch in batches:
        out: list[dict[str, Any]] = []
        cols = [batch.column(name).to_pylist() for name in COLUMNS]
        for row in zip(*cols, strict=True):
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


def _out_schema() -> Any:
    import pyarrow as pa

    ref = pa.struct([("i", pa.int64()), ("op", pa.string()), ("consumer", pa.string()), ("msg", pa.string())])
    return pa.schema(
        [("tid", pa.int64()), ("kind", pa.string()), ("sub", pa.string()), ("key", pa.string()),
         ("refs", pa.list_(ref)), ("aux", pa.string())]
    )  # fmt: skip


def sweep_scope(scope: tuple[Any, ...], rows: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    """Judge every receive of one key: the smallest earlier message free, or held by someone else, at it."""
    tid, sub, _stream, key = scope
    INF = float("inf")
    points: list[tuple[float, int, int]] = []  # (index, order, row number); order: 0 end, 1 query, 2 start
    for n, row in enumerate(rows):
        typ, start, end = row[4], row[5], row[6]
        if typ == "Q":
            points.append((start, 1, n))
        else:
            points.append((start, 2, n))
            points.append((INF if end is None else end, 0, n))
    points.sort()
    active: set[int] = set()
    free_heap: list[tuple[tuple[int, int, int], int]] = []
    exempt_heap: list[tuple[tuple[int, int, int], int]] = []
    holds_by_inc: dict[int, set[int]] = {}
    holders_of: dict[str, dict[int, int]] = {}  # mkey -> hold row -> inc
    out: list[dict[str, Any]] = []
    for _at, order, n in points:
        row = rows[n]
        typ = row[4]
        pos = (row[7], row[8], row[9])
        if order == 2:
            active.add(n)
            if typ == "F":
                heapq.heappush(free_heap, (pos, n))
            elif typ == "E":
                heapq.heappush(exempt_heap, (pos, n))
            else:
                holds_by_inc.setdefault(row[12], set()).add(n)
                holders_of.setdefault(row[10], {})[n] = row[12]
        elif order == 0:
            active.discard(n)
            if typ == "H":
                holds_by_inc[row[12]].discard(n)
                del holders_of[row[10]][n]
        else:
            violation = _judge(rows, row, pos, active, free_heap, exempt_heap, holds_by_inc, holders_of)
            if violation is not None:
                earlier, earlier_msg, holder = violation
                out.append(
                    {
                        "tid": tid,
                        "kind": "out_of_order",
                        "sub": sub,
                        "key": key,
                        "refs": [earlier, {"i": row[5], "op": "receive", "consumer": row[13], "msg": row[11]}],
                        "aux": json.dumps({"consumer": row[13], "earlier_msg": earlier_msg, "holder": holder}),
                    }
                )
    return out


def _judge(
    rows: list[tuple[Any, ...]],
    query: tuple[Any, ...],
    pos: tuple[int, int, int],
    active: set[int],
    free_heap: list[tuple[tuple[int, int, int], int]],
    exempt_heap: list[tuple[tuple[int, int, int], int]],
    holds_by_inc: dict[int, set[int]],
    holders_of: dict[str, dict[int, int]],
) -> tuple[dict[str, Any], str, str | None] | None:
    me = query[12]
    best: tuple[Any, ...] | None = None
    while free_heap and free_heap[0][1] not in active:
        heapq.heappop(free_heap)
    if free_heap and free_heap[0][0] < pos:
        f = rows[free_heap[0][1]]
        op = f[14]
        ref = {"i": f[5], "op": op, "consumer": f[15], "msg": f[11] if op in _MSG_OPS else None}
        best = (free_heap[0][0], ref, f[11], None)
    for inc, hold_rows in holds_by_inc.items():
        if inc == me:
            continue
        for n in hold_rows:
            h = rows[n]
            hpos = (h[7], h[8], h[9])
            if hpos >= pos or (best is not None and hpos >= best[0]):
                continue
            holders = holders_of[h[10]]
            if me in holders.values():
                continue
            first = min(holders, key=lambda m: rows[m][5])
            fr = rows[first]
            ref = {"i": fr[5], "op": "receive", "consumer": fr[13], "msg": fr[11]}
            best = (hpos, ref, h[11], fr[13])
    if best is None:
        return None
    while exempt_heap and exempt_heap[0][1] not in active:
        heapq.heappop(exempt_heap)
    if exempt_heap and exempt_heap[0][0] < pos:
        return None
    return best[1], best[2], best[3]
