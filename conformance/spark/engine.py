"""The PySpark engine: every check as DataFrame transforms, one collect of the violations, one verdict.

:func:`check_frames` is the composition (twin of :class:`conformance.checks.StreamingChecker`).  The driver
first collects the few events it needs whole (opens, closes, crashes, faults, ends: membership timelines,
fault indexes, whether the run was drained), then builds one union of the seven checks' violation rows and
collects it.  Many traces can share one job (``tid``), which is how the tests keep Spark's fixed costs low.
The session is the caller's: nothing here starts one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from conformance.checks.assignment import Change, Timeline, selector_factory
from conformance.profiles import Profile, resolve_profile
from conformance.trace.events import Event
from conformance.trace.header import TraceHeader
from conformance.trace.reader import TraceSource
from conformance.verdict import Verdict, build_verdict
from conformance.violations import Kind
from reference_model.errors import InvalidArgument

__all__ = ["check_frames", "check_many", "check_with_spark"]

_SMALL_OPS = ("open", "close", "crash", "fault", "end")


@dataclass
class _TraceInfo:
    header: TraceHeader
    events: int = 0
    faults: list[int] | None = None
    end_i: int | None = None
    drained: bool = False
    timelines: dict[str, Timeline] | None = None
    selector_note: str | None = None
    selector_unusable: bool = False


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
    for n, event in enumerate(events):
        validator.event(event.to_dict(), n)
    return events


def check_frames(
    spark: Any, df: Any, headers: dict[int, TraceHeader], profile: str | Profile | None = None
) -> dict[int, Verdict]:
    """The composition over a DataFrame of events (column ``tid`` tells traces apart)."""
    from pyspark.sql import functions as F

    from conformance.spark.assignment import misassigned_violations
    from conformance.spark.duplicates import duplicate_violations
    from conformance.spark.exclusivity import overlap_violations
    from conformance.spark.loss import undelivered_violations
    from conformance.spark.ordering import ordering_violations
    from conformance.spark.prepare import prepare
    from conformance.spark.redelivery import redelivery_violations
    from conformance.spark.rows import to_violations
    from conformance.spark.unexpected import unexpected_violations

    infos = {tid: _TraceInfo(h) for tid, h in headers.items()}
    small = (
        df.where(F.col("op").isin(*_SMALL_OPS))
        .select("tid", "i", "t", "op", "consumer", "subscription", "result", "name", "drained", "policy")
        .collect()
    )
    counts = df.groupBy("tid").count().collect()
    for row in counts:
        infos[row["tid"]].events = row["count"]
    _digest_small(sorted(small, key=lambda r: (r["tid"], r["i"])), infos)
    faults = {tid: info.faults for tid, info in infos.items() if info.faults}
    first_fault = {tid: fs[0] for tid, fs in faults.items()}
    end_of = {tid: info.end_i for tid, info in infos.items() if info.drained and info.end_i is not None}
    default_sub = {tid: info.header.subscription.name for tid, info in infos.items()}
    p = prepare(df, default_sub, faults)
    timelines = {(tid, sub): tl for tid, info in infos.items() for sub, tl in (info.timelines or {}).items()}
    selectors = {
        tid: f"{info.header.selector.kind} (Pulsar {info.header.selector.pulsar_version})"
        for tid, info in infos.items()
        if info.header.selector is not None
    }
    frames = [
        overlap_violations(p),
        ordering_violations(p),
        undelivered_violations(p, end_of),
        redelivery_violations(p, faults),
        duplicate_violations(p, p.normalized),
        unexpected_violations(p.normalized),
        misassigned_violations(p, timelines, selectors, first_fault),
    ]
    union = None
    for frame in frames:  # every frame has VIOLATION_SCHEMA's columns, in order: a positional union
        if frame is None:
            continue
        union = frame if union is None else union.union(frame)
    try:
        rows = union.collect() if union is not None else []
    finally:
        p.unpersist()
    found = to_violations(rows)
    verdicts = {}
    for tid, info in infos.items():
        notes: list[str] = []
        unjudged: list[Kind] = []
        if info.header.selector is None:
            notes.append("misassigned not judged: the trace header names no selector")
        elif info.selector_unusable:
            unjudged.append(Kind.MISASSIGNED)
            notes.append(info.selector_note or "misassigned not judged")
        else:
            for sub, tl in (info.timelines or {}).items():
                if tl.broken_at is not None:
                    notes.append(
                        f"misassigned not judged in subscription {sub!r} from E{tl.broken_at} on:"
                        f" the reference selector refused the membership ({tl.broken_reason})"
                    )
            if info.faults:
                notes.append(f"misassigned not judged after the fault at E{info.faults[0]}")
        if not (info.drained and info.end_i is not None):
            unjudged.append(Kind.UNDELIVERED)
            notes.append("undelivered not judged: the run was not drained (no 'end' event with drained: true)")
        verdicts[tid] = build_verdict(
            found.get(tid, []),
            resolve_profile(profile, info.header),
            events=info.events,
            notes=notes,
            unjudged=unjudged,
            engine="spark",
        )
    return verdicts


def _digest_small(rows: list[Any], infos: dict[int, _TraceInfo]) -> None:
    """Faults, the end, and each subscription's membership timeline, from the few rows that carry them."""
    live: dict[tuple[int, str], tuple[int, str, str]] = {}  # (tid, consumer) -> (inc id, sub, name)
    factories: dict[int, Any] = {}
    for tid, info in infos.items():
        spec = info.header.selector
        if spec is None:
            continue
        try:
            factories[tid] = (selector_factory(spec, info.header.implementation == "classic"), spec.kind == "sticky")
        except InvalidArgument as exc:
            info.selector_unusable = True
            info.selector_note = f"misassigned not judged: the header's selector is not usable ({exc})"
    for row in rows:
        tid, op = row["tid"], row["op"]
        info = infos[tid]
        if op == "fault":
            info.faults = (info.faults or []) + [row["i"]]
            continue
        if op == "end":
            info.end_i, info.drained = row["i"], bool(row["drained"])
            continue
        consumer = row["consumer"]
        if op == "open":
            if row["result"] not in (None, "ok"):
                continue
            sub = row["subscription"] if row["subscription"] is not None else info.header.subscription.name
            name = row["name"] if row["name"] is not None else consumer
            live[(tid, consumer)] = (row["i"], sub, name)
            policy = row["policy"]
            ranges = None
            if policy is not None and policy["sticky_ranges"]:
                ranges = tuple((int(a), int(b)) for a, b in policy["sticky_ranges"])
            change = Change(row["i"], row["t"], "open", row["i"], name, ranges)
        else:
            current = live.pop((tid, consumer), None)
            if current is None:
                continue
            inc_id, sub, name = current
            change = Change(row["i"], row["t"], op, inc_id, name)
        if tid not in factories:
            continue
        fresh, sticky = factories[tid]
        if info.timelines is None:
            info.timelines = {}
        tl = info.timelines.get(sub)
        if tl is None:
            tl = info.timelines[sub] = Timeline(fresh, sticky)
        tl.apply(change)
