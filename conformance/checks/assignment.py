"""``misassigned``: a message delivered to a consumer the reference selector never names for its key;
``accepted_conflicting_open``: a subscribe the broker accepted although Pulsar refuses it; and ``refused_open``:
a subscribe the broker refused although Pulsar accepts it (:func:`must_accept`, below).

Judged only when the trace header names the selector the broker is expected to use (``selector``: kind,
Pulsar version, ring points; ``implementation: classic`` picks the 4.x classic ring).  Each subscription's
membership is rebuilt from ``open`` / ``close`` / ``crash`` on the reference selector
(:func:`reference_model.selectors.make_selector`), one :class:`~reference_model.selectors.ConsumerRef` per
consumer incarnation (its name, and the index of its ``open`` as the consumer id), with the sticky ranges from
the open's ``policy``.

**When could each membership have been in effect?**  Opens and closes are issued one at a time and awaited by
the driver, so they take effect in trace order: an ``open`` (recorded after subscribe returned) after the
previous membership event and at or before its own; a ``close`` (recorded before the call) at or after its own
event and before the next membership event.  A ``crash`` is different: the driver cuts the connection and goes
on, and the broker removes the consumer when it notices the dead connection — some time later, possibly after
later subscribes and closes (Pulsar's ``ServerCnx.channelInactive`` runs on the broker's own schedule; a
subscribe on another connection may be served first).  So a crash's removal *floats*: any moment after the
crash event.  That matters beyond timing: a consumer that subscribes while a crashed one of the same name is
still registered gets another consumer-name index (``ConsumerNameIndexTracker``), hence other ring points, and
an auto-split join splits other ranges.

The :class:`Timeline` therefore keeps every membership the broker could have had — a :class:`Node` per distinct
state, with the window of events it may have been in effect (``lo < r <= hi``) — as the states reachable by
applying opens and closes in order and each crash's removal at any later point.  Equal states reached by
different histories are merged; more than :data:`MAX_FRONTIER` live variants make the rest of the
subscription unjudged (noted, ``unknown``).  Each crash whose removal is unknown doubles the variants, so a
``gone`` event (the harness saw the broker without the crashed consumer) bounds the removal: the states still
holding it end there and leave the frontier (:meth:`Timeline.gone`).

A receive r with lower bound L (below) is judged against the *candidate* nodes: ``lo < r`` and ``hi >= L``.
L is known when the message was free just before r: freed by its publish → the send's ``t0`` (compared with the
events' ``t``; at most the receive's ``t``); freed by a release (nack, redeliver, close, crash, fault) → that
event.  Otherwise (first known at r, held by another consumer) there is no lower bound.

Rules:

* a receive is reported when no candidate node's selector names the receiving incarnation for the key
  (witness: the event giving L, if any, and r).  A subscribe recorded after r may have taken effect before it,
  so the streaming engine decides a doubtful receive at the subscription's next membership event (or at the
  end).
* an ``open`` with result ``ok`` that the reference selector refuses in every possible membership (a STICKY
  range conflict, ``HashRangeExclusiveStickyKeyConsumerSelector``'s ConsumerAssignException "Range conflict";
  an auto-split range that cannot be split) is itself reported, as ``accepted_conflicting_open``: Pulsar would
  have failed that subscribe, so the broker broke the assignment contract (witness: the open).  This is the
  one place that rule lives; both engines call :func:`make_refused_open`.  The broker's membership is unknown from
  there, so receives are not judged after it (noted).  Memberships that would have refused an accepted open
  are dropped (the broker accepted it, so a crashed consumer in the way was already gone).

Not judged after a broker ``fault`` (the consumers reconnect in an order the trace does not show).
The Spark engine runs this same code in every part of a trace (membership events are copied into each).
"""

from __future__ import annotations

import math
import pickle
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from conformance.trace.header import SelectorSpec
from conformance.violations import Kind, Violation, render_elle
from reference_model.errors import KeySharedError

__all__ = [
    "MAX_FRONTIER",
    "Change",
    "Lower",
    "Node",
    "Refusal",
    "Registered",
    "Timeline",
    "admit",
    "explain",
    "make_misassigned",
    "make_refused_open",
    "make_wrong_refusal",
    "must_accept",
    "refusal_cause",
    "selector_factory",
]

