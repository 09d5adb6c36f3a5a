"""``undelivered`` on Spark (twin of :mod:`conformance.checks.loss`): free after a message's last event."""

from __future__ import annotations

from typing import Any

from conformance.spark.prepare import Prepared
from conformance.spark.rows import ref

__all__ = ["undelivered_violations"]


def undelivered_violations(p: Prepared, end_of: dict[int, int]) -> Any:
    """``end_of``: trace id -> index of its ``end`` event, for the traces that were drained."""
    from pyspark.sql import Window as W
    from pyspark.sql import functions as F

    if not end_of:
        return None
    last = W.partitionBy("tid", "sub", "mkey").orderBy(F.col("i").desc())
    drained = F.create_map(*[x for tid, e in sorted(end_of.items()) for x in (F.lit(tid), F.lit(e))])
    tl = p.timeline.select(
        "tid", "sub", "mkey", "free_after", "since",
        F.row_number().over(last).alias("_n"), F.element_at(drained, F.col("tid")).alias("end_i"),
    ).where((F.col("_n") == 1) & F.col("free_after") & F.col("end_i").isNotNull())  # fmt: skip
    tl = tl.join(p.messages.select("tid", "sub", "mkey", "key", "msg"), ["tid", "sub", "mkey"])
    return tl.select(
        "tid",
        F.lit("undelivered").alias("kind"),
        "sub",
        "key",
        F.array(ref(F.col("since.i"), F.col("since.op"), F.col("since.consumer"), F.col("msg"))).alias("refs"),
        F.to_json(F.struct(F.col("msg").alias("msg"), F.col("end_i").alias("end"))).alias("aux"),
    )
