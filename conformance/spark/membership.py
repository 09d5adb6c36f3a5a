"""What the driver learns from the few events that are not about one message, before the Spark job.

Opens, closes, crashes, redeliver requests, faults and ends are few (membership changes are issued one at a
time), so one small job collects them (:func:`collect_small`) together with the number of events and the
distinct keys, and the driver derives, exactly as the streaming engine does event by event:

* per trace: the faults (and the incarnations each touches: those its ``consumers`` name, or all), the end,
  whether the run was drained;
* per consumer handle: **segments** between its consumer events (:class:`Segment`), each saying which
  incarnation an event inside it belongs to (none: a *late* event), its subscription, the incarnation's next
  release (redeliver, close, crash) and next disarm (redeliver, crash).  The Spark job attaches them to the
  message events with a broadcast join on (trace, consumer, bucket of the index) instead of windows over each
  consumer's events (a consumer's events are a large share of a trace: such windows run on few cores);
* per subscription: when it came to exist on each topic (which publishes reach it), and its membership
  :class:`~conformance.checks.assignment.Timeline` on the reference selector.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from conformance.checks.assignment import Change, Refusal, Timeline, selector_factory
from conformance.trace.header import TraceHeader
from conformance.trace.identity import normalize_topic
from reference_model.errors import InvalidArgument

__all__ = ["SMALL_OPS", "Segment", "TraceInfo", "collect_small", "digest"]

#: The ops whose events the driver collects whole.
SMALL_OPS = ("open", "close", "crash", "redeliver", "fault", "end")
_RELEASES = ("redeliver", "close", "crash")
NEG = -(2**63)
POS = 2**63 - 1


@dataclass(frozen=True)
class Segment:
    """Events of ``consumer`` with ``lo < i < hi`` belong to incarnation ``inc`` (None: late) in ``sub``."""

    tid: int
    consumer: str
    lo: int
    hi: int
    inc: int | None
    sub: str | None
    next_rel: int | None
    next_rel_op: str | None
    next_disarm: int | None


@dataclass
class TraceInfo:
    """The driver's digest of one trace (``tid``)."""

    header: TraceHeader
    events: int = 0
    faults: list[int] = field(default_factory=list)
    #: incarnation -> the faults that touch it (unscoped ones, and those naming its handle while it is the
    #: handle's current incarnation), in trace order
    inc_faults: dict[int, list[int]] = field(default_factory=dict)
    end_i: int | None = None
    drained: bool = False
    segments: list[Segment] = field(default_factory=list)
    #: (subscription, canonical topic or None) -> (t, i) of the first ok open on it
    created: dict[tuple[str, str | None], tuple[int, int]] = field(default_factory=dict)
    timelines: dict[str, Timeline] = field(default_factory=dict)
    refusals: list[tuple[str, str, Refusal]] = field(default_factory=list)  # (sub, consumer, refusal)
    keys: list[str] = field(default_factory=list)
    selector_note: str | None = None
    selector_unusable: bool = False
    max_i: int = 0

    @property
    def first_fault(self) -> int | None:
        return self.faults[0] if self.faults else None

    @property
    def default_sub(self) -> str:
        return self.header.subscription.name


def collect_small(df: Any, with_keys: set[int]) -> list[Any]:
    """One job: the small events, the event count and the largest index of every trace, and the distinct keys
    of the traces in ``with_keys`` (their selectors need each key's slot)."""
    from pyspark.sql import functions as F

    col, lit = F.col, F.lit
    null_s, null_l = lit(None).cast("string"), lit(None).cast("long")
    null_a = lit(None).cast("array<string>")
    small = df.where(col("op").isin(*SMALL_OPS)).select(
        lit("E").alias("kind"), "tid", "i", "t", "op", "consumer", "subscription", "result", "name", "drained",
        F.to_json("policy").alias("policy"), "topic", null_s.alias("key"), null_l.alias("n"), "consumers",
        "unattributed",
    )  # fmt: skip
    counts = df.groupBy("tid").agg(F.count(lit(1)).alias("n"), F.max("i").alias("i"))
    counts = counts.select(
        lit("N").alias("kind"), "tid", "i", null_l.alias("t"), null_s.alias("op"), null_s.alias("consumer"),
        null_s.alias("subscription"), null_s.alias("result"), null_s.alias("name"),
        lit(None).cast("boolean").alias("drained"), null_s.alias("policy"), null_s.alias("topic"),
        null_s.alias("key"), "n", null_a.alias("consumers"), null_a.alias("unattributed"),
    )  # fmt: skip
    union = small.unionByName(counts)
    if with_keys:
        keys = (
            df.where(col("tid").isin(*sorted(with_keys)) & col("op").isin("publish", "receive"))
            .select("tid", F.coalesce(col("key"), lit("")).alias("key"))
            .distinct()
        )
        keys = keys.select(
            lit("K").alias("kind"), "tid", null_l.alias("i"), null_l.alias("t"), null_s.alias("op"),
            null_s.alias("consumer"), null_s.alias("subscription"), null_s.alias("result"), null_s.alias("name"),
            lit(None).cast("boolean").alias("drained"), null_s.alias("policy"), null_s.alias("topic"), "key",
            null_l.alias("n"), null_a.alias("consumers"), null_a.alias("unattributed"),
        )  # fmt: skip
        union = union.unionByName(keys)
    return list(union.collect())


