"""``unexpected_message`` on Spark (twin of :mod:`conformance.checks.unexpected`): an anti-join on uid."""

from __future__ import annotations

from typing import Any

from conformance.spark.rows import ref

__all__ = ["unexpected_violations"]


def unexpected_violations(raw: Any) -> Any:
    from pyspark.sql import functions as F

    published = raw.where((F.col("op") == "publish") & F.col("uid").isNotNull()).select("tid", "uid").distinct()
    received = raw.where((F.col("op") == "receive") & F.col("uid").isNotNull())
    stray = received.join(published, ["tid", "uid"], "left_anti")
    first = stray.groupBy("tid", "uid").agg(F.min_by(F.struct("i", "consumer", "msg", "key"), "i").alias("e"))
    return first.select(
        "tid",
        F.lit("unexpected_message").alias("kind"),
        F.lit(None).cast("string").alias("sub"),
        F.col("e.key").alias("key"),
        F.array(ref(F.col("e.i"), "receive", F.col("e.consumer"), F.col("e.msg"))).alias("refs"),
        F.to_json(F.struct(F.col("uid").alias("uid"))).alias("aux"),
    )