INF = math.inf

#: Live membership variants kept per subscription (distinct states after the latest open/close, with floating
#: crash removals).  Beyond this the rest of the subscription is not judged.
MAX_FRONTIER = 64

#: A dispatch's lower bound: ``("index", i)`` (an event) or ``("time", t)`` (a send's t0), or None.
Lower = tuple[str, int] | None


@dataclass(frozen=True, slots=True)
class Change:
    """One membership event of a subscription: ``open`` (join) or ``close``/``crash`` (leave)."""

    index: int
    t: int
    kind: str
    inc_id: int
    name: str
    ranges: tuple[tuple[int, int], ...] | None = None


@dataclass(frozen=True, slots=True)
class Refusal:
    """An accepted ``open`` the reference selector refuses in every possible membership."""

    change: Change
    reason: str


class Node:
    """One membership the subscription may have had: the selector state and the events bounding its window.

    ``lo``: the state began after event ``lo``; ``hi``/``hi_t``: it ended by event ``hi`` (whose ``t`` is
    ``hi_t``) at the latest — infinite while unknown.  ``pending``: crashed incarnations still members here.
    ``cut``: its window was ended early by a ``gone`` event (so it may end before older states did).
    """

    __slots__ = ("cut", "hi", "hi_t", "lo", "pending", "state")

    def __init__(self, state: Any, lo: float, pending: frozenset[int]) -> None:
        self.state = state
        self.lo = lo
        self.hi: float = INF
        self.hi_t: float = INF
        self.pending = pending
        self.cut = False

    def __repr__(self) -> str:
        members = ", ".join(f"{c.name}@E{c.consumer_id}" for c in self.state.consumers())
        return f"Node([{members}], lo={self.lo}, hi={self.hi}, pending={sorted(self.pending)})"


def selector_factory(spec: SelectorSpec, classic: bool) -> Any:
    """A function returning a fresh, empty reference selector for ``spec`` (raises on a bad spec).

    The checkers never drain, so the selectors skip PIP-379's impacted-range bookkeeping.
    """
    from reference_model.selectors import make_selector

    make_selector(spec.kind, spec.pulsar_version, spec.points, classic=classic)  # validate now

    def fresh() -> Any:
        return make_selector(spec.kind, spec.pulsar_version, spec.points, classic=classic, track_impacted=False)

    return fresh


def _fingerprint(state: Any, pending: frozenset[int]) -> bytes:
    """Equal bytes only for equal selector states (dict or set order may tell equal states apart: no harm)."""
    fields = {k: v for k, v in vars(state).items() if k != "_table"}
    return pickle.dumps((type(state).__name__, fields, sorted(pending)), protocol=pickle.HIGHEST_PROTOCOL)


