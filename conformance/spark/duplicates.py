"""``duplicate_publish`` on Spark (twin of :mod:`conformance.checks.duplicates`).

Evidence of a stored id: ok publish receipts with a real id, and receives joined through their uid to the
(producer, seq) of the uid's first publish.  Per (producer, seq), ids ranked by their first evidence; every
id after the first is a violation.
"""

from __future__ import annotations

from typing import Any

from conformance.spark.prepare import Prepared
from conformance.spark.rows import ref

__all__ = ["duplicate_violations"]


def duplicate_violations(p: Prepared, raw: Any) -> Any:
    from pyspark.sql import Window as W
    from pyspark.sql import functions as F

    ev = raw
    pubs = ev.where(F.col("op") == "publish")
    first_uid = W.partitionBy("tid", "uid").orderBy("i")
    uid_map = (
        pubs.where(F.col("uid").isNotNull())
        .select("*", F.row_number().over(first_uid).alias("_n"))
        .where((F.col("_n") == 1) & F.col("producer").isNotNull() & F.col("seq").isNotNull())
        .select("tid", "uid", F.col("producer").alias("p"), F.col("seq").alias("s"))
    )
    stored = pubs.where(
        (F.col("result") == "ok") & (F.col("ledger") >= 0) & (F.col("entry") >= 0)
        & F.col("producer").isNotNull() & F.col("seq").isNotNull()
    ).select(
        "tid", F.col("producer").alias("p"), F.col("seq").alias("s"), "mkey", "i", F.lit("publish").alias("op"),
        F.lit(None).cast("string").alias("consumer"), "msg", "key",
    )  # fmt: skip
    received = (
        ev.where((F.col("op") == "receive") & F.col("uid").isNotNull())
        .join(uid_map, ["tid", "uid"])
        .select("tid", "p", "s", "mkey", "i", F.lit("receive").alias("op"), "consumer", "msg", "key")
    )
    evidence = stored.unionByName(received)
    first = evidence.groupBy("tid", "p", "s", "mkey").agg(
        F.min_by(F.struct("i", "op", "consumer", "msg", "key"), "i").alias("e")
    )
    rank = W.partitionBy("tid", "p", "s").orderBy(F.col("e.i"))
    first = first.select(
        "*",
        F.row_number().over(rank).alias("_rank"),
        F.first("e").over(rank.rowsBetween(W.unboundedPreceding, W.currentRow)).alias("_first"),
    )
    dups = first.where(F.col("_rank") > 1)
    return dups.select(
        "tid",
        F.lit("duplicate_publish").alias("kind"),
        F.lit(None).cast("string").alias("sub"),
        F.col("e.key").alias("key"),
        F.array(
            ref(F.col("_first.i"), F.col("_first.op"), F.col("_first.consumer"), F.col("_first.msg")),
            ref(F.col("e.i"), F.col("e.op"), F.col("e.consumer"), F.col("e.msg")),
        ).alias("refs"),
        F.to_json(F.struct(F.col("p").alias("producer"), F.col("s").alias("seq"))).alias("aux"),
    )
