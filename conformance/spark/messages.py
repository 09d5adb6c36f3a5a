"""Each message's state, event by event, with window functions over its own events.

Twin of the message records of the streaming engine (:mod:`conformance.checks._state`); the rules are those of
``docs/checker.md``.  Every window here is partitioned by (trace, ``ledger:entry``, message, subscription) and
ordered by ``i``, so the partitioning by message of :func:`conformance.spark.prepare.shared_events` serves them all;
the rows are sorted twice (before and after the hold ends are added).  A message has few events, so frames
that look ahead (``1 .. unboundedFollowing``) and small ``collect_list`` arrays stay cheap.

1. The first receipt: of the ``P`` rows of a message only the first stored publish counts.
2. Holds: a live receive ``R`` by incarnation C starts a hold unless C already holds the message (then it is
   *absorbed*: the same end as C's earlier receive); the hold ends at the first of the next ack (anyone's),
   C's next nack of it, C's next release (redeliver, close, crash) or the next fault touching C.  An ack *arms*
   ``redelivered_after_ack`` when a hold of the acking incarnation ends at it; the first hold start after the
   last armed ack is a redelivery (``redelivered``) unless the acker's next disarm or fault came in between.
3. Each hold end becomes a row ``X`` (one per hold), and running sums over ``i`` give the state after every
   event: known (from its first ``P``/``R``/``L``), acknowledged (an ack before, and no redelivery since: acks
   logged before the message was known count), how many hold it, free, exempt.
4. Periods for the scope checks: *free* from the event that freed it (its first receipt, a late receive, the
   release that left it held by nobody) to its next receive or effective ack; *exempt* from a nack or a
   redeliver release to its next effective ack; *holds*.  Receives learn whether they ended a free period and
   since when (the lower bound of ``misassigned``) and the last ack before them (``redelivered_after_ack``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["RELEASES", "message_states"]

RELEASES = ("nack", "redeliver", "close", "crash", "fault")
_PART = ("tid", "le", "mkey", "sub")


def message_states(rows: Any) -> Any:
    """Per message row: the holds, the state after it, and the periods it starts (see the module docstring)."""
    from pyspark.sql import Window as W
    from pyspark.sql import functions as F

    col, lit, when = F.col, F.lit, F.when
    kind, i = col("kind"), col("i")
    unbounded, following = W.unboundedPreceding, W.unboundedFollowing
    # 1. only the first stored publish of a message counts (rows without a subscription find it)
    first_receipt = W.partitionBy("tid", "le", "mkey").orderBy("sub", "i").rowsBetween(unbounded, following)
    m = rows.select("*", F.min(when((kind == "P") & col("sub").isNull(), i)).over(first_receipt).alias("first_pub"))
    m = m.where(col("sub").isNotNull() & ((kind != "P") | (i == col("first_pub")))).drop("first_pub")
    # 2. holds
    w = W.partitionBy(*_PART).orderBy("i")
    later, whole, earlier = (
        w.rowsBetween(1, following),
        w.rowsBetween(unbounded, following),
        w.rowsBetween(unbounded, -1),
    )
    known_row = kind.isin("P", "R", "L")
    m = m.select(
        "*",
        F.min(when(kind == "A", i)).over(later).alias("next_ack"),
        F.collect_list(when(kind == "N", F.struct(i.alias("i"), col("inc").alias("inc")))).over(later).alias("_nacks"),
        F.min(when(known_row, i)).over(whole).alias("first_known"),
        F.first(when(known_row, col("key")), ignorenulls=True).over(whole).alias("mkey_key"),
    )
    own_nack = F.array_min(F.transform(F.filter(col("_nacks"), lambda x: x["inc"] == col("inc")), lambda x: x["i"]))
    end = F.least(col("next_ack"), own_nack, col("next_rel"), col("next_fault"))
    m = m.select(*[c for c in m.columns if c != "_nacks"], when(kind == "R", end).alias("end"), own_nack.alias("_own"))
    end_op = (
        when(col("end") == col("_own"), lit("nack"))
        .when(col("end") == col("next_rel"), col("next_rel_op"))
        .when(col("end") == col("next_fault"), lit("fault"))
        .when(col("end") == col("next_ack"), lit("ack"))
    )
    m = m.select(*[c for c in m.columns if c != "_own"], end_op.alias("end_op"))
    prev_r = F.collect_list(when(kind == "R", F.struct(col("inc").alias("inc"), col("end").alias("end")))).over(earlier)
    m = m.select("*", prev_r.alias("_prev_r"))
    absorbed = (kind == "R") & F.exists(
        col("_prev_r"), lambda x: (x["inc"] == col("inc")) & x["end"].eqNullSafe(col("end"))
    )
    armed = (kind == "A") & F.coalesce(
        F.exists(col("_prev_r"), lambda x: (x["inc"] == col("inc")) & (x["end"] == i)), lit(False)
    )
    m = m.select(*[c for c in m.columns if c != "_prev_r"], absorbed.alias("absorbed"), armed.alias("armed"))
    # 3. one X row per hold end
    ends = (kind == "R") & ~col("absorbed") & col("end").isNotNull()
    m = m.select("*", F.explode(when(ends, F.array(lit(0), lit(1))).otherwise(F.array(lit(0)))).alias("_x"))
    x = col("_x") == 1
    keep = [c for c in m.columns if c not in ("_x", "i", "kind", "consumer")]
    m = m.select(
        *keep,
        when(x, col("end")).otherwise(i).alias("i"),
        when(x, lit("X")).otherwise(kind).alias("kind"),
        when(x & ~col("end_op").isin("ack", "fault"), col("consumer")).when(~x, col("consumer")).alias("consumer"),
        when(x, col("end_op")).alias("x_op"),
        col("consumer").alias("holder"),
    )
    kind, i = col("kind"), col("i")
    w = W.partitionBy(*_PART).orderBy("i")
    upto, before, after = w.rangeBetween(unbounded, 0), w.rangeBetween(unbounded, -1), w.rangeBetween(1, following)
    live_hold = (kind == "R") & ~col("absorbed")
    ack_eff = kind == "A"  # any ack, even one logged before the message was known here
    ack_info = F.struct(
        i.alias("i"), col("consumer").alias("consumer"), col("next_disarm").alias("next_disarm"),
        col("next_fault").alias("next_fault"),
    )  # fmt: skip
    m = m.select(
        "*",
        F.sum(when(live_hold, 1).when(kind == "X", -1).otherwise(0)).over(upto).alias("holders"),
        F.min(when(live_hold | ack_eff, i)).over(after).alias("next_rend"),
        F.min(when(live_hold, i)).over(after).alias("next_r"),
        F.min(when(ack_eff, i)).over(after).alias("next_aeff"),
        F.last(when(ack_eff & col("armed"), ack_info), ignorenulls=True).over(before).alias("prev_ack"),
        F.max(when(live_hold, i)).over(before).alias("prev_recv"),
        F.lag(F.struct(i.alias("i"), kind.alias("kind"))).over(w).alias("_lag"),
    )
    ack = col("prev_ack")
    redelivered = (
        live_hold
        & ack.isNotNull()
        & (col("prev_recv").isNull() | (col("prev_recv") < ack["i"]))
        & (ack["next_disarm"].isNull() | (ack["next_disarm"] > i))
        & (ack["next_fault"].isNull() | (ack["next_fault"] > i))
    )
    m = m.select("*", redelivered.alias("redelivered"))
    m = m.select(
        "*",
        F.coalesce(
            F.last(when(ack_eff, lit(True)).when(col("redelivered"), lit(False)), ignorenulls=True).over(before),
            lit(False),
        ).alias("acked_prev"),
    )
    # 4. periods
    first_x = ~((col("_lag.i") == i) & (col("_lag.kind") == "X"))
    releases = (kind == "X") & col("x_op").isin(*RELEASES)
    free_start = ~col("acked_prev") & (
        ((kind == "P") & (i == col("first_known")))
        | ((kind == "L") & (i == col("first_known")))
        | (releases & (col("holders") == 0) & first_x)
    )
    mark_op = when(kind == "P", lit("publish")).when(kind == "L", lit("receive")).otherwise(col("x_op"))
    exempt_start = ~col("acked_prev") & (
        ((kind == "N") & (i > col("first_known"))) | ((kind == "X") & (col("x_op") == "redeliver"))
    )
    mark = F.struct(
        i.alias("i"), mark_op.alias("op"), col("consumer").alias("consumer"), col("send_t").alias("send_t"),
        col("next_rend").alias("end"), (col("next_r") == col("next_rend")).alias("by_receive"),
    )  # fmt: skip
    m = m.select(
        *[c for c in m.columns if c != "_lag"],
        free_start.alias("free_start"),
        exempt_start.alias("exempt_start"),
        when(free_start, mark).alias("free_mark"),
    )
    last_free = F.last(col("free_mark"), ignorenulls=True).over(before)
    m = m.select("*", last_free.alias("since"))
    free_prev = col("since").isNotNull() & (col("since.end") == i)
    held_acked = live_hold & col("acked_prev") & ~col("redelivered")  # a hold of a message owed to nobody
    return m.select("*", (live_hold & free_prev).alias("free_prev"), held_acked.alias("held_acked"))
