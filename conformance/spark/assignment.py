"""``misassigned`` on Spark (twin of :mod:`conformance.checks.assignment`).

The membership :class:`~conformance.checks.assignment.Timeline` of each subscription is rebuilt on the driver
(membership events are few; the selectors are the reference model's Python code).  Two small tables are
broadcast to the job:

* ``slots``: each key's slot under the trace's selector — computed once per distinct key, not per event;
* ``owners``: for each (subscription, slot, incarnation) the windows in which the *head* states (a broker
  that removes a crashed consumer at once) name that incarnation — consecutive head states naming it merged
  into one window, which is exact for a chain of states (each window ends no earlier than the next begins).

Every judged receive (a hold start before the first fault, in a subscription whose membership could be
followed) is looked up in both (hash joins on the broadcast tables, no shuffle) and is explained when one of
its owner windows was possibly in effect between its lower bound and itself.  The rest — suspects, rare on a
correct broker — are collected and decided on the driver against *every* possible membership
(:meth:`Timeline.explains`, which also knows the states where a crashed consumer was still a member), with
the same functions as the streaming engine, which also give the explanation.
"""

from __future__ import annotations

import json
import math
from typing import Any

from conformance.checks.assignment import Node, Timeline, make_misassigned
from conformance.spark.membership import NEG, POS, TraceInfo
from conformance.spark.messages import RELEASES
from conformance.violations import Violation

__all__ = ["decide_suspects", "suspects", "tables"]


def _bound(value: float, default: int) -> int:
    return default if math.isinf(value) else int(value)


def _runs(tl: Timeline, slots: list[int]) -> list[tuple[int, int, list[tuple[int, int, int]]]]:
    """``(slot, incarnation, windows)`` rows: each (lo, hi, hi_t) window of consecutive heads naming it."""
    heads: list[Node] = tl.heads
    owners = [[None if ref is None else ref.consumer_id for ref in map(head.state.select, slots)] for head in heads]
    out: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
    for k, slot in enumerate(slots):
        owner: int | None = None
        first: Node | None = None
        for n, head in enumerate([*heads, None]):
            now = owners[n][k] if head is not None else None
            if now == owner and head is not None:
                continue
            if owner is not None and first is not None:  # the run of ``owner`` ended with the previous head
                last = heads[n - 1]
                window = (_bound(first.lo, NEG), _bound(last.hi, POS), _bound(last.hi_t, POS))
                out.setdefault((slot, owner), []).append(window)
            owner, first = now, head
    return [(slot, inc, windows) for (slot, inc), windows in out.items()]


def tables(spark: Any, infos: dict[int, TraceInfo]) -> tuple[Any, Any] | None:
    """The broadcast ``slots`` and ``owners`` tables (None when no trace judges ``misassigned``)."""
    import pyarrow as pa

    slot_rows: dict[str, list[Any]] = {"tid": [], "key": [], "slot": []}
    owner_rows: dict[str, list[Any]] = {"tid": [], "sub": [], "slot": [], "inc": [], "wins": []}
    for tid, info in infos.items():
        if not info.timelines:
            continue
        any_tl = next(iter(info.timelines.values()))
        slot_of = {key: any_tl.slot(key) for key in info.keys}
        for key, slot in slot_of.items():
            slot_rows["tid"].append(tid)
            slot_rows["key"].append(key)
            slot_rows["slot"].append(slot)
        slots = sorted(set(slot_of.values()))
        for sub, tl in info.timelines.items():
            for slot, inc, wins in _runs(tl, slots):
                for name, value in (("tid", tid), ("sub", sub), ("slot", slot), ("inc", inc)):
                    owner_rows[name].append(value)
                owner_rows["wins"].append([{"lo": lo, "hi": hi, "hi_t": hi_t} for lo, hi, hi_t in wins])
    if not slot_rows["tid"]:
        return None
    win = pa.struct([("lo", pa.int64()), ("hi", pa.int64()), ("hi_t", pa.int64())])
    slot_table = pa.table(
        {"tid": pa.array(slot_rows["tid"], pa.int64()), "key": pa.array(slot_rows["key"], pa.string()),
         "slot": pa.array(slot_rows["slot"], pa.int64())}
    )  # fmt: skip
    owner_table = pa.table(
        {"tid": pa.array(owner_rows["tid"], pa.int64()), "sub": pa.array(owner_rows["sub"], pa.string()),
         "slot": pa.array(owner_rows["slot"], pa.int64()), "inc": pa.array(owner_rows["inc"], pa.int64()),
         "wins": pa.array(owner_rows["wins"], pa.list_(win))}
    )  # fmt: skip
    return spark.createDataFrame(slot_table), spark.createDataFrame(owner_table)


