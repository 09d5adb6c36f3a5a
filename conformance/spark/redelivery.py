"""``redelivered_after_ack`` on Spark (twin of :mod:`conformance.checks.redelivery`).

An ack arms when a hold of the acking incarnation ends at it (a join with the holds).  Per (subscription,
message), a window over live receives and acks gives each receive the last ack and the last receive before it;
the first receive after an armed ack is a violation unless the acker's next redeliver/crash, or a fault, came
in between.
"""

from __future__ import annotations

from typing import Any

from conformance.spark.prepare import Prepared, _next_fault
from conformance.spark.rows import ref

__all__ = ["redelivery_violations"]


def redelivery_violations(p: Prepared, faults: dict[int, list[int]]) -> Any:
    from pyspark.sql import Window as W
    from pyspark.sql import functions as F

    ev = p.events
    acks = ev.where((F.col("op") == "ack") & F.col("inc").isNotNull())
    ends = p.holds.select(
        "tid", "sub", "mkey", F.col("inc").alias("_inc"), F.col("end").alias("_end"), F.lit(True).alias("_armed")
    )
    acks = acks.join(
        ends,
        (acks["tid"] == ends["tid"]) & (acks["sub"] == ends["sub"]) & (acks["mkey"] == ends["mkey"])
        & (acks["inc"] == ends["_inc"]) & (acks["i"] == ends["_end"]),
        "left",
    ).select(acks["*"], F.coalesce(F.col("_armed"), F.lit(False)).alias("armed"))  # fmt: skip
    acks = acks.select("*", _next_fault(faults, F.col("i")).alias("ack_fault"))
    recv = ev.where((F.col("op") == "receive") & F.col("inc").isNotNull())
    cols = ["tid", "sub", "mkey", "i", "op", "consumer", "msg"]
    no_ack = [F.lit(None).cast("long").alias(c) for c in ("next_disarm", "ack_fault")]
    both = recv.select(*cols, F.lit(False).alias("armed"), *no_ack).unionByName(
        acks.select(*cols, "armed", "next_disarm", "ack_fault")
    )
    w = W.partitionBy("tid", "sub", "mkey").orderBy("i").rowsBetween(W.unboundedPreceding, -1)
    ack_info = F.struct("i", "consumer", "armed", "next_disarm", "ack_fault")
    both = both.select(
        "*",
        F.last(F.when(F.col("op") == "ack", ack_info), ignorenulls=True).over(w).alias("prev_ack"),
        F.last(F.when(F.col("op") == "receive", F.col("i")), ignorenulls=True).over(w).alias("prev_recv"),
    )
    hit = both.where(
        (F.col("op") == "receive")
        & F.col("prev_ack").isNotNull()
        & F.col("prev_ack.armed")
        & (F.col("prev_recv").isNull() | (F.col("prev_recv") < F.col("prev_ack.i")))
        & (F.col("prev_ack.next_disarm").isNull() | (F.col("prev_ack.next_disarm") > F.col("i")))
        & (F.col("prev_ack.ack_fault").isNull() | (F.col("prev_ack.ack_fault") > F.col("i")))
    )
    hit = hit.join(p.messages.select("tid", "sub", "mkey", "key"), ["tid", "sub", "mkey"])
    return hit.select(
        "tid",
        F.lit("redelivered_after_ack").alias("kind"),
        "sub",
        "key",
        F.array(
            ref(F.col("prev_ack.i"), "ack", F.col("prev_ack.consumer"), F.col("msg")),
            ref(F.col("i"), "receive", F.col("consumer"), F.col("msg")),
        ).alias("refs"),
        F.to_json(F.struct(F.col("prev_ack.consumer").alias("acker"), F.col("consumer").alias("receiver"))).alias(
            "aux"
        ),
    )