class Timeline:
    """Every membership one subscription may have had, each with the window of events it may have been in effect.

    Feed membership events in trace order with :meth:`apply`; ask :meth:`explains` whether a receive is
    explained.  :attr:`nodes` lists every distinct state (newest last); :attr:`head` is a current one (every
    crash removed at once), the hot path's first question (:meth:`latest_owner`).
    """

    def __init__(self, fresh: Any, sticky: bool) -> None:
        from reference_model.selectors import ConsumerRef

        self._ref = ConsumerRef
        self._fresh = fresh
        self.sticky = sticky
        self.events: list[Change] = []
        empty = Node(fresh(), -INF, frozenset())
        self.nodes: list[Node] = [empty]
        self.frontier: list[Node] = [empty]
        self.head = empty
        #: the head after each membership event: the states of a broker that removes a crashed consumer at once
        #: (each derived from the one before by one change)
        self.heads: list[Node] = [empty]
        self.broken_at: int | None = None
        self.broken_reason: str | None = None
        #: True when the timeline gave up because of too many variants (misassigned unjudged, not a finding)
        self.unjudgeable = False
        self._await_next: list[Node] = []  # nodes that end by the membership event after a close
        self._members: dict[int, Any] = {}
        self._slots: dict[str, int] = {}
        self._slot_of = empty.state.slot_of
        #: key -> consumer id in the head state; on a change, kept for the keys whose slot kept its owner
        self._owner: dict[str, int | None] = {}
        #: the head state's table (slot -> consumer) its cached owners were read from, and how many of its slots
        #: ``select`` reads from it directly (None: every cached owner is forgotten at the next change)
        self._owner_table: list[Any] | None = None
        self._owner_direct = 0

    # --- feeding ---------------------------------------------------------------------------------------------
    def apply(self, change: Change) -> Refusal | None:
        """Take one membership event into account; return a :class:`Refusal` if Pulsar would refuse it."""
        if self.broken_at is not None:
            return None
        for node in self._await_next:
            node.hi, node.hi_t = change.index, change.t
        self._await_next = []
        previous = self.events[-1].index if self.events else -INF
        self.events.append(change)
        if change.kind == "crash":
            self._crash(change)
            return None
        for node in self.frontier:  # they end with this change's effect
            if change.kind == "open":
                node.hi, node.hi_t = change.index, change.t
            else:
                self._await_next.append(node)
        if change.kind == "open":
            return self._open(change, previous)
        self._close(change)
        return None

    def _open(self, change: Change, lo: float) -> Refusal | None:
        ref = self._ref(change.name, change.inc_id)
        ranges = list(change.ranges) if (self.sticky and change.ranges) else None
        children: list[Node] = []
        reason = None
        head = None
        for node in self.frontier:
            state = node.state.copy()
            refused = admit(state, ref, ranges)
            if refused is not None:  # Pulsar refuses this subscribe in this membership
                reason = reason or refused
                continue
            children.append(Node(state, max(node.lo, lo), node.pending))
            if node is self.head:
                head = children[-1]
        if head is None:  # the head refuses: every membership does (a crashed member only takes ranges away)
            refusal = Refusal(change, reason or "refused")
            self._break(change.index, f"the reference selector refuses the subscribe at E{change.index} ({reason})")
            return refusal
        self._members[change.inc_id] = ref
        self._grow(children, head, removals_after=True)
        return None

    def _close(self, change: Change) -> None:
        ref = self._members.pop(change.inc_id, None)
        children = []
        head = None
        for node in self.frontier:
            state = node.state.copy()
            if ref is not None and ref in state:
                state.remove(ref)
            children.append(Node(state, max(node.lo, change.index), node.pending))
            if node is self.head:
                head = children[-1]
        assert head is not None
        self._grow(children, head, removals_after=True)

    def _crash(self, change: Change) -> None:
        ref = self._members.get(change.inc_id)
        if ref is None:
            return
        variants = []
        head = self.head
        for node in self.frontier:
            if ref in node.state:
                node.pending = node.pending | {change.inc_id}
                variants.append(self._without(node, change.inc_id, change.index))
                if node is self.head:
                    head = variants[-1]
        self._grow([*self.frontier, *variants], head, removals_after=False, keep_old=True)

    def _without(self, node: Node, inc_id: int, at: float) -> Node:
        state = node.state.copy()
        ref = self._members[inc_id]
        if ref in state:
            state.remove(ref)
        return Node(state, max(node.lo, at), node.pending - {inc_id})

    def _grow(self, nodes: list[Node], head: Node, *, removals_after: bool, keep_old: bool = False) -> None:
        """Make ``nodes`` the frontier: with every pending removal applied after them, distinct states only.

        Two histories that reach the same state (and the same pending crashes) are one node whose window starts
        at the earlier of the two.  ``head`` is the node the head became (it may be merged into another).
        """
        todo = list(nodes)
        if removals_after:  # a floating removal may come right after this change
            for node in nodes:
                todo.extend(self._removal_variants(node))
        frontier: list[Node] = []
        if len(todo) == 1:
            frontier = todo
        else:
            seen: dict[bytes, Node] = {}
            for node in todo:
                key = _fingerprint(node.state, node.pending)
                kept = seen.get(key)
                if kept is None:
                    seen[key] = node
                    frontier.append(node)
                    continue
                kept.lo = min(kept.lo, node.lo)
                if node is head:
                    head = kept
        if len(frontier) > MAX_FRONTIER:
            index = self.events[-1].index
            self.unjudgeable = True
            self._break(
                index,
                f"more than {MAX_FRONTIER} memberships are possible after E{index} (crashed consumers the broker"
                " may not have removed yet)",
            )
            return
        old = {id(n) for n in self.frontier} if keep_old else set()
        self.nodes.extend(n for n in frontier if id(n) not in old)
        self.frontier = frontier
        self.head = head
        self.heads.append(head)
        self._keep_owners(head.state)

    def _keep_owners(self, state: Any) -> None:
        """The head changed to ``state``: forget the cached owner of every key whose slot may have changed hands.

        A membership change moves a few hash ranges (a join splits one, a leave merges one): the owners of the
        other keys stay as they were, and clearing them all would send every key back through the selector
        (a quarter of a million times on a 3M-event trace).  Where ``select`` reads its answer from the state's
        table, a slot whose entry is the very same consumer object in the old and the new table kept its owner;
        any other cached key is forgotten (all of them when either table cannot be read that way).
        """
        table, direct = _direct_table(state)
        old, old_direct = self._owner_table, self._owner_direct
        owners = self._owner
        if owners:
            if table is None or old is None or len(old) != len(table):
                self._owner = {}
            else:
                slots = self._slots
                limit = min(direct, old_direct)
                for key in list(owners):
                    slot = slots[key]
                    if not 0 <= slot < limit or old[slot] is not table[slot]:
                        del owners[key]
        self._owner_table, self._owner_direct = table, direct

    def _removal_variants(self, node: Node) -> Iterator[Node]:
        """``node`` with each non-empty subset of its pending crashes removed (in crash order)."""
        pending = sorted(node.pending)
        for mask in range(1, 1 << len(pending)):
            current = node
            for bit, inc_id in enumerate(pending):
                if mask >> bit & 1:
                    current = self._without(current, inc_id, node.lo)
            yield current

    def gone(self, inc_id: int, index: int, t: int) -> None:
        """The harness saw the broker without crashed incarnation ``inc_id`` at event ``index`` (time ``t``): its
        floating removal happened by then.  Every membership that still holds it ends by ``index`` at the latest
        (its window is cut there) and leaves the frontier; the variants without it, made at its crash and after
        each later change, carry on alone.  A later receive is judged against the memberships with it only when
        it may have been dispatched before ``index`` (its lower bound), as the broker could have had them then."""
        if self.broken_at is not None:
            return
        dropped = [node for node in self.frontier if inc_id in node.pending]
        if not dropped:
            return
        for node in dropped:
            if node.hi > index:
                node.hi, node.hi_t = index, t
            node.cut = True
        self.frontier = [node for node in self.frontier if not node.cut]
        self._await_next = [node for node in self._await_next if not node.cut]
        self._members.pop(inc_id, None)

    def _break(self, index: int, reason: str) -> None:
        self.broken_at = index
        self.broken_reason = reason

    # --- judging ---------------------------------------------------------------------------------------------
    @property
    def judges_until(self) -> float:
        """Receives before this index are judged (decided at a membership event before the break)."""
        if self.broken_at is None:
            return INF
        before = [e.index for e in self.events if e.index < self.broken_at]
        return before[-1] if before else -INF

    def slot(self, key: str) -> int:
        slot = self._slots.get(key)
        if slot is None:
            slot = self._slots[key] = self._slot_of(key.encode("utf-8"))
        return slot

    def latest_owner(self, key: str) -> int | None:
        """The consumer id the head state names for ``key`` (cached: the hot path's first question)."""
        owner = self._owner.get(key, -1)
        if owner == -1:
            ref = self.head.state.select(self.slot(key))
            owner = self._owner[key] = None if ref is None else ref.consumer_id
        return owner

    def candidates(self, r: int, lower: Lower) -> list[Node]:
        """The states (newest first) that may have been in effect between the lower bound and receive ``r``.

        Windows only grow along :attr:`nodes` (each starts no earlier and ends no earlier than the ones
        before it), so the walk stops at the first state that ended before the lower bound — but a state a
        ``gone`` event cut short (:meth:`gone`) may end before older ones: it is passed over, not stopped at.
        """
        out = []
        for node in reversed(self.nodes):
            if node.lo >= r:
                continue
            if lower is not None and (node.hi if lower[0] == "index" else node.hi_t) < lower[1]:
                if node.cut:
                    continue
                break
            out.append(node)
        return out

    def explains(self, r: int, lower: Lower, key: str, inc_id: int) -> bool:
        """Whether some candidate state names incarnation ``inc_id`` for ``key``."""
        slot = self.slot(key)
        for node in self.candidates(r, lower):
            ref = node.state.select(slot)
            if ref is not None and ref.consumer_id == inc_id:
                return True
        return False

    def expected(self, r: int, lower: Lower, key: str) -> list[str]:
        """What the candidate states name for ``key`` (for the explanation): consumer names, or ``nobody``."""
        slot = self.slot(key)
        names = []
        for node in self.candidates(r, lower):
            ref = node.state.select(slot)
            names.append("nobody" if ref is None else ref.name)
        return names


