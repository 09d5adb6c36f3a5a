"""``key_overlap`` with window functions (twin of :mod:`conformance.checks.exclusivity`).

Holds become +1 at their start and -1 at their end.  A running sum per (scope, incarnation) and per scope,
over the rows *before* a hold's start, says whether the receiving incarnation held nothing of the key
(``own == 0``: the start of an episode) while others held some (``total - own > 0``).  Only those starts —
violations, so the cost follows the output — are joined with the holds of the other incarnations open at that
moment to name each holder and its earliest-received outstanding message (the witness).
"""

from __future__ import annotations

from typing import Any

from conformance.spark.prepare import Prepared
from conformance.spark.rows import ref

__all__ = ["overlap_violations"]


def overlap_violations(p: Prepared) -> Any:
    from pyspark.sql import Window as W
    from pyspark.sql import functions as F

    holds = p.holds.join(p.messages.select("tid", "sub", "mkey", "key", "stream"), ["tid", "sub", "mkey"])
    scope = ["tid", "sub", "stream", "key"]
    starts = holds.select(*scope, "inc", F.col("start").alias("at"), F.lit(1).alias("d"), "start", "consumer", "msg")
    ends = holds.where(F.col("end").isNotNull()).select(
        *scope, "inc", F.col("end").alias("at"), F.lit(-1).alias("d"), "start", "consumer", "msg"
    )
    points = starts.unionByName(ends)
    own_w = W.partitionBy(*scope, "inc").orderBy("at", "d").rowsBetween(W.unboundedPreceding, -1)
    tot_w = W.partitionBy(*scope).orderBy("at", "d").rowsBetween(W.unboundedPreceding, -1)
    points = points.select(
        "*",
        F.coalesce(F.sum("d").over(own_w), F.lit(0)).alias("own"),
        F.coalesce(F.sum("d").over(tot_w), F.lit(0)).alias("tot"),
    )
    flagged = points.where((F.col("d") == 1) & (F.col("own") == 0) & (F.col("tot") > 0)).select(
        *scope, F.col("inc").alias("r_inc"), F.col("start").alias("r"), F.col("consumer").alias("receiver"),
        F.col("msg").alias("r_msg"),
    )  # fmt: skip
    other = holds.select(
        *scope, F.col("inc").alias("h_inc"), F.col("start").alias("h_start"), F.col("end").alias("h_end"),
        F.col("consumer").alias("holder"), F.col("msg").alias("h_msg"),
    )  # fmt: skip
    pairs = flagged.join(other, scope).where(
        (F.col("h_inc") != F.col("r_inc"))
        & (F.col("h_start") < F.col("r"))
        & (F.col("h_end").isNull() | (F.col("h_end") > F.col("r")))
    )
    first = pairs.groupBy(*scope, "r", "receiver", "r_msg", "h_inc").agg(
        F.min_by(F.struct("h_start", "holder", "h_msg"), "h_start").alias("h")
    )
    return first.select(
        "tid",
        F.lit("key_overlap").alias("kind"),
        "sub",
        "key",
        F.array(
            ref(F.col("h.h_start"), "receive", F.col("h.holder"), F.col("h.h_msg")),
            ref(F.col("r"), "receive", F.col("receiver"), F.col("r_msg")),
        ).alias("refs"),
        F.to_json(F.struct(F.col("h.holder").alias("holder"), F.col("receiver").alias("receiver"))).alias("aux"),
    )
