"""``undelivered`` on Spark (twin of :mod:`conformance.checks.loss`): a free period that never ended.

A message's free period ends at its next receive or effective ack (:mod:`conformance.spark.messages`); one with
no end in a drained run is a message that needed (re)delivery and never got it.  Witness: the event that made
it free.
"""

from __future__ import annotations

from typing import Any

from conformance.spark.prepare import trace_map
from conformance.spark.rows import ref

__all__ = ["undelivered"]


def undelivered(m: Any, end_of: dict[int, int]) -> tuple[Any, Any, Any]:
    """``(condition, refs, aux)`` columns for the message rows that are violations (``end_of``: drained traces)."""
    from pyspark.sql import functions as F

    end_i = trace_map(end_of, "long")
    cond = F.col("free_start") & F.col("next_rend").isNull() & end_i.isNotNull()
    refs = F.array(ref(F.col("i"), F.col("free_mark.op"), F.col("free_mark.consumer"), F.col("msg")))
    aux = F.to_json(F.struct(F.col("msg").alias("msg"), end_i.alias("end")))
    return cond, refs, aux