def admit(state: Any, ref: Any, ranges: list[tuple[int, int]] | None) -> str | None:
    """Add consumer ``ref`` (sticky ``ranges``, or None) to selector ``state``; the selector's reason when Pulsar
    refuses it there (a STICKY range conflict, an auto-split range that cannot be split), else None.

    The one place a subscribe is tried on the reference selector: :meth:`Timeline.apply` (an accepted open
    Pulsar refuses) and :func:`must_accept` (a refused open Pulsar accepts) both ask it."""
    try:
        state.add(ref, ranges)
    except KeySharedError as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


# --- a refused subscribe Pulsar must accept (refused_open) ---------------------------------------------------


def refusal_cause(error: Any) -> str | None:
    """What a refused ``open``'s ``error`` says the broker refused it for: ``busy`` (``ConsumerBusy``,
    "Subscription is of different type"), ``conflict`` (``ConsumerAssignError``, a STICKY "Range conflict" or no
    range left to split), or None (another error — a timeout, a lost connection —: not judged)."""
    if not isinstance(error, str):
        return None
    if "ConsumerAssign" in error or "Range conflict" in error or "No more range" in error:
        return "conflict"
    if "ConsumerBusy" in error or "different type" in error:
        return "busy"
    return None


@dataclass(frozen=True, slots=True)
class Registered:
    """A consumer of a subscription (an incarnation): its Key_Shared mode, ``allowOutOfOrderDelivery`` and sticky
    ranges as its ``open`` asked (None where the trace does not say)."""

    inc_id: int
    name: str
    mode: str | None
    out_of_order: bool | None
    ranges: tuple[tuple[int, int], ...] | None

    @classmethod
    def of(cls, inc_id: int, name: str, policy: Any) -> Registered:
        if not isinstance(policy, dict):
            return cls(inc_id, name, None, None, None)
        ranges = policy.get("sticky_ranges")
        flag = policy.get("allow_out_of_order_delivery")
        return cls(
            inc_id,
            name,
            policy.get("key_shared_mode"),
            None if flag is None else bool(flag),
            tuple((int(a), int(b)) for a, b in ranges) if ranges else None,
        )


