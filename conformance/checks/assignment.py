"""``misassigned``: a message delivered to a consumer the reference selector never names for its key.

Judged only when the trace header names the selector the broker is expected to use (``selector``: kind,
Pulsar version, ring points; ``implementation: classic`` picks the 4.x classic ring).  Each subscription's
membership is rebuilt from ``open`` / ``close`` / ``crash`` in trace order on the reference selector
(:func:`reference_model.selectors.make_selector`), one :class:`~reference_model.selectors.ConsumerRef` per
consumer incarnation (its name, and the index of its ``open`` as the consumer id), with the sticky ranges from
the open's ``policy``.

When could the broker have dispatched a message?  Membership changes are issued one at a time, so trace order
is the broker's order, but each takes effect at an uncertain moment: an ``open`` is recorded after subscribe
returned, so it took effect after the previous change and at or before its event; a ``close``/``crash`` is
recorded before the call, so it takes effect at or after its event and before the next change.  State k (the
membership after change k) is a *candidate* for a receive r when it may have been in effect at some moment
between the dispatch's lower bound L and r:  ``lo(k) < r`` and ``hi(k+1) >= L``.

L is known when the message was free just before r: freed by its publish → the send's ``t0`` (compared with the
events' ``t``; at most the receive's ``t``); freed by a release (nack, redeliver, close, crash, fault) → that
event.  Otherwise (first known at r, held by another consumer) there is no lower bound.

Rule: report the receive when no candidate state's selector names the receiving incarnation for the key.  A
subscribe recorded after r may have taken effect before it, so the streaming engine decides a doubtful receive
at the next membership change of the subscription (or at the end).  Not judged after a broker ``fault`` (the
consumers reconnect in an order the trace does not show), nor in a subscription whose membership the
reference selector refuses (a sticky-range conflict).  Witness: the event giving L (if any) and r.
The PySpark engine computes L and r with window functions and applies the same timeline.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from conformance.trace.header import SelectorSpec
from conformance.violations import Kind, Violation, render_elle
from reference_model.errors import ConsumerAssignError, KeySharedError

__all__ = ["Change", "Timeline", "explain", "make_misassigned", "selector_factory"]

INF = math.inf


@dataclass(frozen=True, slots=True)
class Change:
    """One membership change of a subscription: ``open`` (join) or ``close``/``crash`` (leave)."""

    index: int
    t: int
    kind: str
    inc_id: int
    name: str
    ranges: tuple[tuple[int, int], ...] | None = None


def selector_factory(spec: SelectorSpec, classic: bool) -> Any:
    """A function returning a fresh, empty reference selector for ``spec`` (raises on a bad spec)."""
    from reference_model.selectors import make_selector

    make_selector(spec.kind, spec.pulsar_version, spec.points, classic=classic)  # validate now

    def fresh() -> Any:
        return make_selector(spec.kind, spec.pulsar_version, spec.points, classic=classic)

    return fresh


class Timeline:
    """The membership states of one subscription, each with the event window it may have been in effect."""

    def __init__(self, fresh: Any, sticky: bool) -> None:
        from reference_model.selectors import ConsumerRef

        self._ref = ConsumerRef
        self.sticky = sticky
        self.changes: list[Change] = []
        self.states: list[Any] = [fresh()]  # states[k]: membership after change k; states[0] is empty
        self.broken_at: int | None = None
        self.broken_reason: str | None = None
        self._slots: dict[str, int] = {}
        self._owner: dict[str, int | None] = {}  # key -> consumer id in the latest state (cleared on change)

    def apply(self, change: Change) -> None:
        """Append ``change``; a selector refusal marks the timeline broken from that event on."""
        if self.broken_at is not None:
            return
        sel = self.states[-1].copy()
        try:
            if change.kind == "open":
                ranges = list(change.ranges) if (self.sticky and change.ranges) else None
                sel.add(self._ref(change.name, change.inc_id), ranges)
            else:
                member = self._ref(change.name, change.inc_id)
                if member in sel:
                    sel.remove(member)
        except (ConsumerAssignError, KeySharedError) as exc:
            self.broken_at = change.index
            self.broken_reason = f"{type(exc).__name__}: {exc}"
            return
        self.changes.append(change)
        self.states.append(sel)
        self._owner = {}

    # --- the window of each state -------------------------------------------------------------------
    def _lo(self, k: int) -> float:
        change = self.changes[k - 1]
        if change.kind == "open":
            return -INF if k == 1 else self.changes[k - 2].index
        return change.index

    def _hi_after(self, k: int) -> tuple[float, float]:
        """(index, t) bound of the end of state k: when change k+1 may have taken effect at the latest."""
        n = len(self.changes)
        if k + 1 > n:
            return INF, INF
        nxt = self.changes[k]
        if nxt.kind == "open":
            return nxt.index, nxt.t
        if k + 2 > n:
            return INF, INF
        after = self.changes[k + 1]
        return after.index, after.t

    def candidates(self, r: int, lower: tuple[str, int] | None) -> list[int]:
        """States (newest first) that may have been in effect between the lower bound and receive ``r``."""
        out = []
        for k in range(len(self.changes), 0, -1):
            if self._lo(k) >= r:
                continue
            if lower is not None:
                hi_index, hi_t = self._hi_after(k)
                if lower[0] == "index" and hi_index < lower[1]:
                    break
                if lower[0] == "time" and hi_t < lower[1]:
                    break
            out.append(k)
        return out

    def slot(self, key: str) -> int:
        slot = self._slots.get(key)
        if slot is None:
            slot = self._slots[key] = self.states[0].slot_of(key.encode("utf-8"))
        return slot

    def latest_owner(self, key: str) -> int | None:
        """The consumer id the newest state names for ``key`` (cached: the hot path's first question)."""
        owner = self._owner.get(key, -1)
        if owner == -1:
            ref = self.states[-1].select(self.slot(key))
            owner = self._owner[key] = None if ref is None else ref.consumer_id
        return owner

    def selected(self, k: int, key: str) -> Any:
        """The consumer state k's selector names for ``key`` (a ConsumerRef or None)."""
        return self.states[k].select(self.slot(key))

    def selects(self, k: int, key: str, inc_id: int) -> bool:
        ref = self.states[k].select(self.slot(key))
        return ref is not None and ref.consumer_id == inc_id


def make_misassigned(
    subscription: str,
    key: str,
    consumer: str,
    receive_ref: Sequence[Any],
    lower_ref: Sequence[Any] | None,
    expected: Sequence[str],
    selector: str,
) -> Violation:
    refs = [list(receive_ref)] if lower_ref is None else [list(lower_ref), list(receive_ref)]
    facts = {
        "subscription": subscription,
        "key": key,
        "consumer": consumer,
        "msg": receive_ref[3],
        "expected": sorted(set(expected)),
        "selector": selector,
        "refs": refs,
    }
    events = tuple(sorted(r[0] for r in refs))
    return Violation(Kind.MISASSIGNED, key, (consumer,), events, explain(facts), subscription, facts)


def explain(facts: Mapping[str, Any]) -> str:
    refs = facts["refs"]
    got = refs[-1]
    window = f"between E{refs[0][0]} and E{got[0]}" if len(refs) == 2 else f"before E{got[0]}"
    expected = ", ".join(facts["expected"]) or "nobody"
    return render_elle(
        f"misassigned: {facts['msg']} (key {facts['key']!r}) went to {facts['consumer']}"
        f" (subscription {facts['subscription']!r})",
        refs,
        [
            f"The broker could have dispatched {facts['msg']} at any moment {window}.",
            f"In every membership the subscription could have had then, the {facts['selector']} selector"
            f" names {expected} for key {facts['key']!r}.",
            f"However, {facts['consumer']} received it at E{got[0]}.",
        ],
    )
