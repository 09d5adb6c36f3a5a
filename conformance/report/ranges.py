"""Hash-range ownership over time: the claimed selector's ranges per consumer after each membership change.

The membership is rebuilt with the checker's own :class:`~conformance.checks.assignment.Timeline` (the same
consumer identities: the broker-facing name and the index of the ``open``), so the picture names the owners the
``misassigned`` rule reasons about.  It shows the timeline's *head*: the membership of a broker that removes a
crashed consumer at once (the checker also considers later removals; the page says so).  Keys are placed on the
hash line by the selector's own ``slot_of``; each delivery drawn in a period is coloured by the consumer that
received it, and outlined where that is not the owner the selector names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from conformance.report.collect import Row
from conformance.trace.header import TraceHeader

__all__ = ["MAX_PERIODS", "RangeHistory", "range_history"]

#: Membership periods drawn at most (the first ones; a note says how many more there were).
MAX_PERIODS = 80
#: Keys placed on the hash line at most.
MAX_KEYS_ON_LINE = 400


@dataclass
class RangeHistory:
    """JSON-ready: ``periods`` ``{i, op, consumer, owners: {handle: [[start, end], ...]}}``; ``keys``
    ``{key, slot, deliveries: [[period, receiver, expected]]}``."""

    selector: str = ""
    space: tuple[int, int] = (0, 0)
    subscription: str = ""
    periods: list[dict[str, Any]] = field(default_factory=list)
    keys: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "selector": self.selector,
            "space": list(self.space),
            "subscription": self.subscription,
            "periods": self.periods,
            "keys": self.keys,
            "notes": self.notes,
        }


def range_history(
    header: TraceHeader, membership: Sequence[Row], holds: Mapping[str, Sequence[Sequence[Any]]]
) -> RangeHistory:
    """The ranges after each membership change of the header's subscription, and where each key went."""
    from conformance.checks.assignment import Change, Timeline, selector_factory
    from reference_model.errors import KeySharedError

    out = RangeHistory()
    spec = header.selector
    if spec is None:
        out.notes.append("no hash ranges: the trace header names no selector (nothing claimed to compare with)")
        return out
    try:
        fresh = selector_factory(spec, header.implementation == "classic")
    except KeySharedError as exc:
        out.notes.append(f"no hash ranges: the header's selector is not usable ({exc})")
        return out
    classic = " classic" if header.implementation == "classic" else ""
    out.selector = f"{spec.kind} (Pulsar {spec.pulsar_version}{classic})"
    timeline = Timeline(fresh, spec.kind == "sticky")
    probe = fresh()
    out.space = _space(probe)
    subscription = header.subscription.name or next((r.subscription for r in membership if r.subscription), "") or ""
    out.subscription = subscription
    handle_of: dict[int, str] = {}
    live: dict[str, int] = {}  # handle -> inc id
    others: set[str] = set()
    for row in membership:
        sub = row.subscription or subscription
        if row.op == "fault":
            continue
        if row.op == "open":
            if sub != subscription and row.subscription is not None:
                others.add(sub)
                continue
            if row.consumer is None:
                continue
            live[row.consumer] = row.i
            handle_of[row.i] = row.consumer
            name = row.name or row.consumer
            change = Change(row.i, row.t, "open", row.i, name, row.sticky_ranges)
        else:
            inc = live.pop(row.consumer or "", None)
            if inc is None:
                continue
            change = Change(row.i, row.t, row.op, inc, handle_of[inc])
        refusal = timeline.apply(change)
        if timeline.broken_at is not None and refusal is None and timeline.unjudgeable:
            out.notes.append(f"ranges not followed after E{row.i}: {timeline.broken_reason}")
            break
        if refusal is not None:
            out.notes.append(f"ranges not followed after E{row.i}: {refusal.reason}")
            break
        if len(out.periods) >= MAX_PERIODS:
            out.notes.append(f"only the first {MAX_PERIODS} membership changes are drawn")
            break
        state = timeline.head.state
        owners = {handle_of.get(ref.consumer_id, ref.name): [list(r) for r in rs] for ref, rs in state.ranges().items()}
        out.periods.append({"i": row.i, "op": row.op, "consumer": row.consumer, "owners": owners, "state": state})
    if others:
        out.notes.append(f"ranges of other subscriptions are not drawn: {', '.join(sorted(others))}")
    _place_keys(out, probe, holds, handle_of)
    for period in out.periods:
        del period["state"]
    return out


def _space(selector: Any) -> tuple[int, int]:
    """The range people reason about: the ring (consistent hashing) or the 65536-slot range."""
    if selector.kind == "consistent-hashing":
        lo, hi = selector.key_hash_range
        return int(lo), int(hi)
    return 0, int(getattr(selector, "range_size", 65536)) - 1


def _place_keys(
    out: RangeHistory, probe: Any, holds: Mapping[str, Sequence[Sequence[Any]]], handle_of: Mapping[int, str]
) -> None:
    if not out.periods:
        return
    lo, hi = out.space
    starts = [p["i"] for p in out.periods]
    import bisect

    for key in sorted(holds)[:MAX_KEYS_ON_LINE]:
        slot = probe.slot_of(key.encode("utf-8"))
        if not lo <= slot <= hi:
            slot = lo + slot % (hi - lo + 1)
        deliveries: dict[tuple[int, str], str] = {}
        for hold in holds[key]:
            period = bisect.bisect_right(starts, hold[0]) - 1
            if period < 0:
                continue
            receiver = hold[2]
            if (period, receiver) in deliveries:
                continue
            ref = out.periods[period]["state"].select(probe_slot(probe, key))
            expected = "" if ref is None else handle_of.get(ref.consumer_id, ref.name)
            deliveries[(period, receiver)] = expected
        out.keys.append(
            {"key": key, "slot": slot, "deliveries": [[p, r, e] for (p, r), e in sorted(deliveries.items())]}
        )
    if len(holds) > MAX_KEYS_ON_LINE:
        out.notes.append(f"only {MAX_KEYS_ON_LINE} of {len(holds)} keys are placed on the hash line")


def probe_slot(selector: Any, key: str) -> int:
    """The slot the selector dispatches ``key`` on (its own ``slot_of``, as the checker asks it)."""
    return int(selector.slot_of(key.encode("utf-8")))