def digest(rows: list[Any], headers: dict[int, TraceHeader]) -> dict[int, TraceInfo]:
    """Every trace's :class:`TraceInfo` from the collected rows (in any order)."""
    import json

    infos = {tid: TraceInfo(h) for tid, h in headers.items()}
    factories: dict[int, tuple[Any, bool]] = {}
    for tid, info in infos.items():
        spec = info.header.selector
        if spec is None:
            continue
        try:
            factories[tid] = (selector_factory(spec, info.header.implementation == "classic"), spec.kind == "sticky")
        except InvalidArgument as exc:
            info.selector_unusable = True
            info.selector_note = f"misassigned not judged: the header's selector is not usable ({exc})"
    events = []
    for row in rows:
        info = infos[row["tid"]]
        if row["kind"] == "N":
            info.events, info.max_i = row["n"], row["i"]
        elif row["kind"] == "K":
            info.keys.append(row["key"])
        else:
            events.append(row)
    events.sort(key=lambda r: (r["tid"], r["i"]))
    by_consumer: dict[tuple[int, str], list[Any]] = {}
    live: dict[tuple[int, str], tuple[int, str, str]] = {}  # -> (incarnation, sub, name)
    latest: dict[tuple[int, str], int] = {}  # handle -> its latest incarnation (live or not)
    opened: dict[int, list[int]] = {}  # trace -> every incarnation so far
    for row in events:
        tid, op, info = row["tid"], row["op"], infos[row["tid"]]
        if op == "fault":
            info.faults.append(row["i"])
            named = row["consumers"]
            if named is None or row["unattributed"]:
                touched = opened.get(tid, [])  # every incarnation, closed ones too (their acks are disarmed)
            else:
                touched = [latest[(tid, c)] for c in named if (tid, c) in latest]
            for inc in touched:
                info.inc_faults.setdefault(inc, []).append(row["i"])
            continue
        if op == "end":
            info.end_i, info.drained = row["i"], bool(row["drained"])
            continue
        consumer = row["consumer"]
        by_consumer.setdefault((tid, consumer), []).append(row)
        if op == "redeliver":
            continue
        if op == "open":
            if row["result"] not in (None, "ok"):
                continue
            sub = row["subscription"] if row["subscription"] is not None else info.default_sub
            name = row["name"] if row["name"] is not None else consumer
            live[(tid, consumer)] = (row["i"], sub, name)
            latest[(tid, consumer)] = row["i"]
            opened.setdefault(tid, []).append(row["i"])
            topic = None if row["topic"] is None else normalize_topic(row["topic"])[0]
            info.created.setdefault((sub, topic), (row["t"], row["i"]))
            policy = json.loads(row["policy"]) if row["policy"] else None
            ranges = None
            if policy is not None and policy.get("sticky_ranges"):
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
        tl = info.timelines.get(sub)
        if tl is None:
            tl = info.timelines[sub] = Timeline(fresh, sticky)
        refusal = tl.apply(change)
        if refusal is not None:
            info.refusals.append((sub, consumer, refusal))
    for (tid, consumer), rows_ in by_consumer.items():
        infos[tid].segments.extend(_segments(tid, consumer, rows_, infos[tid].default_sub))
    return infos


def _segments(tid: int, consumer: str, rows: list[Any], default_sub: str) -> list[Segment]:
    """The consumer's segments: between consecutive consumer events, who its events belong to."""
    # the incarnation live after each consumer event (and before the first: none)
    states: list[tuple[int | None, str | None]] = []  # after event k: (incarnation, sub of the latest one)
    inc: int | None = None
    last_sub: str | None = None
    for row in rows:
        op = row["op"]
        if op == "open" and row["result"] in (None, "ok") and inc is None:
            inc = row["i"]
            last_sub = row["subscription"] if row["subscription"] is not None else default_sub
        elif op in ("close", "crash") and inc is not None:
            inc = None
        states.append((inc, last_sub))
    out = []
    bounds = [NEG, *(r["i"] for r in rows), POS]
    for k in range(len(rows) + 1):
        inc_k, sub_k = states[k - 1] if k > 0 else (None, None)
        next_rel = next_rel_op = next_disarm = None
        if inc_k is not None:
            for row in rows[k:]:
                op = row["op"]
                if op in _RELEASES and next_rel is None:
                    next_rel, next_rel_op = row["i"], op
                if op in ("redeliver", "crash"):
                    next_disarm = row["i"]
                    break
                if op == "close":
                    break
        out.append(Segment(tid, consumer, bounds[k], bounds[k + 1], inc_k, sub_k, next_rel, next_rel_op, next_disarm))
    return out


def bucket_width(infos: dict[int, TraceInfo], target_rows: int = 200_000) -> int:
    """A bucket width for the segment join: few segments per (consumer, bucket), few exploded rows in all."""
    span = max((info.max_i for info in infos.values()), default=0) + 2
    consumers = sum(len({s.consumer for s in info.segments}) for info in infos.values()) or 1
    return max(1, math.ceil(span * consumers / target_rows))
