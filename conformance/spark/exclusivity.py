"""``key_overlap`` on Spark (twin of :mod:`conformance.checks.exclusivity`): which scopes can have one.

Within one scope (subscription, topic partition, key) the holds are ordered by their start.  Cut them into
*runs* of consecutive holds of one incarnation.  A key overlap exists in the scope exactly when the first
hold of some run starts before a hold of an earlier run has ended: at the first overlap, the receive that
started it is the first hold of its run (its incarnation held nothing of the key) or a hold of that run was
already overlapped when the run began.  One window over the scope, ordered by ``i`` (the running maximum of
the hold ends before each row, and the previous hold's incarnation), flags those scopes; the witnesses —
every other holder and its earliest-received message still held — are named by the sweep of
:mod:`conformance.spark.ordering`, which runs over the flagged scopes only.
"""

from __future__ import annotations

from typing import Any

from conformance.spark.membership import POS

__all__ = ["overlap_flag"]


def overlap_flag(window: Any) -> Any:
    """True on the first hold of a run that starts while a hold of an earlier run is still held."""
    from pyspark.sql import Window as W
    from pyspark.sql import functions as F

    col, when = F.col, F.when
    hold = col("kind") == "H"
    before = window.rowsBetween(W.unboundedPreceding, -1)
    prev_inc = F.last(when(hold, col("inc")), ignorenulls=True).over(before)
    prev_end = F.max(when(hold, F.coalesce(col("end"), F.lit(POS)))).over(before)
    return hold & prev_inc.isNotNull() & (prev_inc != col("inc")) & (prev_end > col("i"))
