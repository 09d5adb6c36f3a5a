"""``duplicate_publish`` on Spark (twin of :mod:`conformance.checks.duplicates`).

Evidence of a stored id: ``ok`` publish receipts with a real id, and receives whose uid's first publish
carries the (producer, seq) (:func:`conformance.spark.unexpected.receives_by_uid`).  Two hash aggregates: the
first evidence of each (producer, seq, id), then the ids of each (producer, seq) — every id after the first
(by its first evidence) is a violation.
"""

from __future__ import annotations

from typing import Any

from conformance.spark.rows import ref

__all__ = ["duplicate_violations", "lost_write_violations"]


def duplicate_violations(ev: Any, receives: Any) -> Any:
    from pyspark.sql import functions as F

    col = F.col
    nothing = F.lit(None).cast("string")
    stored = ev.where(
        (col("op") == "publish") & (col("result") == "ok") & (col("ledger") >= 0) & (col("entry") >= 0)
        & col("producer").isNotNull() & col("seq").isNotNull()
    ).select(
        "tid", col("producer").alias("p"), col("seq").alias("s"), "mkey",
        F.struct("i", F.lit("publish").alias("op"), nothing.alias("consumer"), "msg", "key").alias("e"),
    )  # fmt: skip
    received = receives.where(col("ps.p").isNotNull() & col("ps.s").isNotNull()).select(
        "tid", col("ps.p").alias("p"), col("ps.s").alias("s"), "mkey",
        F.struct("i", F.lit("receive").alias("op"), "consumer", "msg", "key").alias("e"),
    )  # fmt: skip
    first = stored.unionByName(received).groupBy("tid", "p", "s", "mkey").agg(F.min_by("e", col("e.i")).alias("e"))
    ids = first.groupBy("tid", "p", "s").agg(
        F.count(F.lit(1)).alias("n"), F.sort_array(F.collect_list("e")).alias("es")
    )
    dups = ids.where(col("n") > 1).select("tid", "p", "s", col("es")[0].alias("first"), F.posexplode("es"))
    dups = dups.where(col("pos") > 0)
    return dups.select(
        "tid",
        F.lit("duplicate_publish").alias("kind"),
        F.lit(None).cast("string").alias("sub"),
        col("col.key").alias("key"),
        F.array(
            ref(col("first.i"), col("first.op"), col("first.consumer"), col("first.msg")),
            ref(col("col.i"), col("col.op"), col("col.consumer"), col("col.msg")),
        ).alias("refs"),
        F.to_json(F.struct(col("p").alias("producer"), col("s").alias("seq"))).alias("aux"),
    )


def lost_write_violations(ev: Any, receives: Any) -> Any:
    """``lost_write``: the first duplicate receipt (``ok``, ``-1`` ledger or entry) of a (producer, seq) no event
    shows stored (a stored receipt, a receive of its uid) and no send with an unknown outcome (``info``,
    ``fail``) may have stored (twin of :func:`conformance.checks.duplicates.make_lost_write`)."""
    from pyspark.sql import functions as F

    col = F.col
    has_ps = col("producer").isNotNull() & col("seq").isNotNull()
    publish = ev.where((col("op") == "publish") & has_ps)
    real = (col("ledger") >= 0) & (col("entry") >= 0)
    receipts = publish.where((col("result") == "ok") & ~real)
    first = receipts.groupBy("tid", "producer", "seq").agg(F.min_by(F.struct("i", "msg", "key"), col("i")).alias("e"))
    excuse = publish.where((col("result") != "ok") | real).select("tid", "producer", "seq")
    received = receives.where(col("ps.p").isNotNull() & col("ps.s").isNotNull()).select(
        "tid", col("ps.p").alias("producer"), col("ps.s").alias("seq")
    )
    lost = first.join(excuse.unionByName(received).distinct(), ["tid", "producer", "seq"], "left_anti")
    return lost.select(
        "tid",
        F.lit("lost_write").alias("kind"),
        F.lit(None).cast("string").alias("sub"),
        col("e.key").alias("key"),
        F.array(ref(col("e.i"), F.lit("publish"), F.lit(None).cast("string"), col("e.msg"))).alias("refs"),
        F.to_json(F.struct(col("producer").alias("producer"), col("seq").alias("seq"))).alias("aux"),
    )
