"""``unexpected_message`` on Spark (twin of :mod:`conformance.checks.unexpected`), and each receive's publish.

:func:`receives_by_uid` joins every receive carrying a uid with the uid's *first* publish event (its
(producer, seq); a hash aggregate and a hash join by uid): a receive without one is unexpected (reported once
per uid, at its first receive), the others are evidence for :mod:`conformance.spark.duplicates`.
"""

from __future__ import annotations

from typing import Any

from conformance.spark.rows import ref

__all__ = ["receives_by_uid", "unexpected_violations"]


def receives_by_uid(ev: Any) -> Any:
    """Receives with a uid, with ``ps`` (the (producer, seq) of the uid's first publish; null if none)."""
    from pyspark.sql import functions as F

    col = F.col
    first = (
        ev.where((col("op") == "publish") & col("uid").isNotNull())
        .groupBy("tid", "uid")
        .agg(F.min_by(F.struct(col("producer").alias("p"), col("seq").alias("s")), col("i")).alias("ps"))
        .select("tid", "uid", "ps", F.lit(True).alias("published"))
    )
    recv = ev.where((col("op") == "receive") & col("uid").isNotNull())
    return recv.join(first.hint("shuffle_hash"), ["tid", "uid"], "left")


def unexpected_violations(joined: Any) -> Any:
    from pyspark.sql import functions as F

    stray = joined.where(F.col("published").isNull())
    first = stray.groupBy("tid", "uid").agg(F.min_by(F.struct("i", "consumer", "msg", "key"), "i").alias("e"))
    return first.select(
        "tid",
        F.lit("unexpected_message").alias("kind"),
        F.lit(None).cast("string").alias("sub"),
        F.col("e.key").alias("key"),
        F.array(ref(F.col("e.i"), "receive", F.col("e.consumer"), F.col("e.msg"))).alias("refs"),
        F.to_json(F.struct(F.col("uid").alias("uid"))).alias("aux"),
    )
