"""``redelivered_after_ack`` on Spark (twin of :mod:`conformance.checks.redelivery`).

An ack *arms* when a hold of the acking incarnation ends at it; other acks neither arm nor disarm.  Each hold
start knows the last armed ack before it and the last hold start before it: the first receive after an armed
ack is a violation unless the acker's next redeliver or crash, or a fault touching it, came in between
(decided in :mod:`conformance.spark.messages`, where it also makes the message unacknowledged again).
"""

from __future__ import annotations

from typing import Any

from conformance.spark.rows import ref

__all__ = ["redelivered"]


def redelivered() -> tuple[Any, Any, Any]:
    """``(condition, refs, aux)`` columns for the message rows that are violations."""
    from pyspark.sql import functions as F

    col = F.col
    ack = col("prev_ack")
    cond = col("redelivered")
    refs = F.array(
        ref(ack["i"], "ack", ack["consumer"], col("msg")), ref(col("i"), "receive", col("consumer"), col("msg"))
    )
    aux = F.to_json(F.struct(ack["consumer"].alias("acker"), col("consumer").alias("receiver")))
    return cond, refs, aux
