"""The one row shape every PySpark check returns, and its conversion to :class:`Violation` values.

``VIOLATION_SCHEMA``: ``tid``, ``kind``, ``sub``, ``key``, ``refs`` (the witness events, each
``(i, op, consumer, msg)``) and ``aux`` (JSON text with the kind's other facts).  Only
:func:`to_violations` looks at the rows on the driver, and it builds each violation with the same function
the streaming engine uses, so both engines render the same explanation.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from conformance.checks.assignment import make_misassigned
from conformance.checks.duplicates import make_duplicate, make_lost_write
from conformance.checks.exclusivity import make_overlap
from conformance.checks.loss import make_undelivered
from conformance.checks.ordering import make_out_of_order
from conformance.checks.redelivery import make_redelivered
from conformance.checks.unexpected import make_unexpected
from conformance.violations import Violation

__all__ = ["REF_TYPE", "VIOLATION_SCHEMA", "ref", "to_violations"]

VIOLATION_SCHEMA = (
    "tid long, kind string, sub string, key string, "
    "refs array<struct<i:long,op:string,consumer:string,msg:string>>, aux string"
)
REF_TYPE = "struct<i:long,op:string,consumer:string,msg:string>"
MSG_OPS = ("publish", "receive", "ack", "nack")


def ref(i: Any, op: Any, consumer: Any, msg: Any) -> Any:
    """A witness-event struct column; ``msg`` is kept only for ops about one message (as the streaming refs)."""
    from pyspark.sql import functions as F

    op_col = op if not isinstance(op, str) else F.lit(op)
    msg_col = F.when(op_col.isin(*MSG_OPS), msg)
    return F.struct(
        i.cast("long").alias("i"), op_col.alias("op"), consumer.cast("string").alias("consumer"), msg_col.alias("msg")
    )


def _ref(row: Any) -> tuple[Any, ...]:
    return (row["i"], row["op"], row["consumer"], row["msg"])


def to_violations(rows: Iterable[Any]) -> dict[int, list[Violation]]:
    """Violations per trace id, built from collected rows."""
    out: dict[int, list[Violation]] = {}
    for row in rows:
        refs = [_ref(r) for r in row["refs"]]
        aux = json.loads(row["aux"]) if row["aux"] else {}
        kind, sub, key = row["kind"], row["sub"], row["key"]
        if kind == "key_overlap":
            v = make_overlap(sub, key, aux["holder"], refs[0], aux["receiver"], refs[1])
        elif kind == "out_of_order":
            v = make_out_of_order(sub, key, aux["consumer"], refs[1], refs[0], aux["earlier_msg"], aux.get("holder"))
        elif kind == "undelivered":
            v = make_undelivered(sub, key, aux["msg"], refs[0], aux["end"])
        elif kind == "redelivered_after_ack":
            v = make_redelivered(sub, key, aux["acker"], refs[0], aux["receiver"], refs[1])
        elif kind == "duplicate_publish":
            v = make_duplicate(aux["producer"], aux["seq"], key, refs[0], refs[1])
        elif kind == "lost_write":
            v = make_lost_write(aux["producer"], aux["seq"], key, refs[0])
        elif kind == "unexpected_message":
            v = make_unexpected(aux["uid"], key, refs[0])
        elif kind == "misassigned":
            lower = refs[0] if len(refs) == 2 else None
            v = make_misassigned(sub, key, aux["consumer"], refs[-1], lower, aux["expected"], aux["selector"])
        else:  # pragma: no cover - the engine produces only the kinds above
            raise ValueError(f"unknown violation kind {kind!r} from the Spark engine")
        out.setdefault(row["tid"], []).append(v)
    return out
