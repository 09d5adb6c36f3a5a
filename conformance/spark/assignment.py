"""``misassigned`` on Spark (twin of :mod:`conformance.checks.assignment`).

Window functions give each judged receive its lower bound (the state of its message just before it: free
since a publish → that send's ``t0``; free since a release → that event).  Membership changes are few: the
driver rebuilds each subscription's :class:`~conformance.checks.assignment.Timeline` on the reference selector
(the selectors are the reference model's Python code), and ``mapInArrow`` asks it, per receive, whether any
candidate state names the receiving incarnation.  Unlike the streaming engine the timeline is complete, so a
receive is decided at once; a test holds both to the same answers.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from conformance.checks.assignment import Timeline

__all__ = ["judge", "misassigned_violations"]

_MSG_OPS = frozenset({"publish", "receive", "ack", "nack"})
_RELEASE_OPS = frozenset({"nack", "redeliver", "close", "crash", "fault"})
_COLUMNS = ("tid", "sub", "key", "msg", "i", "t", "inc", "consumer", "free_prev", "s_i", "s_op", "s_consumer", "s_t0")


def judge(tl: Timeline, r: int, lower: tuple[str, int] | None, key: str, inc_id: int) -> list[str] | None:
    """The names the candidate states select when none selects ``inc_id`` (a violation), else None."""
    if tl.broken_at is not None and tl.broken_at < r:
        return None
    cands = tl.candidates(r, lower)
    for k in cands:
        if tl.selects(k, key, inc_id):
            return None
    if tl.broken_at is not None and not any(c.index > r for c in tl.changes):
        return None  # the next change is the one the selector refused: the streaming engine could not decide
    names = []
    for k in cands:
        sel = tl.selected(k, key)
        names.append("nobody" if sel is None else sel.name)
    return names


def misassigned_violations(
    p: Any, timelines: dict[tuple[int, str], Timeline], selectors: dict[int, str], first_fault: dict[int, int]
) -> Any:
    from pyspark.sql import functions as F

    if not timelines:
        return None
    recv = p.receives.where(~F.col("absorbed")).select("tid", "sub", "mkey", "i", "t", "inc", "consumer")
    state = p.timeline.select(
        "tid", "sub", "mkey", "i", "free_prev", F.col("since.i").alias("s_i"), F.col("since.op").alias("s_op"),
        F.col("since.consumer").alias("s_consumer"), F.col("since.send_t").alias("s_t0"),
    )  # fmt: skip
    rows = recv.join(state, ["tid", "sub", "mkey", "i"]).join(
        p.messages.select("tid", "sub", "mkey", "key", "msg"), ["tid", "sub", "mkey"]
    )
    if first_fault:
        limit = F.create_map(*[x for tid, f in sorted(first_fault.items()) for x in (F.lit(tid), F.lit(f))])
        rows = rows.where(F.element_at(limit, F.col("tid")).isNull() | (F.col("i") < F.element_at(limit, F.col("tid"))))
    rows = rows.select(*_COLUMNS)
    from conformance.spark.rows import VIOLATION_SCHEMA

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        yield from _judge_batches(batches, timelines, selectors)

    return rows.mapInArrow(run, VIOLATION_SCHEMA)


def _judge_batches(
    batches: Iterator[Any], timelines: dict[tuple[int, str], Timeline], selectors: dict[int, str]
) -> Iterator[Any]:
    import pyarrow as pa

    from conformance.spark.ordering import _out_schema

    schema = _out_schema()
    for batch in batches:
        out = []
        for row in zip(*(batch.column(c).to_pylist() for c in _COLUMNS), strict=True):
            tid, sub, key, msg, r, t, inc, consumer, free_prev, s_i, s_op, s_consumer, s_t0 = row
            tl = timelines.get((tid, sub))
            if tl is None:
                continue
            lower: tuple[str, int] | None = None
            lower_ref = None
            if free_prev and s_op is not None:
                if s_op == "publish" and s_t0 is not None:
                    lower = ("time", min(s_t0, t))
                elif s_op in _RELEASE_OPS:
                    lower = ("index", s_i)
                if lower is not None:
                    lower_ref = {"i": s_i, "op": s_op, "consumer": s_consumer, "msg": msg if s_op in _MSG_OPS else None}
            expected = judge(tl, r, lower, key, inc)
            if expected is None:
                continue
            got = {"i": r, "op": "receive", "consumer": consumer, "msg": msg}
            out.append(
                {
                    "tid": tid,
                    "kind": "misassigned",
                    "sub": sub,
                    "key": key,
                    "refs": [got] if lower_ref is None else [lower_ref, got],
                    "aux": json.dumps({"consumer": consumer, "expected": expected, "selector": selectors.get(tid, "")}),
                }
            )
        if out:
            yield pa.RecordBatch.from_pylist(out, schema=schema)
