"""The shared ground of the PySpark checks: canonical ids, incarnations, holds and each message's states.

Everything is a DataFrame transform (window functions, joins); nothing is collected here.  The definitions
are those of ``docs/checker.md``; each step names its twin in the streaming engine.  Columns are added in a
few wide ``select`` stages rather than one ``withColumn`` each: every call re-analyses the whole plan.

:class:`Prepared` holds:

* ``normalized`` — every event with ``mkey``/``stream``/``msg`` (:mod:`conformance.trace.identity`),
  ``ledger``/``entry``/``batch``, ``topic_base`` and the normalised ``key`` ("" when absent);
* ``events`` — the consumer events, with ``inc`` (the incarnation: index of the consumer's open, null when the
  consumer is not open — a *late* event), ``sub``, and the consumer's next release and disarm;
* ``receives`` — live receives with the end of their hold and whether they were ``absorbed`` (a receive of a
  message the same incarnation already held);
* ``holds`` — one row per hold (non-absorbed live receive): ``start``, ``end`` (null if held at the end),
  ``end_op``;
* ``timeline`` — per (subscription, message, event index) the message's state after that event: known,
  acknowledged, holders, free (and ``since``: the event that made it free), exempt;
* ``messages`` — per (subscription, message): key (of its first known event), stream, position.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Prepared", "prepare"]

CONSUMER_RELEASE_OPS = ("redeliver", "close", "crash")


@dataclass
class Prepared:
    normalized: Any
    events: Any
    holds: Any
    timeline: Any
    messages: Any
    receives: Any
    subs_created: Any
    cached: list[Any] = field(default_factory=list)

    def unpersist(self) -> None:
        for frame in self.cached:
            frame.unpersist()


def _normalized(df: Any) -> Any:
    """Canonical topic, partition and message id, as :func:`conformance.trace.identity.canonical_message`."""
    from pyspark.sql import functions as F

    topic = F.col("topic")
    pattern = r"^(.*)-partition-([0-9]+)$"
    matched = topic.rlike(pattern)
    parts = F.split(F.col("msg_id"), ":")
    long_ = "long"
    df = df.select(
        "*",
        F.when(matched, F.regexp_extract(topic, pattern, 1)).otherwise(topic).alias("_base0"),
        F.when(matched, F.regexp_extract(topic, pattern, 2).cast(long_))
        .otherwise(F.lit(-1).cast(long_))
        .alias("_named"),
        parts.getItem(0).cast(long_).alias("ledger"),
        parts.getItem(1).cast(long_).alias("entry"),
        F.when(F.size(parts) > 2, parts.getItem(2).cast(long_)).otherwise(F.lit(-1).cast(long_)).alias("_part"),
        F.when(F.size(parts) > 3, parts.getItem(3).cast(long_)).otherwise(F.lit(-1).cast(long_)).alias("batch"),
    )
    base0 = F.col("_base0")
    slashes = F.length(base0) - F.length(F.regexp_replace(base0, "/", ""))
    base = (
        F.when(F.instr(base0, "://") > 0, base0)
        .when(slashes == 0, F.concat(F.lit("persistent://public/default/"), base0))
        .when(slashes == 2, F.concat(F.lit("persistent://"), base0))
        .otherwise(base0)
    )
    part = F.when(F.col("_part") >= 0, F.col("_part")).otherwise(F.col("_named"))
    df = df.select("*", base.alias("_base"), part.alias("_partition"))
    canon = F.concat_ws(":", *(F.col(c).cast("string") for c in ("ledger", "entry", "_partition", "batch")))
    has_msg = F.col("msg_id").isNotNull()
    unused = {"key", "redelivery_count", "receiver_queue", "policy", "drained", "msg_id"}  # read on the driver
    keep = [c for c in df.columns if not c.startswith("_") and c not in unused]
    return df.select(
        *keep,
        F.coalesce(F.col("key"), F.lit("")).alias("key"),
        F.when(has_msg, canon).alias("msg"),
        F.when(has_msg, F.concat(F.col("_base"), F.lit("|"), canon)).alias("mkey"),
        F.when(has_msg, F.concat(F.col("_base"), F.lit("|"), F.col("_partition").cast("string"))).alias("stream"),
        F.when(topic.isNotNull(), F.col("_base")).alias("topic_base"),
    )


def _after(*keys: str) -> Any:
    """The rows after the current one (by ``i``) of its partition, as a window frame Spark evaluates in O(n).

    ``rowsBetween(1, unboundedFollowing)`` would say the same, but Spark recomputes a shrinking frame for every
    row (quadratic in the partition: a consumer's partition holds a good share of the trace).  Ordered by
    ``i`` descending, "every later row" is the growing frame ``(unboundedPreceding, -1)``; the *nearest* later
    row is then the frame's last.
    """
    from pyspark.sql import Window as W
    from pyspark.sql import functions as F

    return W.partitionBy(*keys).orderBy(F.col("i").desc()).rowsBetween(W.unboundedPreceding, -1)


def _next_fault(faults: dict[int, list[int]], index: Any) -> Any:
    """The first fault after ``index`` in the row's trace (null if none); faults are few and collected."""
    from pyspark.sql import functions as F

    if not faults:
        return F.lit(None).cast("long")
    mapping = F.create_map(
        *[x for tid, fs in sorted(faults.items()) for x in (F.lit(tid), F.array(*[F.lit(f) for f in sorted(fs)]))]
    )
    arr = F.element_at(mapping, F.col("tid"))
    return F.array_min(F.filter(F.coalesce(arr, F.array().cast("array<long>")), lambda x: x > index))


def prepare(ev: Any, default_sub: dict[int, str], faults: dict[int, list[int]], *, cache: bool = True) -> Prepared:
    """Derive the shared frames from raw events (columns ``tid`` + the event columns).

    With ``cache`` the frames several checks read are cached, so each is computed once and the checks' plans
    stay small; :meth:`Prepared.unpersist` frees them.
    """
    from pyspark.sql import Window as W
    from pyspark.sql import functions as F

    cached: list[Any] = []

    def keep(frame: Any) -> Any:
        if cache:
            frame = frame.cache()
            cached.append(frame)
        return frame

    col, lit, when = F.col, F.lit, F.when
    ev = keep(_normalized(ev))
    default = F.element_at(
        F.create_map(*[x for tid, s in sorted(default_sub.items()) for x in (lit(tid), lit(s))]), col("tid")
    )
    op, i = col("op"), col("i")
    is_open_ok = (op == "open") & (col("result").isNull() | (col("result") == "ok"))
    # --- incarnations (streaming: StreamingChecker.live / last_inc) --------------------------------------
    by_consumer = W.partitionBy("tid", "consumer").orderBy("i")
    upto = by_consumer.rowsBetween(W.unboundedPreceding, W.currentRow)
    before = by_consumer.rowsBetween(W.unboundedPreceding, -1)
    after = _after("tid", "consumer")
    release = op.isin(*CONSUMER_RELEASE_OPS)
    cev = ev.where(col("consumer").isNotNull()).select(
        "*",
        F.max(when(is_open_ok, i)).over(upto).alias("_last_open"),
        F.max(when(op.isin("close", "crash"), i)).over(before).alias("_last_end"),
        F.coalesce(
            F.last(when(is_open_ok, F.coalesce(col("subscription"), default)), ignorenulls=True).over(upto),
            col("subscription"),
            default,
        ).alias("sub"),
        F.last(when(is_open_ok, F.coalesce(col("name"), col("consumer"))), ignorenulls=True)
        .over(upto)
        .alias("inc_name"),
        F.min(when(release, i)).over(after).alias("next_crel"),
        F.last(when(release, op), ignorenulls=True).over(after).alias("next_crel_op"),  # the nearest later one
        F.min(when(op.isin("redeliver", "crash"), i)).over(after).alias("_next_disarm"),
        F.min(when(op.isin("close", "crash"), i)).over(after).alias("_next_leave"),
    )
    live_inc = col("_last_open").isNotNull() & (col("_last_end").isNull() | (col("_last_open") > col("_last_end")))
    cev = keep(
        cev.select(
            *[c for c in cev.columns if not c.startswith("_")],
            when(live_inc, col("_last_open")).alias("inc"),
            # a redeliver/crash disarms the incarnation's acks only while it lives (not a later incarnation's)
            when(col("_next_leave").isNull() | (col("_next_disarm") <= col("_next_leave")), col("_next_disarm")).alias(
                "next_disarm"
            ),
        )
    )
    # --- subscriptions: when each was created on each topic ---------------------------------------------
    subs_created = (
        cev.where(is_open_ok).groupBy("tid", "sub", "topic_base").agg(F.min("t").alias("t_c"), F.min("i").alias("i_c"))
    )
    # --- expected publishes: the first ok receipt of each message, one row per subscription it reaches --
    pub = ev.where(
        (op == "publish")
        & (col("result") == "ok")
        & col("msg").isNotNull()
        & (col("ledger") >= 0)
        & (col("entry") >= 0)
    )
    pub = pub.select("*", F.row_number().over(W.partitionBy("tid", "mkey").orderBy("i")).alias("_n"))
    pub = pub.where(col("_n") == 1).select(
        "tid", "mkey", "i", "key", "msg", "topic_base", F.coalesce(col("t0"), col("t")).alias("send_t")
    )
    sc = subs_created.select(
        col("tid").alias("_tid"), col("sub").alias("_sub"), col("topic_base").alias("_topic"), "t_c", "i_c"
    )
    expected = pub.join(
        F.broadcast(sc),
        (pub["tid"] == sc["_tid"])
        & (sc["_topic"].isNull() | (sc["_topic"] == pub["topic_base"]))
        & (sc["t_c"] < pub["send_t"])
        & (sc["i_c"] < pub["i"]),
    ).select("tid", col("_sub").alias("sub"), "mkey", "i", "send_t", "key", "msg")
    expected = expected.distinct()
    # --- live receives, acks, nacks: the end of each hold ----------------------------------------------
    by_msg_after = _after("tid", "sub", "mkey")
    by_msg_inc_after = _after("tid", "sub", "mkey", "inc")
    msg_events = cev.where(col("inc").isNotNull() & op.isin("receive", "ack", "nack")).select(
        "tid", "sub", "mkey", "i", "t", "op", "consumer", "inc", "key", "msg", "next_crel", "next_crel_op",
        F.min(when(op == "ack", i)).over(by_msg_after).alias("next_ack"),
        F.min(when(op == "nack", i)).over(by_msg_inc_after).alias("next_nack_own"),
    )  # fmt: skip
    receives = msg_events.where(op == "receive").select("*", _next_fault(faults, i).alias("next_fault"))
    receives = receives.select("*", F.least("next_ack", "next_nack_own", "next_crel", "next_fault").alias("end"))
    end = col("end")
    receives = receives.select(
        "*",
        when(end == col("next_nack_own"), lit("nack"))
        .when(end == col("next_crel"), col("next_crel_op"))
        .when(end == col("next_fault"), lit("fault"))
        .when(end == col("next_ack"), lit("ack"))
        .alias("end_op"),
        (F.row_number().over(W.partitionBy("tid", "sub", "mkey", "inc", "end").orderBy("i")) > 1).alias("absorbed"),
    )
    receives = keep(receives)
    holds = keep(
        receives.where(~col("absorbed")).select(
            "tid", "sub", "mkey", "inc", "consumer", col("i").alias("start"), "end", "end_op", "msg"
        )
    )
    late = cev.where(col("inc").isNull() & (op == "receive"))

    # --- each message's timeline (streaming: Rec) --------------------------------------------------------
    def part(frame: Any, op_: Any, consumer: Any, known: int, recv: int, ack: int, nack: int, delta: Any,
             send_t: Any, key: Any, at: Any = None) -> Any:  # fmt: skip
        return frame.select(
            "tid", "sub", "mkey", (i if at is None else at).alias("i"), op_.alias("op"),
            consumer.cast("string").alias("consumer"), lit(known).alias("known"), lit(recv).alias("recv"),
            lit(ack).alias("ack"), lit(nack).alias("nack"), delta.alias("delta"), send_t.cast("long").alias("send_t"),
            key.cast("string").alias("mkey_key"),
        )  # fmt: skip

    none = lit(None)
    # positional unions: every part has the same columns in the same order (cheaper to analyse than by name)
    union = (
        part(expected, lit("publish"), none, 1, 0, 0, 0, lit(0), col("send_t"), col("key"))
        .union(
            part(
                receives,
                lit("receive"),
                col("consumer"),
                1,
                1,
                0,
                0,
                when(col("absorbed"), 0).otherwise(1),
                none,
                col("key"),
            )
        )
        .union(part(late, lit("receive"), col("consumer"), 1, 1, 0, 0, lit(0), none, col("key")))
        .union(part(msg_events.where(op == "ack"), lit("ack"), col("consumer"), 0, 0, 1, 0, lit(0), none, none))
        .union(part(msg_events.where(op == "nack"), lit("nack"), col("consumer"), 0, 0, 0, 1, lit(0), none, none))
        .union(
            part(
                holds.where(col("end").isNotNull()),
                col("end_op"),
                when(col("end_op").isin("nack", "redeliver", "close", "crash"), col("consumer")),
                0,
                0,
                0,
                0,
                lit(-1),
                none,
                none,
                at=col("end"),
            )
        )
    )
    # one row per (message, event): an ack ending two holds is one event
    tl = (
        union.repartition("tid", "sub", "mkey")
        .groupBy("tid", "sub", "mkey", "i")
        .agg(
            F.first("op").alias("op"),
            F.max("consumer").alias("consumer"),
            F.max("known").alias("known"),
            F.max("recv").alias("recv"),
            F.max("ack").alias("ack"),
            F.max("nack").alias("nack"),
            F.sum("delta").alias("delta"),
            F.max("send_t").alias("send_t"),
            F.max("mkey_key").alias("mkey_key"),
        )
    )
    w = W.partitionBy("tid", "sub", "mkey").orderBy("i")
    cum = w.rowsBetween(W.unboundedPreceding, W.currentRow)
    nxt = _after("tid", "sub", "mkey")
    tl = tl.select(
        "*",
        (F.max("known").over(cum) == 1).alias("known_after"),
        F.sum("delta").over(cum).alias("holders_after"),
    )
    tl = tl.select("*", F.coalesce(F.lag("known_after").over(w), lit(False)).alias("known_prev"))
    # an ack of a message not yet known changes nothing (streaming: no record, nothing to do)
    ack_eff = (col("ack") == 1) & col("known_prev")
    acked = F.last(when(ack_eff, lit(True)).when(col("recv") == 1, lit(False)), ignorenulls=True).over(cum)
    tl = tl.select("*", ack_eff.alias("ack_eff"), F.coalesce(acked, lit(False)).alias("acked_after"))
    tl = tl.select("*", (col("known_after") & ~col("acked_after") & (col("holders_after") == 0)).alias("free_after"))
    tl = tl.select(
        "*",
        F.coalesce(F.lag("free_after").over(w), lit(False)).alias("free_prev"),
        F.coalesce(F.lag("acked_after").over(w), lit(False)).alias("acked_prev"),
    )
    free_start = col("free_after") & ~col("free_prev")
    mark = F.struct(i.alias("i"), col("op").alias("op"), col("consumer").alias("consumer"), col("send_t"))
    exempt_start = ((col("nack") == 1) & col("known_prev") & ~col("acked_prev")) | (
        (col("op") == "redeliver") & (col("delta") < 0)
    )
    exempt = F.last(when(col("ack_eff"), lit(False)).when(exempt_start, lit(True)), ignorenulls=True).over(cum)
    tl = tl.select(
        "*",
        free_start.alias("free_start"),
        F.last(when(free_start, mark), ignorenulls=True).over(cum).alias("since"),
        F.min(when(~col("free_after"), i)).over(nxt).alias("free_end"),
        F.coalesce(exempt, lit(False)).alias("exempt_after"),
    )
    tl = keep(
        tl.select(
            "*",
            F.coalesce(F.lag("exempt_after").over(w), lit(False)).alias("exempt_prev"),
            F.min(when(~col("exempt_after"), i)).over(nxt).alias("exempt_end"),
        )
    )
    # --- per message: key (first known event), stream, position ------------------------------------------
    info = ev.where(col("mkey").isNotNull()).select("tid", "mkey", "stream", "ledger", "entry", "batch", "msg")
    info = info.dropDuplicates(["tid", "mkey"])
    keys = tl.where(col("known") == 1).groupBy("tid", "sub", "mkey").agg(F.min_by("mkey_key", "i").alias("key"))
    messages = keep(keys.join(info, ["tid", "mkey"]))
    return Prepared(
        normalized=ev,
        events=cev,
        holds=holds,
        timeline=tl,
        messages=messages,
        receives=receives,
        subs_created=subs_created,
        cached=cached,
    )