def must_accept(fresh: Any, sticky: bool, registered: Sequence[Registered], new: Registered) -> str | None:
    """Why Pulsar must accept subscribe ``new`` when the broker may still have had ``registered`` (every consumer
    whose close or removal was not seen completed before the subscribe was sent); None when Pulsar may refuse it,
    or when the trace cannot tell (a policy it does not record, no usable reference selector).

    Pulsar refuses a Key_Shared consumer whose mode or ``allowOutOfOrderDelivery`` differs from a connected
    consumer's (``SubscriptionBusyException`` "Subscription is of different type", client ``ConsumerBusy``); with
    no consumer connected the new policy takes over (``testSelectorChangedAfterAllConsumerDisconnected``).  With
    the same policy it refuses only what the selector refuses (:func:`admit`: STICKY range conflicts, an
    auto-split range that cannot be split).  ``fresh``/``sticky``: the header's selector (None: not judged)."""
    if not registered:
        return (
            "no earlier consumer could still be connected (each one's close had completed, or its crash was seen"
            " removed, before this subscribe was sent), so the subscription takes the new consumer's policy"
        )
    if new.mode is None or new.out_of_order is None:
        return None
    if any(r.mode != new.mode or r.out_of_order != new.out_of_order for r in registered):
        return None  # a consumer that may still be connected has another policy: Pulsar may refuse
    if fresh is None or sticky != (new.mode == "STICKY"):
        return None  # the header's selector is not the one this mode uses: the ranges cannot be judged
    from reference_model.selectors import ConsumerRef

    state = fresh()
    for r in registered:
        if admit(state, ConsumerRef(r.name, r.inc_id), list(r.ranges) if sticky and r.ranges else None) is not None:
            return None
    if admit(state, ConsumerRef(new.name, new.inc_id), list(new.ranges) if sticky and new.ranges else None):
        return None  # the selector refuses it beside a consumer that may still be connected
    flag = "true" if new.out_of_order else "false"
    names = ", ".join(sorted({r.name for r in registered}))
    return (
        f"every consumer that could still be connected ({names}) has Key_Shared mode {new.mode} and"
        f" allowOutOfOrderDelivery={flag}, as this one asked, and the reference selector takes it beside them"
    )


