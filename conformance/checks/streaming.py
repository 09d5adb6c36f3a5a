"""The streaming Python engine: one pass over a trace, every check at once.

:class:`StreamingChecker` keeps the state of :mod:`conformance.checks._state` and applies each property's rule
(documented, with its witness and explanation, in the property's module) at the moment the trace makes it
decidable: ``key_overlap``, ``out_of_order`` and ``redelivered_after_ack`` at a receive, ``misassigned`` at a
receive or at the next membership change, ``undelivered``, ``duplicate_publish`` and ``unexpected_message``
when the trace ends.

Two ways in: :meth:`StreamingChecker.feed` takes one :class:`~conformance.trace.Event` (live, as a
``TraceWriter`` listener, returning what the event revealed) and :meth:`StreamingChecker.feed_batch` a
validated pyarrow record batch from :meth:`~conformance.trace.reader.TraceSource.batches` (the fast path for
stored traces).  Both end in :meth:`StreamingChecker._run`, one loop over plain tuples: the three ops that
make up nearly every trace (publish, receive, ack) are handled inline with their common case first, the rest
(and every violation) in methods.  That loop is why this module is long; the rules are short.

Memory: the Key_Shared checks hold what is outstanding — messages known and not yet acknowledged, and who
holds them; ``redelivered_after_ack`` one entry per acknowledged message since the last fault;
``duplicate_publish`` and ``unexpected_message`` one entry per published uid and message
(``docs/checker.md``, "Memory").
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from typing import Any

from conformance.checks._state import Incarnation, Rec, SubState, event_ref
from conformance.checks.assignment import Change, Timeline, make_misassigned, selector_factory
from conformance.checks.duplicates import make_duplicate
from conformance.checks.exclusivity import make_overlap
from conformance.checks.loss import make_undelivered
from conformance.checks.ordering import make_out_of_order
from conformance.checks.redelivery import make_redelivered
from conformance.checks.unexpected import make_unexpected
from conformance.profiles import Profile, resolve_profile
from conformance.trace.events import Event
from conformance.trace.header import TraceHeader
from conformance.trace.identity import canonical_message, normalize_topic, parse_position
from conformance.trace.validation import EventValidator
from conformance.verdict import Verdict, build_verdict
from conformance.violations import Kind, Violation
from reference_model.errors import InvalidArgument

__all__ = ["ROW_FIELDS", "StreamingChecker"]

#: The fields of the tuples :meth:`StreamingChecker._run` works on, in order.  ``n`` is the row's index in
#: its batch: fields only rare ops need (topic, subscription, name, policy, drained) are fetched by it.
ROW_FIELDS: tuple[str, ...] = (
    "i", "t", "op", "consumer", "key", "mkey", "stream", "uid", "producer", "seq", "result", "t0",
    "ledger", "entry", "batch", "n",
)  # fmt: skip
_RARE_FIELDS = ("topic", "subscription", "name", "policy", "drained")
_RELEASE_OPS = frozenset({"nack", "redeliver", "close", "crash", "fault"})
_push = heapq.heappush
_pop = heapq.heappop
_MISSING: Any = object()
Mark = tuple[int, str, "str | None"]


class StreamingChecker:
    """Checks a trace event by event; :meth:`finish` returns the :class:`~conformance.verdict.Verdict`."""

    def __init__(self, header: TraceHeader | None = None, profile: str | Profile | None = None) -> None:
        self.header = header if header is not None else TraceHeader.unknown()
        self.profile = resolve_profile(profile, self.header)
        self.default_sub = self.header.subscription.name
        self.subs: dict[str, SubState] = {}
        self.live: dict[str, Incarnation] = {}
        self.last_inc: dict[str, Incarnation] = {}
        self.found: list[Violation] = []
        self.events = 0
        self.end_i: int | None = None
        self.drained = False
        self.first_fault: int | None = None
        self.notes: list[str] = []
        self._validator = EventValidator("live trace", unit="row")
        self._new: list[Violation] = []
        self._extras: Callable[[int], dict[str, Any]] = lambda n: {}
        # identity checks
        self.uid_pub: dict[str, tuple[str, int] | None] = {}
        self.published: set[str] = set()
        self.pending_unexpected: dict[str, tuple[tuple[Any, ...], str]] = {}
        self.pending_evidence: dict[str, list[tuple[str, tuple[Any, ...], str]]] = {}
        #: (producer, seq) -> (message key, first evidence ref, key) or {message key: (ref, key)} once two
        self.ids: dict[tuple[str, int], Any] = {}
        self.key_mismatches = 0
        # assignment
        self._fresh_selector: Callable[[], Any] | None = None
        self._sticky = False
        self.suspects: dict[str, list[tuple[Any, ...]]] = {}
        self._assign_unjudged = False
        spec = self.header.selector
        if spec is None:
            self.notes.append("misassigned not judged: the trace header names no selector")
        else:
            try:
                self._fresh_selector = selector_factory(spec, self.header.implementation == "classic")
                self._sticky = spec.kind == "sticky"
            except InvalidArgument as exc:
                self._assign_unjudged = True
                self.notes.append(f"misassigned not judged: the header's selector is not usable ({exc})")

    # --- entry points ----------------------------------------------------------------------------------
    def feed(self, event: Event) -> list[Violation]:
        """Check one event (live); return the violations it revealed (end-of-trace kinds come in finish())."""
        self._validator.event(event.to_dict(), event.i)
        self._new = []
        extra = {
            "topic": event.topic,
            "subscription": event.subscription,
            "name": event.extra.get("name"),
            "policy": event.extra.get("policy"),
            "drained": event.drained,
        }
        self._extras = lambda n: extra
        self._run((_row_of(event),))
        return self._new

    def feed_events(self, events: Iterable[Event]) -> None:
        for event in events:
            self.feed(event)

    def feed_batch(self, batch: Any) -> None:
        """Check a validated pyarrow record batch (``TraceSource.batches()``), the fast path."""
        self._new = []
        rows, extras = _rows_of_batch(batch)
        self._extras = extras
        self._run(rows)

    @property
    def timelines(self) -> dict[str, Timeline]:
        return {name: sub.timeline for name, sub in self.subs.items() if sub.timeline is not None}

    # --- the loop --------------------------------------------------------------------------------------
    def _run(self, rows: Iterable[tuple[Any, ...]]) -> None:
        live_get = self.live.get
        uid_pub = self.uid_pub
        uid_pub_get = uid_pub.get
        ids_get = self.ids.get
        published = self.published
        subs = self.subs
        assign = self._fresh_selector is not None
        count = 0
        for row in rows:
            count += 1
            i, t, op, consumer, key, mkey, stream, uid, producer, seq, result, t0, ledger, entry, batch, _n = row
            if key is None:
                key = ""
            if op == "receive":
                if uid is not None:
                    ps = uid_pub_get(uid, _MISSING)
                    if ps is _MISSING or ps is not None:
                        cur = None if ps is _MISSING else ids_get(ps)
                        if cur is None or cur.__class__ is not tuple or cur[0] != mkey:
                            self._identity(uid, ps, mkey, (i, "receive", consumer, _msg(mkey)), key)
                inc = live_get(consumer)
                if inc is None:
                    self._late_receive(row, key)
                    continue
                sub = inc.sub
                recs = sub.recs
                rec = recs.get(mkey)
                if rec is None:
                    rec = Rec(mkey, key, stream, (ledger, entry, batch))
                    recs[mkey] = rec
                    was_free = None
                else:
                    if inc in rec.holders:
                        continue  # delivered again while held: changes nothing, judged by nothing
                    was_free = rec.free_since
                    if rec.key != key:
                        self.key_mismatches += 1
                if sub.armed:
                    armed = sub.armed.pop(mkey, None)
                    if armed is not None and armed[1].last_disarm < armed[0]:
                        self._redelivered(sub, rec, armed, inc, i)
                scope = rec.scope
                sub_holders = sub.holders
                hold = sub_holders.get(scope)
                if hold is not None and inc not in hold:
                    self._overlap(sub, rec, inc, i, hold)
                pos = rec.pos
                heap = sub.free_heaps.get(scope)
                if heap:
                    if heap[0][1] == mkey:
                        _pop(heap)  # the message itself: in order (the common case)
                    if (heap and heap[0][0] < pos) or (hold is not None and (len(hold) > 1 or inc not in hold)):
                        self._check_order(sub, rec, inc, i, hold)
                elif hold is not None and (len(hold) > 1 or inc not in hold):
                    self._check_order(sub, rec, inc, i, hold)
                if assign and self.first_fault is None:
                    tl = sub.timeline
                    if tl is not None and tl.broken_at is None:
                        owner = tl._owner.get(key, -1)
                        if owner == -1:
                            owner = tl.latest_owner(key)
                        if owner != inc.id:
                            self._check_assignment(sub, rec, inc, i, t, was_free)
                rec.acked = False
                rec.free_since = None
                rec.holders[inc] = i
                if hold is None:
                    sub_holders[scope] = {inc: {mkey: i}}
                else:
                    held = hold.get(inc)
                    if held is None:
                        hold[inc] = {mkey: i}
                    else:
                        held[mkey] = i
                inc.held[mkey] = rec
            elif op == "ack":
                inc = live_get(consumer)
                if inc is None:
                    continue
                sub = inc.sub
                recs = sub.recs
                rec = recs.get(mkey)
                if rec is None:
                    if sub.armed:
                        sub.armed.pop(mkey, None)
                    continue
                holders = rec.holders
                arms = inc in holders
                if holders:
                    by_scope = sub.holders[rec.scope]
                    for holder in holders:
                        held = by_scope[holder]
                        del held[mkey]
                        if not held:
                            del by_scope[holder]
                        del holder.held[mkey]
                    if not by_scope:
                        del sub.holders[rec.scope]
                    holders.clear()
                rec.acked = True
                rec.free_since = None
                rec.exempt = False
                if rec.published:
                    del recs[mkey]
                if arms:
                    sub.armed[mkey] = (i, inc)
                elif sub.armed:
                    sub.armed.pop(mkey, None)
            elif op == "publish":
                ps = (producer, seq) if producer is not None and seq is not None else None
                if uid is not None and uid not in uid_pub:
                    uid_pub[uid] = ps
                    if uid in self.pending_unexpected:
                        self._resolve_uid(uid, ps)
                if result != "ok" or mkey is None or ledger < 0 or entry < 0:
                    continue
                if ps is not None:
                    cur = ids_get(ps)
                    if cur is None:
                        self.ids[ps] = (mkey, i, None, key)  # compact: the first evidence, from a publish
                    elif cur.__class__ is not tuple or cur[0] != mkey:
                        self._evidence(ps, mkey, (i, "publish", None, _msg(mkey)), key)
                if mkey in published:
                    repeat = True
                else:
                    repeat = False
                    published.add(mkey)
                send_t = t if t0 is None else t0
                for sub in subs.values():
                    recs = sub.recs
                    rec = recs.get(mkey)
                    if rec is not None:
                        rec.published = True
                        if rec.acked:
                            del recs[mkey]
                        continue
                    if repeat or not sub.created:
                        continue
                    t_c = sub.expect_cache.get(stream)
                    if t_c is None:
                        t_c = sub.expect_cache[stream] = sub.created_at(stream.rpartition("|")[0])
                    if t_c < send_t:
                        rec = Rec(mkey, key, stream, (ledger, entry, batch))
                        recs[mkey] = rec
                        rec.published = True
                        rec.t0 = send_t
                        rec.free_since = (i, "publish", None)
                        heap = sub.free_heaps.get(rec.scope)
                        if heap is None:
                            sub.free_heaps[rec.scope] = [(rec.pos, mkey)]
                        else:
                            _push(heap, (rec.pos, mkey))
            else:
                self._rare(op, row)
        self.events += count

    # --- rare ops --------------------------------------------------------------------------------------
    def _rare(self, op: str, row: tuple[Any, ...]) -> None:
        if op == "nack":
            self._nack(row)
        elif op == "redeliver":
            self._redeliver(row)
        elif op == "open":
            self._open(row)
        elif op == "close" or op == "crash":
            self._leave(row, op)
        elif op == "fault":
            self._fault(row)
        elif op == "end":
            self.end_i = row[0]
            self.drained = bool(self._extras(row[15]).get("drained"))

    def _open(self, row: tuple[Any, ...]) -> None:
        i, t, consumer, result = row[0], row[1], row[3], row[10]
        if result is not None and result != "ok":
            return
        if consumer in self.live:  # validated traces never do this; a live feed may
            raise InvalidArgument(f"event i={i}: consumer {consumer!r} opened again while still open")
        extra = self._extras(row[15])
        name, policy, topic = extra.get("name"), extra.get("policy"), extra.get("topic")
        sub = self._sub(extra.get("subscription"))
        inc = Incarnation(i, consumer, consumer if name is None else name, sub, policy, t)
        sub.incarnations.append(inc)
        base = None if topic is None else normalize_topic(topic)[0]
        if base not in sub.created:
            sub.created[base] = t
            sub.expect_cache.clear()
        self.live[consumer] = inc
        self.last_inc[consumer] = inc
        ranges = None
        if isinstance(policy, dict) and policy.get("sticky_ranges"):
            ranges = tuple((int(a), int(b)) for a, b in policy["sticky_ranges"])
        self._membership(sub, Change(i, t, "open", inc.id, inc.name, ranges))

    def _leave(self, row: tuple[Any, ...], op: str) -> None:
        i, t, consumer = row[0], row[1], row[3]
        inc = self.live.pop(consumer, None)
        if inc is None:
            return
        self._release_all(inc, (i, op, consumer), False)
        if op == "crash":
            inc.last_disarm = i
        self._membership(inc.sub, Change(i, t, op, inc.id, inc.name))

    def _nack(self, row: tuple[Any, ...]) -> None:
        i, consumer, mkey = row[0], row[3], row[5]
        inc = self.live.get(consumer)
        if inc is None:
            return
        sub = inc.sub
        rec = sub.recs.get(mkey)
        if rec is None:
            return
        if inc in rec.holders:
            self._release(sub, rec, inc, (i, "nack", consumer), True)
        elif not rec.acked and not rec.exempt:
            self._exempt(sub, rec)

    def _redeliver(self, row: tuple[Any, ...]) -> None:
        i, consumer = row[0], row[3]
        inc = self.live.get(consumer)
        if inc is None:
            return
        self._release_all(inc, (i, "redeliver", consumer), True)
        inc.last_disarm = i

    def _fault(self, row: tuple[Any, ...]) -> None:
        i = row[0]
        if self.first_fault is None:
            self.first_fault = i
        mark = (i, "fault", None)
        for inc in list(self.live.values()):
            self._release_all(inc, mark, False)
        for sub in self.subs.values():
            sub.armed.clear()

    def _late_receive(self, row: tuple[Any, ...], key: str) -> None:
        i, consumer, mkey, stream = row[0], row[3], row[5], row[6]
        last = self.last_inc.get(consumer)
        sub = last.sub if last is not None else self._sub(self._extras(row[15]).get("subscription"))
        rec = sub.recs.get(mkey)
        if rec is None:
            rec = Rec(mkey, key, stream, (row[12], row[13], row[14]))
            sub.recs[mkey] = rec
            self._free(sub, rec, (i, "receive", consumer))
        elif rec.acked:
            rec.acked = False
            self._free(sub, rec, (i, "receive", consumer))

    # --- shared state changes --------------------------------------------------------------------------
    def _sub(self, name: str | None) -> SubState:
        name = self.default_sub if name is None else name
        sub = self.subs.get(name)
        if sub is None:
            sub = self.subs[name] = SubState(name)
        return sub

    def _unhold(self, sub: SubState, rec: Rec, inc: Incarnation) -> None:
        del rec.holders[inc]
        by_scope = sub.holders[rec.scope]
        held = by_scope[inc]
        del held[rec.mkey]
        if not held:
            del by_scope[inc]
            if not by_scope:
                del sub.holders[rec.scope]
        del inc.held[rec.mkey]

    def _release(self, sub: SubState, rec: Rec, inc: Incarnation, mark: Mark, exempt: bool) -> None:
        self._unhold(sub, rec, inc)
        if exempt and not rec.exempt:
            self._exempt(sub, rec)
        if not rec.holders:
            self._free(sub, rec, mark)

    def _release_all(self, inc: Incarnation, mark: Mark, exempt: bool) -> None:
        sub = inc.sub
        for rec in list(inc.held.values()):
            self._release(sub, rec, inc, mark, exempt)

    def _exempt(self, sub: SubState, rec: Rec) -> None:
        rec.exempt = True
        heap = sub.exempt_heaps.get(rec.scope)
        if heap is None:
            heap = sub.exempt_heaps[rec.scope] = []
        _push(heap, (rec.pos, rec.mkey))

    def _free(self, sub: SubState, rec: Rec, mark: Mark) -> None:
        rec.free_since = mark
        heap = sub.free_heaps.get(rec.scope)
        if heap is None:
            heap = sub.free_heaps[rec.scope] = []
        _push(heap, (rec.pos, rec.mkey))

    # --- identity checks -------------------------------------------------------------------------------
    def _identity(self, uid: str, ps: Any, mkey: str, ref: tuple[Any, ...], key: str) -> None:
        if ps is _MISSING:
            if uid not in self.pending_unexpected:
                self.pending_unexpected[uid] = (ref, key)
            self.pending_evidence.setdefault(uid, []).append((mkey, ref, key))
        elif ps is not None:
            self._evidence(ps, mkey, ref, key)

    def _resolve_uid(self, uid: str, ps: tuple[str, int] | None) -> None:
        self.pending_unexpected.pop(uid, None)
        pending = self.pending_evidence.pop(uid, None)
        if pending and ps is not None:
            for p_mkey, p_ref, p_key in pending:
                self._evidence(ps, p_mkey, p_ref, p_key)

    def _evidence(self, ps: tuple[str, int], mkey: str, ref: tuple[Any, ...], key: str) -> None:
        """Record that ``mkey`` stores ``ps``, as shown by event ``ref``.

        ``ids[ps]`` is a tuple while one id is known — ``(mkey, ref, key)``, or the compact
        ``(mkey, i, None, key)`` of a publish receipt — and a dict ``{mkey: (ref, key)}`` from the second on.
        """
        ids = self.ids
        cur = ids.get(ps)
        if cur is None:
            ids[ps] = (mkey, ref, key)
        elif cur.__class__ is tuple:
            first_ref = cur[1] if len(cur) == 3 else (cur[1], "publish", None, _msg(cur[0]))
            if cur[0] == mkey:
                if ref[0] < first_ref[0]:
                    ids[ps] = (mkey, ref, key)
            else:
                ids[ps] = {cur[0]: (first_ref, cur[-1]), mkey: (ref, key)}
        else:
            have = cur.get(mkey)
            if have is None or ref[0] < have[0][0]:
                cur[mkey] = (ref, key)

    # --- violations found at a receive -----------------------------------------------------------------
    def _emit(self, violation: Violation) -> None:
        self.found.append(violation)
        self._new.append(violation)

    def _redelivered(self, sub: SubState, rec: Rec, armed: tuple[int, Incarnation], inc: Incarnation, i: int) -> None:
        msg = rec.msg
        acker = armed[1].consumer
        ref = (i, "receive", inc.consumer, msg)
        self._emit(make_redelivered(sub.name, rec.key, acker, (armed[0], "ack", acker, msg), inc.consumer, ref))

    def _overlap(
        self, sub: SubState, rec: Rec, inc: Incarnation, i: int, hold: dict[Incarnation, dict[str, int]]
    ) -> None:
        ref = (i, "receive", inc.consumer, rec.msg)
        for other, held in hold.items():
            first_mkey, first_i = next(iter(held.items()))
            holder_ref = (first_i, "receive", other.consumer, _msg(first_mkey))
            self._emit(make_overlap(sub.name, rec.key, other.consumer, holder_ref, inc.consumer, ref))

    def _check_order(
        self, sub: SubState, rec: Rec, inc: Incarnation, i: int, hold: dict[Incarnation, dict[str, int]] | None
    ) -> None:
        pos = rec.pos
        recs = sub.recs
        best: tuple[Any, ...] | None = None
        heap = sub.free_heaps.get(rec.scope)
        if heap:
            while heap:
                other = recs.get(heap[0][1])
                if other is None or other.free_since is None:
                    _pop(heap)
                    continue
                break
            if heap and heap[0][0] < pos:
                other = recs[heap[0][1]]
                best = (other.pos, event_ref(other.free_since, other.msg), None, other.msg)  # type: ignore[arg-type]
        if hold:
            for holder, held in hold.items():
                if holder is inc:
                    continue
                for mkey in held:
                    other = recs[mkey]
                    if other.pos < pos and inc not in other.holders and (best is None or other.pos < best[0]):
                        first_inc, first_i = min(other.holders.items(), key=lambda kv: kv[1])
                        msg = other.msg
                        best = (other.pos, (first_i, "receive", first_inc.consumer, msg), first_inc.consumer, msg)
        if best is None:
            return
        exempt = sub.exempt_heaps.get(rec.scope)
        if exempt:
            while exempt:
                other = recs.get(exempt[0][1])
                if other is None or not other.exempt:
                    _pop(exempt)
                    continue
                break
            if exempt and exempt[0][0] < pos:
                return
        ref = (i, "receive", inc.consumer, rec.msg)
        self._emit(make_out_of_order(sub.name, rec.key, inc.consumer, ref, best[1], best[3], best[2]))

    def _check_assignment(self, sub: SubState, rec: Rec, inc: Incarnation, i: int, t: int, was_free: Any) -> None:
        tl: Timeline = sub.timeline
        lower: tuple[str, int] | None = None
        lower_ref = None
        if was_free is not None:
            op = was_free[1]
            if op == "publish" and rec.t0 is not None:
                lower, lower_ref = ("time", min(rec.t0, t)), event_ref(was_free, rec.msg)
            elif op in _RELEASE_OPS:
                lower, lower_ref = ("index", was_free[0]), event_ref(was_free, rec.msg)
        cands = tl.candidates(i, lower)
        key = rec.key
        for k in cands:
            if tl.selects(k, key, inc.id):
                return
        ref = (i, "receive", inc.consumer, rec.msg)
        self.suspects.setdefault(sub.name, []).append((ref, lower_ref, inc, key, cands))

    def _misassigned(self, sub_name: str, suspect: tuple[Any, ...], extra: list[int]) -> Violation:
        ref, lower_ref, inc, key, cands = suspect
        tl: Timeline = self.subs[sub_name].timeline
        expected = []
        for k in [*cands, *extra]:
            sel = tl.selected(k, key)
            expected.append("nobody" if sel is None else sel.name)
        spec = self.header.selector
        what = f"{spec.kind} (Pulsar {spec.pulsar_version})" if spec is not None else "reference"
        return make_misassigned(sub_name, key, inc.consumer, ref, lower_ref, expected, what)

    def _membership(self, sub: SubState, change: Change) -> None:
        if self._fresh_selector is None:
            return
        tl = sub.timeline
        if tl is None:
            tl = sub.timeline = Timeline(self._fresh_selector, self._sticky)
        tl.apply(change)
        pending = self.suspects.pop(sub.name, None)
        if not pending or tl.broken_at is not None:
            return  # a broken timeline cannot judge them; finish() notes it
        k_new = len(tl.changes)
        for suspect in pending:
            inc, key = suspect[2], suspect[3]
            if change.kind == "open":
                if tl.selects(k_new, key, inc.id):
                    continue
                self._emit(self._misassigned(sub.name, suspect, [k_new]))
            else:
                self._emit(self._misassigned(sub.name, suspect, []))

    # --- the end ---------------------------------------------------------------------------------------
    def finish(self) -> Verdict:
        """Decide what waits for the end of the trace and return the verdict."""
        found = self.found
        for sub_name, pending in self.suspects.items():
            for suspect in pending:
                found.append(self._misassigned(sub_name, suspect, []))
        self.suspects.clear()
        unjudged: list[Kind] = []
        if self._assign_unjudged:
            unjudged.append(Kind.MISASSIGNED)
        for name, tl in self.timelines.items():
            if tl.broken_at is not None:
                self.notes.append(
                    f"misassigned not judged in subscription {name!r} from E{tl.broken_at} on:"
                    f" the reference selector refused the membership ({tl.broken_reason})"
                )
        if self.first_fault is not None and self._fresh_selector is not None:
            self.notes.append(f"misassigned not judged after the fault at E{self.first_fault}")
        if self.drained and self.end_i is not None:
            for sub in self.subs.values():
                for rec in sub.recs.values():
                    if rec.free_since is not None:
                        ref = event_ref(rec.free_since, rec.msg)
                        found.append(make_undelivered(sub.name, rec.key, rec.msg, ref, self.end_i))
        else:
            unjudged.append(Kind.UNDELIVERED)
            self.notes.append("undelivered not judged: the run was not drained (no 'end' event with drained: true)")
        for uid, (ref, key) in self.pending_unexpected.items():
            found.append(make_unexpected(uid, key, ref))
        for (producer, seq), value in self.ids.items():
            if value.__class__ is dict:
                ordered = sorted(value.values(), key=lambda rk: rk[0][0])
                first_ref = ordered[0][0]
                for ref, key in ordered[1:]:
                    found.append(make_duplicate(producer, seq, key, first_ref, ref))
        if self.key_mismatches:
            self.notes.append(
                f"{self.key_mismatches} receive(s) carried a key other than their message's first one;"
                " each message is checked under its first key"
            )
        return build_verdict(found, self.profile, events=self.events, notes=self.notes, unjudged=unjudged)


def _msg(mkey: str) -> str:
    return mkey.rpartition("|")[2]


def _row_of(event: Event) -> tuple[Any, ...]:
    mkey = stream = None
    ledger = entry = batch = -1
    if event.msg_id is not None and event.topic is not None:
        mkey, stream, msg = canonical_message(event.topic, event.msg_id)
        ledger, entry, batch = parse_position(msg)
    return (
        event.i, event.t, event.op.value, event.consumer, event.key, mkey, stream, event.uid, event.producer,
        event.seq, None if event.result is None else event.result.value, event.extra.get("t0"),
        ledger, entry, batch, 0,
    )  # fmt: skip


def _rows_of_batch(batch: Any) -> tuple[Iterable[tuple[Any, ...]], Callable[[int], dict[str, Any]]]:
    n = batch.num_rows
    col = batch.column
    if "mkey" in batch.schema.names:  # derived by the reader
        derived = {name: col(name) for name in ("mkey", "stream", "ledger", "entry")} | {"batch": col("bidx")}
    else:
        from conformance.trace.identity import derive_message_columns_with_position

        mkey, stream, _canon, (ledger, entry, index) = derive_message_columns_with_position(col("topic"), col("msg_id"))
        derived = {"mkey": mkey, "stream": stream, "ledger": ledger, "entry": entry, "batch": index}
    lists: list[Any] = []
    for name in ROW_FIELDS[:-1]:
        array = derived[name] if name in derived else col(name)
        lists.append([None] * n if array.null_count == n else array.to_pylist())
    lists.append(range(n))

    def extras(row: int) -> dict[str, Any]:
        return {name: col(name)[row].as_py() for name in _RARE_FIELDS}

    return zip(*lists, strict=True), extras
