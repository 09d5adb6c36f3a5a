"""The message events of a trace, ready for the per-message state machine (:mod:`conformance.spark.messages`).

:func:`shared_events` is the frame every step of the job reads: the trace is scanned once, its rows
hash-partitioned by *message* (trace, ``ledger:entry`` — the part of a message id every spelling of it shares)
and normalized once, and the engine caches it.  A Parquet row group is read by one task, so each scan of the
file is serial work; reading it once and spreading it over the cores before any per-row work lets the canonical
ids, the joins and the windows of the message stage (which need no other shuffle) and the other checks all run
in parallel.  Everything else here is a narrow transform of each event.

:func:`message_rows` gives one row per event about one message, in the subscription it belongs to:

* ``P``: the first ``ok`` publish receipt of a stored message, once per subscription it reaches (the send was
  not called strictly before the subscription existed on that topic; at an equal ``t`` it reaches it) — later
  receipts naming the same id are not new messages;
* ``R``: a live receive (its consumer has an open incarnation), with the incarnation's next release and the
  next fault (the candidates for the end of the hold it starts);
* ``L``: a late receive (no open incarnation: the receive thread lost the race to the log);
* ``A``: an ack, live or late (a late one has no incarnation: it acknowledges but arms nothing), with the acking
  incarnation's next disarm (redeliver, crash) and the next fault touching it (what forgets an acknowledgement);
* ``N``: a live nack.

Late nacks and redeliver requests change nothing and are dropped.  Incarnations come from the driver's
consumer segments (:mod:`conformance.spark.membership`), attached with a broadcast join.
"""

from __future__ import annotations

from typing import Any

from conformance.spark.membership import NEG, POS, TraceInfo, bucket_width

__all__ = ["MESSAGE_OPS", "message_rows", "normalized", "shared_events", "trace_map"]

MESSAGE_OPS = ("publish", "receive", "ack", "nack")


def trace_map(values: dict[int, Any], cast: str) -> Any:
    """A column holding ``values[tid]`` for the row's trace (null for traces not in ``values``)."""
    from pyspark.sql import functions as F

    if not values:
        return F.lit(None).cast(cast)
    pairs = [x for tid, v in sorted(values.items()) for x in (F.lit(tid), F.lit(v))]
    return F.element_at(F.create_map(*pairs), F.col("tid")).cast(cast)


def normalized(df: Any) -> Any:
    """Canonical topic, partition and message id, as :func:`conformance.trace.identity.canonical_message`.

    Adds ``ledger``, ``entry``, ``batch``, ``msg``, ``mkey``, ``stream``, ``topic_base``, ``key`` ("" when
    absent); keeps the columns the checks read.
    """
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
    keep = [c for c in df.columns if not c.startswith("_") and c not in ("key", "msg_id")]
    return df.select(
        *keep,
        F.coalesce(F.col("key"), F.lit("")).alias("key"),
        F.when(has_msg, canon).alias("msg"),
        F.when(has_msg, F.concat(F.col("_base"), F.lit("|"), canon)).alias("mkey"),
        F.when(has_msg, F.concat(F.col("_base"), F.lit("|"), F.col("_partition").cast("string"))).alias("stream"),
        F.when(topic.isNotNull(), F.col("_base")).alias("topic_base"),
    )


_SEGMENT_COLUMNS = ("s_tid", "s_consumer", "s_bucket", "lo", "hi", "inc", "seg_sub", "next_rel", "next_rel_op",
                    "next_disarm")  # fmt: skip