def make_wrong_refusal(
    subscription: str, consumer: str, open_index: int, error: str, cause: str, reason: str, ranges: Any
) -> Violation:
    """The violation for a refused ``open`` that Pulsar must accept (:func:`must_accept`)."""
    facts = {
        "subscription": subscription,
        "consumer": consumer,
        "ranges": [list(r) for r in ranges] if ranges else None,
        "error": error,
        "cause": cause,
        "accept": reason,
        "refs": [[open_index, "open", consumer, None]],
    }
    return Violation(Kind.REFUSED_OPEN, None, (consumer,), (open_index,), explain(facts), subscription, facts)


def _direct_table(state: Any) -> tuple[list[Any] | None, int]:
    """``(table, n)``: the selector state's slot table, and how many of its first slots ``state.select(slot)``
    answers with ``table[slot]``; ``(None, 0)`` for a selector whose ``select`` is not that (a ring searched by
    bisection, or a list of candidates)."""
    from reference_model.selectors.auto_split import AutoSplitSelector
    from reference_model.selectors.base import Selector

    select = type(state).select
    if select is not Selector.select and select is not AutoSplitSelector.select:
        return None, 0
    table = state._table
    if table is None:  # built as Selector.select builds it
        table = state._table = state._build_table()
    direct = len(table)
    if select is AutoSplitSelector.select and state._mod_in_select:
        direct = min(direct, state._range_size)  # a slot past the range wraps around
    return table, direct


# --- violations --------------------------------------------------------------------------------------------


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


def make_refused_open(subscription: str, consumer: str, open_index: int, ranges: Any, reason: str) -> Violation:
    """The violation for an accepted ``open`` that Pulsar refuses (see the module docstring)."""
    facts = {
        "subscription": subscription,
        "consumer": consumer,
        "ranges": [list(r) for r in ranges] if ranges else None,
        "reason": reason,
        "refs": [[open_index, "open", consumer, None]],
    }
    return Violation(
        Kind.ACCEPTED_CONFLICTING_OPEN, None, (consumer,), (open_index,), explain(facts), subscription, facts
    )


def explain(facts: Mapping[str, Any]) -> str:
    refs = facts["refs"]
    if "accept" in facts:
        ranges = f" with sticky ranges {facts['ranges']}" if facts.get("ranges") else ""
        return render_elle(
            f"refused_open: the broker refused {facts['consumer']}'s subscribe to {facts['subscription']!r}{ranges},"
            " which Pulsar accepts",
            refs,
            [
                f"When the subscribe of E{refs[0][0]} was sent, {facts['accept']}.",
                "Pulsar accepts such a subscribe.",
                f"However, the broker refused it at E{refs[0][0]}: {facts['error']}.",
            ],
        )
    if "reason" in facts:
        ranges = f" with sticky ranges {facts['ranges']}" if facts.get("ranges") else ""
        return render_elle(
            f"accepted_conflicting_open: {facts['consumer']} joined subscription {facts['subscription']!r}{ranges},"
            " which Pulsar refuses",
            refs,
            [
                f"In every membership the subscription could have had at E{refs[0][0]}, the reference selector"
                f" refuses this consumer: {str(facts['reason']).rstrip('.')}.",
                "Pulsar fails such a subscribe (ConsumerAssignException), so no hash is ever assigned to two"
                " consumers.",
                f"However, the broker accepted it at E{refs[0][0]}: its assignment no longer follows the contract"
                " (later deliveries of this subscription are not judged).",
            ],
        )
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