def suspects(m: Any, infos: dict[int, TraceInfo], spark: Any) -> tuple[Any, Any]:
    """``m`` with the ownership lookups joined, and the condition marking its suspect receives."""
    from pyspark.sql import functions as F

    from conformance.spark.prepare import trace_map

    col, lit, when = F.col, F.lit, F.when
    built = tables(spark, infos)
    if built is None:  # no trace judges misassigned: the columns the job reads anyway, all null
        no_lower = (lit(None).cast("string").alias("lower_kind"), lit(None).cast("long").alias("lower"))
        return m.select("*", lit(False).alias("judged"), *no_lower), lit(False)
    slot_table, owner_table = built
    first_fault = trace_map({tid: info.first_fault for tid, info in infos.items() if info.faults}, "long")
    until = {
        f"{tid}\x1f{sub}": _bound(tl.judges_until, POS)
        for tid, info in infos.items()
        for sub, tl in info.timelines.items()
    }
    pairs = [x for k, v in sorted(until.items()) for x in (lit(k), lit(v))]
    judges_until = F.element_at(F.create_map(*pairs), F.concat(col("tid").cast("string"), lit("\x1f"), col("sub")))
    judged = (
        (col("kind") == "R")
        & ~col("absorbed")
        & (first_fault.isNull() | (col("i") < first_fault))
        & judges_until.isNotNull()
        & (col("i") < judges_until)
    )
    since = col("since")
    by_time = col("free_prev") & (since["op"] == "publish") & since["send_t"].isNotNull()
    by_index = col("free_prev") & since["op"].isin(*RELEASES)
    lower_kind = when(by_time, lit("time")).when(by_index, lit("index"))
    lower = when(by_time, F.least(since["send_t"], col("t"))).when(by_index, since["i"])
    m = m.select("*", judged.alias("judged"), lower_kind.alias("lower_kind"), lower.alias("lower"))
    s = F.broadcast(slot_table.select(col("tid").alias("s_tid"), col("key").alias("s_key"), "slot"))
    m = m.join(s, (col("judged")) & (col("tid") == col("s_tid")) & (col("mkey_key") == col("s_key")), "left")
    names = {"tid": "o_tid", "sub": "o_sub", "slot": "o_slot", "inc": "o_inc"}
    o = F.broadcast(owner_table.select(*[col(a).alias(b) for a, b in names.items()], "wins"))
    m = m.join(
        o,
        (col("tid") == col("o_tid")) & (col("sub") == col("o_sub")) & (col("slot") == col("o_slot"))
        & (col("inc") == col("o_inc")),
        "left",
    )  # fmt: skip

    def fits(w: Any) -> Any:
        return (w["lo"] < col("i")) & (
            col("lower_kind").isNull()
            | ((col("lower_kind") == "index") & (w["hi"] >= col("lower")))
            | ((col("lower_kind") == "time") & (w["hi_t"] >= col("lower")))
        )

    explained = F.coalesce(F.exists(col("wins"), fits), lit(False))
    return m, col("judged") & ~explained


def decide_suspects(rows: list[Any], infos: dict[int, TraceInfo]) -> dict[int, list[Violation]]:
    """The suspects the owner windows did not explain, judged against every possible membership."""
    out: dict[int, list[Violation]] = {}
    for row in rows:
        info = infos[row["tid"]]
        tl = info.timelines[row["sub"]]
        aux = json.loads(row["aux"])
        bound = aux.get("lower")  # to_json leaves out null fields: no lower bound, no key
        lower = None if bound is None else (bound[0], int(bound[1]))
        key, r, inc = row["key"], aux["i"], aux["inc"]
        if tl.explains(r, lower, key, inc):
            continue
        refs = [tuple(x[k] for k in ("i", "op", "consumer", "msg")) for x in row["refs"]]
        spec = info.header.selector
        what = f"{spec.kind} (Pulsar {spec.pulsar_version})" if spec is not None else "reference"
        lower_ref = refs[0] if len(refs) == 2 else None
        violation = make_misassigned(
            row["sub"], key, aux["consumer"], refs[-1], lower_ref, tl.expected(r, lower, key), what
        )
        out.setdefault(row["tid"], []).append(violation)
    return out
