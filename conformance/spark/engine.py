"""The PySpark engine: every check as DataFrame transforms, two jobs for the violations, one verdict per trace.

:func:`check_frames` is the composition (twin of :class:`conformance.checks.StreamingChecker`):

1. the events are read once, shuffled by message, normalized and cached
   (:func:`conformance.spark.prepare.shared_events`); every later step reads that cache;
2. a small job (which fills the cache) collects what is not about one message (membership, redeliver requests,
   faults, ends; event counts; distinct keys) and the driver digests it (:mod:`conformance.spark.membership`);
3. the main job runs each message's state machine with window functions (:mod:`conformance.spark.messages`;
   the cache is already partitioned by message, so no shuffle) and writes, from that one pass, the rows every
   check needs: holds, free and exempt periods (to the scope checks), and the violations
   decided per message (``undelivered``, ``redelivered_after_ack``) or suspected (``misassigned``);
4. those rows are shuffled once by scope (subscription, topic partition, key): window functions flag the
   scopes that may hold a ``key_overlap`` or ``out_of_order`` and a Python sweep judges only those
   (:mod:`conformance.spark.ordering`); the violations decided per message ride through that sweep, so the
   message pass has one consumer and runs once;
5. the identity checks (a job of their own) aggregate by uid and by (producer, seq)
   (:mod:`conformance.spark.duplicates`, :mod:`conformance.spark.unexpected`).

The identity checks need nothing from the small job: they run as a job of their own, started from a second
driver thread as soon as the cache is filled, so the cores have work while the driver digests the small job's
rows and plans the main job (a few seconds of serial work).  The two collects return the violation rows; the
driver turns them into :class:`~conformance.violations.Violation`
values with the streaming engine's own functions, so both engines explain alike.  Many traces can share one
job (column ``tid``), which is how the tests keep Spark's fixed costs low.  The session is the caller's.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from conformance.checks.assignment import make_refused_open
from conformance.profiles import Profile, resolve_profile
from conformance.spark.membership import TraceInfo, collect_small, digest
from conformance.trace.events import Event
from conformance.trace.header import TraceHeader
from conformance.trace.reader import TraceSource
from conformance.verdict import Verdict, build_verdict
from conformance.violations import Kind, Violation
from reference_model.errors import InvalidArgument

__all__ = ["active_session", "check_frames", "check_many", "check_with_spark"]

_SUSPECT = "misassigned_suspect"


def active_session(spark: Any) -> Any:
    if spark is not None:
        return spark
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise InvalidArgument(
            "engine='spark' needs pyspark: pip install 'pytest-keyshared[spark]' (and a Java 17 runtime)"
        ) from None
    session = SparkSession.getActiveSession()
    if session is None:
        raise InvalidArgument(
            "engine='spark' needs a SparkSession: pass spark=..., or start one first, e.g."
            " conformance.spark.build_session('local[*]') (`keyshared check --engine spark` does this)"
        )
    return session


def check_with_spark(
    trace: Any,
    profile: str | Profile | None = None,
    *,
    spark: Any = None,
    header: TraceHeader | None = None,
    validate: bool = True,
) -> Verdict:
    """Check one trace (a :class:`TraceSource`, a TraceWriter-like object or events) on Spark.

    A stored trace is validated by the Python reader first (``validate``), so a malformed trace fails with the
    same one-line error on both engines.
    """
    from conformance.spark.load import events_frame, source_frame

    session = active_session(spark)
    if isinstance(trace, TraceSource):
        if validate:
            for _ in trace.batches():
                pass
        df = source_frame(session, trace)
        return check_frames(session, df, {0: trace.header}, profile)[0]
    if header is None and hasattr(trace, "header") and hasattr(trace, "events"):
        header, trace = trace.header, trace.events or ()
    events = _validated(list(trace))
    head = header if header is not None else TraceHeader.unknown()
    return check_frames(session, events_frame(session, [(0, events)]), {0: head}, profile)[0]


def check_many(
    spark: Any, traces: Sequence[tuple[TraceHeader, Sequence[Event]]], profile: str | Profile | None = None
) -> list[Verdict]:
    """Check several traces in one Spark job; verdicts in the same order."""
    from conformance.spark.load import events_frame

    session = active_session(spark)
    items = [(n, _validated(list(events))) for n, (_h, events) in enumerate(traces)]
    df = events_frame(session, items)
    verdicts = check_frames(session, df, {n: h for n, (h, _e) in enumerate(traces)}, profile)
    return [verdicts[n] for n in range(len(traces))]


def _validated(events: list[Event]) -> list[Event]:
    from conformance.trace.validation import EventValidator

    validator = EventValidator("events", unit="row")
    for event in events:
        validator.typed_event(event)
    return events


def violation_rows(spark: Any, df: Any, infos: dict[int, TraceInfo]) -> Any:
    """The main job's plan: one DataFrame of the rows (``VIOLATION_SCHEMA``) of the message and scope checks,
    and misassigned suspects.

    ``df`` is :func:`conformance.spark.prepare.shared_events` of the events.
    """
    from pyspark.sql import functions as F

    from conformance.spark.assignment import suspects
    from conformance.spark.loss import undelivered
    from conformance.spark.messages import message_states
    from conformance.spark.ordering import SCOPE, flagged_scopes, sweep_batches
    from conformance.spark.prepare import message_rows
    from conformance.spark.redelivery import redelivered
    from conformance.spark.rows import REF_TYPE, VIOLATION_SCHEMA, ref

    col, lit, when = F.col, F.lit, F.when
    partitions = int(spark.conf.get("spark.sql.shuffle.partitions"))
    m = message_states(message_rows(spark, df, infos))
    m, suspect = suspects(m, infos, spark)
    end_of = {tid: info.end_i for tid, info in infos.items() if info.drained and info.end_i is not None}
    u_cond, u_refs, u_aux = undelivered(m, end_of)
    d_cond, d_refs, d_aux = redelivered()
    nul_l, nul_s, nul_b = lit(None).cast("long"), lit(None).cast("string"), lit(None).cast("boolean")
    no_refs = lit(None).cast(f"array<{REF_TYPE}>")
    since = col("since")
    lower_ref = ref(since["i"], since["op"], since["consumer"], col("msg"))
    receive_ref = ref(col("i"), "receive", col("consumer"), col("msg"))

    def out(kind: str, *, end: Any = nul_l, flag: Any = nul_b, by_receive: Any = nul_b, m_op: Any = nul_s,
            m_consumer: Any = nul_s, vkind: Any = nul_s, refs: Any = no_refs, aux: Any = nul_s,
            acked: Any = nul_b) -> Any:  # fmt: skip
        return F.struct(
            lit(kind).alias("kind"), col("i").alias("i"), end.alias("end"), col("inc").alias("inc"),
            col("consumer").alias("consumer"), col("ledger").alias("ledger"), col("entry").alias("entry"),
            col("batch").alias("batch"), col("msg").alias("msg"), flag.alias("flag"), by_receive.alias("by_receive"),
            m_op.alias("m_op"), m_consumer.alias("m_consumer"), vkind.alias("vkind"), refs.alias("refs"),
            aux.alias("aux"), acked.alias("acked"),
        )  # fmt: skip

    hold = (col("kind") == "R") & ~col("absorbed")
    suspect_aux = F.to_json(
        F.struct(
            col("i").alias("i"), col("inc").alias("inc"), col("consumer").alias("consumer"),
            when(col("lower_kind").isNotNull(), F.array(col("lower_kind"), col("lower").cast("string"))).alias("lower"),
        )
    )  # fmt: skip
    outputs = [
        when(
            hold,
            out("H", end=col("end"), flag=col("free_prev") & (since["op"] == "publish"), acked=col("held_acked")),
        ),
        when(
            col("free_start"),
            out(
                "F",
                end=col("next_rend"),
                flag=col("free_mark.op") == "publish",
                by_receive=F.coalesce(col("next_r") == col("next_rend"), lit(False)),
                m_op=col("free_mark.op"),
                m_consumer=col("free_mark.consumer"),
            ),
        ),
        when(col("exempt_start"), out("E", end=col("next_aeff"))),
        when(u_cond, out("V", vkind=lit("undelivered"), refs=u_refs, aux=u_aux)),
        when(d_cond, out("V", vkind=lit("redelivered_after_ack"), refs=d_refs, aux=d_aux)),
        when(
            suspect,
            out(
                "V",
                vkind=lit(_SUSPECT),
                aux=suspect_aux,
                refs=when(col("lower_kind").isNotNull(), F.array(lower_ref, receive_ref)).otherwise(
                    F.array(receive_ref)
                ),
            ),
        ),
    ]
    produced = F.explode(F.filter(F.array(*outputs), lambda x: x.isNotNull())).alias("o")
    rows = m.select("tid", "sub", "stream", col("mkey_key").alias("key"), produced).select(*SCOPE, "o.*")
    return flagged_scopes(rows.repartition(partitions, *SCOPE)).mapInArrow(sweep_batches, VIOLATION_SCHEMA)


def identity_rows(df: Any) -> Any:
    """The identity checks' plan (``duplicate_publish``, ``unexpected_message``, ``lost_write``): it needs
    nothing the driver learns from the small job, so it runs as a job of its own while the driver plans the main
    one."""
    from pyspark.sql import functions as F

    from conformance.spark.duplicates import duplicate_violations, lost_write_violations
    from conformance.spark.unexpected import receives_by_uid, unexpected_violations

    col = F.col
    ident = df.where((col("op") == "publish") | ((col("op") == "receive") & col("uid").isNotNull()))
    receives = receives_by_uid(ident)
    return (
        duplicate_violations(ident, receives)
        .unionByName(unexpected_violations(receives))
        .unionByName(lost_write_violations(ident, receives))
    )


def check_frames(
    spark: Any, df: Any, headers: dict[int, TraceHeader], profile: str | Profile | None = None
) -> dict[int, Verdict]:
    """The composition over a DataFrame of events (column ``tid`` tells traces apart)."""
    from conformance.spark.assignment import decide_suspects
    from conformance.spark.prepare import shared_events
    from conformance.spark.rows import to_violations

    with_keys = {tid for tid, h in headers.items() if h.selector is not None}
    events = shared_events(df, int(spark.conf.get("spark.sql.shuffle.partitions"))).cache()
    try:  # the small job fills the cache; the other jobs read it instead of the source
        infos = digest(collect_small(events, with_keys), headers)
        with ThreadPoolExecutor(1) as pool:  # the identity job keeps the cores busy while the driver plans
            identity = pool.submit(lambda: identity_rows(events).collect())
            rows = violation_rows(spark, events, infos).collect() + identity.result()
    finally:
        events.unpersist()
    found = to_violations(r for r in rows if r["kind"] != _SUSPECT)
    for tid, violations in decide_suspects([r for r in rows if r["kind"] == _SUSPECT], infos).items():
        found.setdefault(tid, []).extend(violations)
    verdicts = {}
    for tid, info in infos.items():
        refused: list[Violation] = [
            make_refused_open(sub, consumer, r.change.index, r.change.ranges, r.reason)
            for sub, consumer, r in info.refusals
            if info.first_fault is None or r.change.index < info.first_fault  # as the streaming engine decides
        ]
        notes, unjudged = _notes(info)
        verdicts[tid] = build_verdict(
            [*found.get(tid, []), *refused],
            resolve_profile(profile, info.header),
            events=info.events,
            notes=notes,
            unjudged=unjudged,
            engine="spark",
        )
    return verdicts


def _notes(info: TraceInfo) -> tuple[list[str], list[Kind]]:
    """What could not be judged, worded as the streaming engine words it."""
    notes: list[str] = []
    unjudged: list[Kind] = []
    if info.header.selector is None:
        notes.append("misassigned not judged: the trace header names no selector")
    elif info.selector_unusable:
        unjudged.append(Kind.MISASSIGNED)
        notes.append(info.selector_note or "misassigned not judged")
    else:
        for sub, tl in info.timelines.items():
            if tl.broken_at is not None:
                if tl.unjudgeable and Kind.MISASSIGNED not in unjudged:
                    unjudged.append(Kind.MISASSIGNED)
                notes.append(
                    f"misassigned not judged in subscription {sub!r} from E{tl.broken_at} on: {tl.broken_reason}"
                )
        if info.faults:
            notes.append(f"misassigned not judged after the fault at E{info.faults[0]}")
    if not (info.drained and info.end_i is not None):
        unjudged.append(Kind.UNDELIVERED)
        notes.append("undelivered not judged: the run was not drained (no 'end' event with drained: true)")
    return notes, unjudged