def _segments_frame(spark: Any, infos: dict[int, TraceInfo], width: int) -> Any:
    """The consumer segments, one row per (segment, bucket of ``width`` indexes it spans)."""
    import pyarrow as pa

    rows: list[tuple[Any, ...]] = []
    for info in infos.values():
        top = (info.max_i + 1) // width
        for s in info.segments:
            first = 0 if s.lo == NEG else max(0, s.lo // width)
            last = top if s.hi == POS else min(top, s.hi // width)
            for bucket in range(first, last + 1):
                rows.append((s.tid, s.consumer, bucket, s.lo, s.hi, s.inc, s.sub, s.next_rel, s.next_rel_op,
                             s.next_disarm))  # fmt: skip
    strings = {"s_consumer", "seg_sub", "next_rel_op"}
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(_SEGMENT_COLUMNS)
    table = pa.table(
        {
            name: pa.array(list(values), pa.string() if name in strings else pa.int64())
            for name, values in zip(_SEGMENT_COLUMNS, columns, strict=True)
        }
    )
    return spark.createDataFrame(table)


#: Event columns no check reads.
_UNREAD = ("redelivery_count", "receiver_queue")


def shared_events(df: Any, partitions: int) -> Any:
    """The events, :func:`normalized`, with ``le`` (``ledger:entry``) and hash-partitioned by (trace, ``le``).

    The message windows are partitioned by (trace, ``le``, ...), so this partitioning serves them without
    another shuffle; events about no message (``le`` empty) are few and share one partition.  Columns no check
    reads are left out, so the cache holds less.
    """
    from pyspark.sql import functions as F

    parts = F.split(F.col("msg_id"), ":")
    le = F.concat_ws(":", parts.getItem(0).cast("long"), parts.getItem(1).cast("long"))
    df = df.drop(*_UNREAD).select("*", le.alias("le"))
    return normalized(df.repartition(partitions, "tid", "le"))


def message_rows(spark: Any, df: Any, infos: dict[int, TraceInfo]) -> Any:
    """The message rows (``P``, ``R``, ``L``, ``A``, ``N``; see the module docstring) of :func:`shared_events`,
    partitioned by message as it is."""
    from pyspark.sql import functions as F

    col, lit, when = F.col, F.lit, F.when
    op = col("op")
    ev = df.where(op.isin(*MESSAGE_OPS) & col("msg").isNotNull())
    stored = (op == "publish") & (col("result") == "ok") & (col("ledger") >= 0) & (col("entry") >= 0)
    ev = ev.where((op != "publish") | stored)
    # --- consumer events: their incarnation (a broadcast join with the driver's segments); publishes: the
    # subscriptions they reach, plus one row without a subscription to find a message's first receipt.  One
    # pipeline (no union), so the rows stay partitioned by message for the windows that follow.
    width = bucket_width(infos)
    segments = _segments_frame(spark, infos, width)
    ev = ev.withColumn("bucket", F.floor(col("i") / width).cast("long"))
    joined = ev.join(
        F.broadcast(segments),
        (col("tid") == col("s_tid"))
        & (col("consumer") == col("s_consumer"))
        & (col("bucket") == col("s_bucket"))
        & (col("lo") < col("i"))
        & (col("i") < col("hi")),
        "left",
    )
    default_sub = trace_map({tid: info.default_sub for tid, info in infos.items()}, "string")
    live = col("inc").isNotNull()
    kind = (
        when(op == "publish", lit("P"))
        .when(op == "receive", when(live, lit("R")).otherwise(lit("L")))
        .when(op == "ack", lit("A"))
        .when(live & (op == "nack"), lit("N"))
    )
    faults = {(tid, inc): fs for tid, info in infos.items() for inc, fs in info.inc_faults.items()}
    created: dict[int, Any] = {}
    for tid, info in infos.items():
        created[tid] = [(sub, topic, t_c, i_c) for (sub, topic), (t_c, i_c) in sorted(info.created.items(), key=str)]
    send_t = F.coalesce(col("t0"), col("t"))
    subs = when(op == "publish", F.concat(F.array(lit(None).cast("string")), _reached(created, send_t))).otherwise(
        F.array(F.coalesce(col("seg_sub"), col("subscription"), default_sub))
    )
    rows = joined.select(
        "tid", "le", "mkey", "i", "t", kind.alias("kind"), "inc", "consumer", "key", "msg", "stream", "ledger",
        "entry", "batch", F.explode(subs).alias("sub"), when(op == "publish", send_t).alias("send_t"),
        when(live, col("next_rel")).alias("next_rel"), when(live, col("next_rel_op")).alias("next_rel_op"),
        when(live, col("next_disarm")).alias("next_disarm"),
        when(live, _next_fault(faults, col("i"))).alias("next_fault"),
    )  # fmt: skip
    return rows.where(col("kind").isNotNull())


def _reached(created: dict[int, list[tuple[str, str | None, int, int]]], send_t: Any) -> Any:
    """The subscriptions a publish reaches: existing before the send on its topic (or on no topic)."""
    from pyspark.sql import functions as F

    if not any(created.values()):
        return F.array().cast("array<string>")
    entry = "struct<sub:string,topic:string,t_c:long,i_c:long>"
    pairs = []
    for tid, subs in sorted(created.items()):
        items = [
            F.struct(F.lit(s).alias("sub"), F.lit(tp).cast("string").alias("topic"), F.lit(t).alias("t_c"),
                     F.lit(i).alias("i_c"))
            for s, tp, t, i in subs
        ]  # fmt: skip
        pairs += [F.lit(tid), F.array(*items).cast(f"array<{entry}>") if items else F.array().cast(f"array<{entry}>")]
    subs_of = F.element_at(F.create_map(*pairs), F.col("tid"))
    ok = F.filter(
        F.coalesce(subs_of, F.array().cast(f"array<{entry}>")),
        lambda s: (
            (s["topic"].isNull() | (s["topic"] == F.col("topic_base"))) & (s["t_c"] <= send_t) & (s["i_c"] < F.col("i"))
        ),
    )
    return F.array_distinct(F.transform(ok, lambda s: s["sub"]))


def _next_fault(faults: dict[tuple[int, int], list[int]], index: Any) -> Any:
    """The first fault after ``index`` touching the row's incarnation (null if none); faults are few and known."""
    from pyspark.sql import functions as F

    if not faults:
        return F.lit(None).cast("long")
    pairs = []
    for (tid, inc), fs in sorted(faults.items()):
        pairs += [F.lit(f"{tid}:{inc}"), F.array(*[F.lit(f) for f in fs])]
    which = F.concat_ws(":", F.col("tid").cast("string"), F.col("inc").cast("string"))
    arr = F.element_at(F.create_map(*pairs), which)
    return F.array_min(F.filter(F.coalesce(arr, F.array().cast("array<long>")), lambda x: x > index))
