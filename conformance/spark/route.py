"""How the Spark engine splits a trace into parts the streaming checker can judge one by one.

:func:`routed` returns the events of every trace (column ``tid``) with ``pass``, ``part``, ``own`` and
``mixed`` columns; the engine groups by ``(tid, pass, part)``.  Why each split is exact is in
:mod:`conformance.checks.partition`; here is only where each event goes.

*Scope pass* (``pass`` 0):

* an event about one message (publish, receive, ack, nack) goes to the part of its message's key: the key its
  receives and stored publishes carry (a publish the broker did not store changes nothing in this pass), found
  with a window over the message (trace, ledger, entry, batch index: the parts of a message id every spelling
  of it shares; the messages of one batch share a window, as the broker dispatches the entry by one key).
  Acks and nacks rarely carry a key: the window gives them theirs;
* every other event (open, close, crash, redeliver, fault, end) is copied into every part; part 0 owns it
  (counts it);
* ``uid``, ``producer`` and ``seq`` are blanked: the identity checks are the identity pass's.

*Identity pass* (``pass`` 1): the publishes and the receives carrying a uid, split by the (producer, seq) they
are evidence for: an event with a uid goes to the part of its uid's publishes' (producer, seq) (a window over
the uid); a publish without a uid to its own (producer, seq)'s; a uid nobody published to a part of its own.

With one part there is nothing to split: every event goes to ``pass`` 2 (*whole*), unblanked — one streaming
checker over the whole trace, which judges every kind (and needs no window, so no shuffle before the grouping).

``mixed`` marks what would make a split inexact: a message whose publish and receive events carry different
keys, or a uid published with different (producer, seq).  Traces where a part saw one are checked again in one part.
"""

from __future__ import annotations

from typing import Any

from conformance.spark.load import EVENT_COLUMNS

__all__ = ["CROSS_OPS", "IDENTITY", "MESSAGE_OPS", "SCOPE", "WHOLE", "routed"]

SCOPE, IDENTITY, WHOLE = 0, 1, 2  #: the passes

MESSAGE_OPS = ("publish", "receive", "ack", "nack", "dead_letter")
#: Ops copied into every part of the scope pass (what is not about one message).
CROSS_OPS = (
    "open",
    "close",
    "crash",
    "gone",
    "closed",
    "redeliver",
    "fault",
    "end",
    "producer_open",
    "producer_close",
)
_IDENTITY_FIELDS = ("uid", "producer", "seq")
#: The event columns the checker reads (``receiver_queue`` it does not).
_CHECKED = tuple(c for c in EVENT_COLUMNS if c != "receiver_queue")
#: Stands for a null producer in the routing values (no producer name is this string).
_NO_PRODUCER = "\x00"


def routed(df: Any, parts: int) -> Any:
    """The events of ``df`` (``tid`` + :data:`EVENT_COLUMNS`) routed to ``(pass, part)``; see the module."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    col, lit = F.col, F.lit
    op = col("op")
    is_message = op.isin(*MESSAGE_OPS) & col("msg_id").isNotNull()

    def part_of(*values: Any) -> Any:
        return F.pmod(F.xxhash64(*values), lit(parts)).cast("int")

    def out(frame: Any, pass_: int, part: Any, own: Any, mixed: Any, blank: bool) -> Any:
        columns = [
            F.lit(None).cast(frame.schema[c].dataType).alias(c) if blank and c in _IDENTITY_FIELDS else col(c)
            for c in _CHECKED
            if c != "policy"
        ]
        # as JSON text: a nested struct column makes Spark's Arrow transfer to Python several times slower, and
        # only opens carry a policy (the worker decodes those few)
        columns.append(F.to_json(col("policy")).alias("policy"))
        return frame.select(
            "tid",
            lit(pass_).cast("int").alias("pass"),
            part.alias("part"),
            own.alias("own"),
            mixed.alias("mixed"),
            *columns,
        )

    if parts == 1:
        return out(df, WHOLE, lit(0).cast("int"), lit(True), lit(False), False)

    # --- scope pass -----------------------------------------------------------------------------------------
    ids = F.split(col("msg_id"), ":")
    batch_index = F.when(F.size(ids) > 3, ids.getItem(3).cast("long")).otherwise(lit(-1).cast("long"))
    batched = F.when(batch_index >= 0, lit(-2).cast("long")).otherwise(batch_index)  # a batch: one entry, one key
    message = Window.partitionBy("tid", ids.getItem(0).cast("long"), ids.getItem(1).cast("long"), batched)
    stored = (op == "publish") & (col("result") == "ok") & (ids.getItem(0).cast("long") >= 0)
    stored = stored & (ids.getItem(1).cast("long") >= 0)
    keyed = F.when((op == "receive") | stored, F.coalesce(col("key"), lit("")))
    messages = df.where(is_message).select(
        "*",
        F.min(keyed).over(message).alias("_kmin"),
        F.max(keyed).over(message).alias("_kmax"),
        F.min(col("key")).over(message).alias("_kany"),
    )
    key = F.coalesce(col("_kmin"), col("_kany"), lit(""))
    scope = out(
        messages, 0, part_of(col("tid"), key), lit(True), F.coalesce(col("_kmin") != col("_kmax"), lit(False)), True
    )
    cross = df.where(~is_message).select("*", F.explode(F.sequence(lit(0), lit(parts - 1))).alias("_part"))
    shared = out(cross, 0, col("_part"), col("_part") == 0, lit(False), True)
    # Every op not about one message is copied (an op added to the format later too); an event about one message
    # without its msg_id — a failed publish — is not: it lands in part 0 only (the scope pass reads nothing of it)
    shared = shared.where(~op.isin(*MESSAGE_OPS) | (col("part") == 0))

    # --- identity pass --------------------------------------------------------------------------------------
    identity = df.where((op == "publish") | ((op == "receive") & col("uid").isNotNull()))
    by_uid = Window.partitionBy("tid", "uid")
    own_ps = F.concat(
        F.coalesce(col("producer"), lit(_NO_PRODUCER)), lit("\x1f"), F.coalesce(col("seq").cast("string"), lit(""))
    )
    published = F.when(op == "publish", own_ps)
    identity = identity.select(
        "*",
        F.when(col("uid").isNotNull(), F.min(published).over(by_uid)).alias("_pmin"),
        F.when(col("uid").isNotNull(), F.max(published).over(by_uid)).alias("_pmax"),
    )
    route = F.when(col("uid").isNull(), own_ps).otherwise(F.coalesce(col("_pmin"), F.concat(lit("\x01"), col("uid"))))
    mixed = F.coalesce(col("_pmin") != col("_pmax"), lit(False))
    ident = out(identity, 1, part_of(col("tid"), route), lit(False), mixed, False)

    return scope.unionByName(shared).unionByName(ident)
