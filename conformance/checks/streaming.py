"""The streaming Python engine: one pass over a trace, every check at once.

The checker reads like ``docs/checker.md``.  :class:`StreamingChecker` keeps the state of
:mod:`conformance.checks._state` (message records, settled remainders, incarnations) and applies each property's
rule at the moment the trace makes it decidable, by calling the function of the property's module that decides
it (the module holds its rule, its witness and its explanation together): :func:`exclusivity.overlaps`
(``key_overlap``), :func:`ordering.overtaken` (``out_of_order``) and :func:`redelivery.redelivered`
(``redelivered_after_ack``) at a receive; ``misassigned`` (:class:`~conformance.checks.assignment.Timeline`) at
a receive, at the next membership event, or at an accepted open Pulsar refuses; :func:`loss.undelivered`,
:func:`duplicates.duplicates` and :func:`duplicates.lost_writes` (and ``unexpected_message``) when the trace
ends.

Two ways in: :meth:`StreamingChecker.feed` takes one :class:`~conformance.trace.Event` (live, as a
``TraceWriter`` listener, returning what the event revealed) and :meth:`StreamingChecker.feed_batch` a
validated pyarrow record batch from :meth:`~conformance.trace.reader.TraceSource.row_batches` or
:meth:`~conformance.trace.reader.TraceSource.batches` (the fast path for stored traces), decoded by
:class:`~conformance.trace.decode.RowDecoder` into one list per field.  Both end in
:meth:`StreamingChecker._run`, which hands each event to the handler of its op: :meth:`~StreamingChecker._publish`,
:meth:`~StreamingChecker._receive` and :meth:`~StreamingChecker._ack` (nearly every event) get their fields as
arguments straight from the columns; the others get an :class:`EventRow` (the fields by name) through
:meth:`~StreamingChecker._rare` (nack, redeliver, open, close, crash, gone, fault, end, failover), and events of a
consumer with no open handle go to :meth:`~StreamingChecker._late_receive` / :meth:`~StreamingChecker._late_ack`.
The optional rules that look at every live receive and ack (the unacked-message limit, dead letters) run in
:meth:`~StreamingChecker._watch_receive` / :meth:`~StreamingChecker._watch_ack`, only in a trace whose header
enables them, so the common trace runs a hot path without their tests.
This module and :mod:`~conformance.checks._state` may run compiled by mypyc (``KEYSHARED_COMPILE=1``;
:mod:`conformance.checks._build` picks the build), so they stay strictly typed and their classes are not patched
at run time.

Memory: one record per message known in a subscription (its key is its first event's, so records are kept),
the holdings and heaps of what is outstanding, and for the identity checks one entry per published uid and
(producer, seq) (``docs/checker.md``, "Memory").
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

from conformance.checks import (
    dead_letter,
    delayed,
    duplicates,
    epochs,
    exclusivity,
    expiry,
    lookahead,
    loss,
    nonpersistent,
    ordering,
    redelivery,
    redelivery_count,
    unacked_limit,
)
from conformance.checks._state import (
    EventInt,
    Incarnation,
    Position,
    Record,
    Settled,
    SubState,
    event_ref,
    free_mark,
    holders_of,
    new_record,
    new_settled,
    settled_of,
)
from conformance.checks.assignment import (
    Change,
    Lower,
    Registered,
    Timeline,
    make_misassigned,
    make_refused_open,
    make_wrong_refusal,
    must_accept,
    refusal_cause,
    selector_factory,
)
from conformance.checks.unexpected import make_unexpected
from conformance.profiles import Profile, resolve_profile
from conformance.trace.decode import ROW_FIELDS, RowDecoder
from conformance.trace.events import Event
from conformance.trace.header import TraceHeader
from conformance.trace.identity import canonical_message, normalize_topic, parse_position
from conformance.trace.validation import EventValidator
from conformance.verdict import Verdict, build_verdict
from conformance.violations import Kind, Violation
from reference_model.errors import InvalidArgument

__all__ = ["RECEIPT_COPY", "ROW_FIELDS", "EventRow", "StreamingChecker", "Suspect"]

#: The op of a publish receipt a partitioned engine copies into a part that does not judge it (not a trace op:
#: no trace holds it).  With deduplication on, the rules that compare a producer's ids (``stored_below_highest``,
#: ``last_sequence_id_behind``, ``lost_write``'s excuse) read every receipt of the producer, of every key; a part
#: given the copies of the other parts' receipts decides them for its own receipts exactly
#: (:meth:`StreamingChecker._receipt_copy`, :mod:`conformance.checks.partition`).
RECEIPT_COPY = "receipt_copy"

_RELEASE_OPS = frozenset({"nack", "redeliver", "close", "crash", "fault"})
_push = heapq.heappush
_pop = heapq.heappop
_MISSING: Any = object()
Mark = tuple[int, str, "str | None"]


class EventRow(NamedTuple):
    """One event of a batch as the handlers of the rare ops and of late events read it: the fields of
    :data:`ROW_FIELDS`, by name (:func:`_row` makes it from the columns)."""

    i: int
    t: int
    op: str
    consumer: Any  #: None for events of no consumer (publish, fault, end, failover)
    key: str  #: never None: the empty key instead
    mkey: Any  #: ``stream|msg_id``, None for events naming no message
    stream: Any  #: the topic partition (stream) of the message, None for events naming no message
    uid: Any
    producer: Any
    seq: Any
    result: Any
    t0: Any
    ledger: int  #: -1 for events naming no message
    entry: int
    batch: int  #: the batch index, -1 for a message sent alone
    redelivery_count: Any  #: the count a receive carries (None: not recorded)
    n: int  #: the event's index in its batch: the rare fields are fetched by it (``_extras``)


class Suspect(NamedTuple):
    """A receive the membership timeline did not explain when it was logged (``misassigned`` waits for the next
    membership event of the subscription, or the end, before it judges it)."""

    ref: tuple[Any, ...]  #: the receive, as a violation's reference
    lower_ref: Any  #: the event the message was free since (a bound on its dispatch), or None
    inc: Incarnation  #: the receiving incarnation
    key: str  #: the key the message is judged under
    lower: Lower  #: that bound as ``("time", t)`` or ``("index", i)``, or None


class StreamingChecker:
    """Checks a trace event by event; :meth:`finish` returns the :class:`~conformance.verdict.Verdict`."""

    #: Every attribute, declared: run from source, an instance with more than 30 attributes in its ``__dict__``
    #: has no shared keys, and the interpreter (3.11) then looks up each ``self._method`` the slow way, once per
    #: handler call, three times a message; slots make that lookup, and every ``self.<attribute>``, direct.
    __slots__ = (
        "_assign_unjudged", "_attached", "_close_i", "_dead", "_decoder", "_delayed", "_dl_max", "_early_allowance",
        "_entries_unled", "_entry_keys", "_epoch", "_extras", "_fresh_selector", "_held_back", "_judge_below",
        "_left_topics", "_lookahead", "_loss_i", "_new", "_non_persistent", "_np_first", "_np_last_open",
        "_np_published", "_own_keys", "_published", "_receipts", "_redelivered_subs", "_refusal_noted", "_registered",
        "_replicated", "_scopes", "_sticky", "_sub_list", "_unacked", "_validator", "_watched", "_wrong_counts",
        "dedup_epochs", "default_sub", "drained", "dup_excused", "dup_receipts", "end_i", "entry_order_breaks",
        "events", "failed_received", "failed_uids", "first_fault", "found", "header", "ids", "key_mismatches",
        "last_inc", "live", "maybe_stored", "notes", "pending_evidence", "pending_unexpected", "profile", "stored_top",
        "subs", "suspects", "top_seq", "uid_pub", "unexcused",
    )  # fmt: skip

    def __init__(self, header: TraceHeader | None = None, profile: str | Profile | None = None) -> None:
        self.header = header if header is not None else TraceHeader.unknown()
        self.profile = resolve_profile(profile, self.header)
        self.default_sub = self.header.subscription.name
        self.subs: dict[str, SubState] = {}
        self._sub_list: tuple[SubState, ...] = ()
        self.live: dict[str, Incarnation] = {}
        self.last_inc: dict[str, Incarnation] = {}
        self.found: list[Violation] = []
        self.events = 0
        self.end_i: int | None = None
        self.drained = False
        self.first_fault: int | None = None
        self._epoch = 0  # faults so far: an ack armed before the latest fault is disarmed
        self.notes: list[str] = []
        #: subscription -> the topics it failed over from: what they still hold *for that subscription* is judged
        #: by the replication check (skipped_after_failover), not as undelivered; another subscription's messages
        #: there are still owed to it
        self._left_topics: dict[str, set[str]] = {}
        #: a failover run (the header lists its clusters): each subscription's copy of the topic it last opened on;
        #: what the other copies still hold is the replication check's too (messages published in any cluster
        #: reach the subscription through replication), not undelivered
        clusters = self.header.extra.get("clusters")
        self._replicated = isinstance(clusters, list) and len(clusters) >= 2
        #: a non-persistent topic (``topic_kind`` in the header): every receive is judged for delivered_twice
        self._non_persistent = nonpersistent.is_non_persistent(self.header)
        #: (subscription, message key) -> (i, consumer) of its first receive, on a non-persistent topic only
        self._np_first: dict[tuple[str, str], tuple[int, str]] = {}
        #: subscription -> its latest ok open (non-persistent only: a join moves keys at once there)
        self._np_last_open: dict[str, int] = {}
        #: message key -> its first ok publish (non-persistent only: the earliest its dispatch can have happened)
        self._np_published: dict[str, int] = {}
        #: the header says publishes may carry ``deliver_after_ms`` (delayed delivery): read it on each publish
        self._delayed = bool(self.header.extra.get("delayed_delivery"))
        self._early_allowance = delayed.allowance_of(self.header.extra)
        #: some published messages do not wait on their key's free heap (non-persistent, delayed: :meth:`_not_waiting`)
        self._held_back = self._non_persistent or self._delayed
        #: the header's broker settings bound each consumer's unacknowledged messages: received_beyond_unacked_limit
        limit = unacked_limit.limit_of(self.header.extra)
        self._unacked = unacked_limit.UnackedLimit(limit) if limit > 0 else None
        #: the header's broker settings name a look-ahead limit (PIP-379): received_beyond_lookahead
        self._lookahead = lookahead.LookAhead.of_header(self.header)
        self._attached: dict[str, str] = {}
        # dead letters (conformance.checks.dead_letter): the policy's maximum (None: not judged); subscription ->
        # message key -> (its dead_letter event, its last release before it, its key, whether a close came
        # between the two); (subscription, message key) -> receives so far (counted only with a maximum); the
        # latest crash or fault, the latest close; subscriptions that saw a redeliver
        self._dl_max = dead_letter.max_redeliver_count(self.header.extra)
        self._dead: dict[str, dict[str, tuple[int, int, str, bool]]] = {}
        self._receipts: dict[tuple[str, str], int] = {}
        #: whether an optional rule watches every live receive and ack: the header's unacknowledged-message
        #: limit, look-ahead limit or dead-letter maximum, or (set by :meth:`_dead_letter`) a message seen on the
        #: dead-letter topic.  Fixed per trace but for that last: :meth:`_run` reads it once per batch and after
        #: each rare op, so a trace that enables none of them runs a receive and an ack without a test of theirs
        self._watched = self._unacked is not None or self._dl_max is not None or self._lookahead is not None
        self._loss_i = -1
        self._close_i = -1
        self._redelivered_subs: set[str] = set()
        self._validator = EventValidator("live trace", unit="row")
        self._new: list[Violation] = []
        self._extras: Callable[[int], dict[str, Any]] = lambda n: {}
        self._decoder = RowDecoder()
        self._published: set[str] = set()
        # identity checks: uid -> (producer, seq) of its first publish; (producer, seq) -> stored ids
        self.uid_pub: dict[str, tuple[str, int] | None] = {}
        self.pending_unexpected: dict[str, tuple[tuple[Any, ...], str]] = {}
        #: uid -> its first publish, while every publish of it so far failed (``fail``: certainly not stored); uid
        #: -> (ref, key) of its first receive, for those (``unexpected_message`` if they stay failed)
        self.failed_uids: dict[str, int] = {}
        self.failed_received: dict[str, tuple[tuple[Any, ...], str]] = {}
        #: wrong_redelivery_count found so far: reported at the end when the trace has no fault
        self._wrong_counts: list[Violation] = []
        self.pending_evidence: dict[str, list[tuple[str, tuple[Any, ...], str]]] = {}
        #: (producer, seq) -> (message key, first evidence ref, key) or {message key: (ref, key)} once two
        self.ids: dict[tuple[str, int], Any] = {}
        #: (producer, seq) -> (ref, key) of its first duplicate receipt; (producer, seq) sent with an unknown outcome
        self.dup_receipts: dict[tuple[str, int], tuple[tuple[Any, ...], str]] = {}
        self.maybe_stored: set[tuple[str, int]] = set()
        #: lost_write: producer -> the highest sequence id of its sends so far that may be stored (an ok receipt with
        #: a real id, an info or fail outcome); producer -> first duplicate receipts no such higher id excused yet,
        #: as (seq, t); the (producer, seq) whose first duplicate receipt a higher stored id excuses
        self.top_seq: dict[str, int] = {}
        #: producer -> (the least stored id that excuses it, t, seq) per first duplicate receipt not excused yet
        self.unexcused: dict[str, list[tuple[int, int, int]]] = {}
        self.dup_excused: set[tuple[str, int]] = set()
        #: stored_below_highest, last_sequence_id_behind (deduplication on, not a failover run): (stream, producer)
        #: -> its highest id stored as an entry's first message so far, with its first receipt
        self._judge_below = self.header.deduplication and not self._replicated
        self.stored_top: dict[tuple[str, str], duplicates.Top] = {}
        #: deduplication epochs (:mod:`conformance.checks.epochs`): made at the trace's first event that can start
        #: one (a deduplication switch, a ``producer_close`` under a header giving the purge timeout); until then
        #: every producer is in its first epoch and the rules cost nothing more
        self.dedup_epochs: epochs.Epochs | None = None
        #: stream -> key -> scope: one shared string per scope, found without building the string again
        self._scopes: dict[str, dict[str, str]] = {}
        #: stream -> (ledger, entry) -> the sticky key of a batch entry (the key on the first event of any of its
        #: messages): the broker dispatches an entry whole by the key of its metadata, the first message's
        self._entry_keys: dict[str, dict[tuple[int, int], str]] = {}
        #: entries first seen through a message other than their first (never, from a recorder that logs in order)
        self._entries_unled: set[tuple[str, int, int]] = set()
        self.entry_order_breaks = 0  #: such entries whose first message then named another key (noted)
        #: message key -> its own first key, for a batch message whose entry's sticky key differs (default batching)
        self._own_keys: dict[str, str] = {}
        self.key_mismatches = 0
        # assignment
        self._fresh_selector: Callable[[], Any] | None = None
        self._sticky = False
        self.suspects: dict[str, list[Suspect]] = {}
        self._assign_unjudged = False
        #: subscription -> the consumers the broker may have registered (:meth:`_registry`), for refused_open
        self._registered: dict[str, dict[int, list[Any]]] = {}
        self._refusal_noted = False
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
        """Check one event (live); return the violations it revealed (end-of-trace kinds come in finish()).

        A malformed event raises :class:`~conformance.trace.validation.TraceFormatError`.  Events a
        ``TraceWriter`` built pass a quick structural check; only a suspect one is validated field by field.
        """
        self._validator.typed_event(event)
        self._new = []
        extra = _extra_of(event)
        self._extras = lambda n: extra
        self._run(_columns_of(event), 0, 1)
        return self._new

    def feed_many(self, events: Sequence[Event]) -> list[Violation]:
        """:meth:`feed` for several events at once, in order (a live check that takes its events in slices).

        The same validation and rules; one pass of the loop for the slice, and the rare fields of an event
        are fetched only when its op needs them.
        """
        typed_event = self._validator.typed_event
        for event in events:
            typed_event(event)
        self._new = []
        if not events:
            return self._new
        columns = [list(column) for column in zip(*map(_values_of, events), strict=True)]
        self._extras = lambda n: _extra_of(events[n])
        self._run(columns, 0, len(events))
        return self._new

    def feed_events(self, events: Iterable[Event]) -> None:
        for event in events:
            self.feed(event)

    def feed_batch(self, batch: Any) -> None:
        """Check a validated pyarrow record batch (``TraceSource.row_batches()`` or ``batches()``), the fast path."""
        self._new = []
        decoded = self._decoder.decode(batch)
        self._extras = decoded.extras
        self._run(decoded.columns, 0, decoded.count)

    @property
    def timelines(self) -> dict[str, Timeline]:
        return {name: sub.timeline for name, sub in self.subs.items() if sub.timeline is not None}

    # --- the loop --------------------------------------------------------------------------------------
    def _run(self, columns: list[list[Any]], start: int, stop: int) -> None:
        """Check events ``start`` to ``stop`` (excluded) of a batch given as one list per field of
        :data:`ROW_FIELDS` (but ``n``): each to the handler of its op.

        The three ops that make nearly every event (receive, ack, publish) hand their handler its fields straight
        from the columns; an event of a consumer with no open handle goes to the late handler, every other op to
        :meth:`_rare` as an :class:`EventRow`.  The columns and ``live`` are read once per
        batch, not once per event: the loop is the engine's hot path.  So is what the trace enables: the optional
        rules that watch every receive and ack (:meth:`_watch_receive`, :meth:`_watch_ack`) run only when the
        header (or a dead letter) turned them on (``_watched``), a non-persistent topic's only on such a topic."""
        c_i, c_t, c_op, c_consumer, c_key, c_mkey, c_stream, c_uid = columns[:8]
        c_producer, c_seq, c_result, c_t0, c_ledger, c_entry, c_batch, c_count = columns[8:]
        live = self.live
        non_persistent = self._non_persistent
        watched = self._watched
        for n in range(start, stop):
            op = c_op[n]
            if op == "receive":
                inc = live.get(c_consumer[n])
                if non_persistent:
                    self._np_receive(columns, n, inc)
                if inc is None:
                    self._late_receive(_row(columns, n))
                    continue
                if watched:
                    self._watch_receive(
                        inc, c_i[n], c_key[n], c_mkey[n], c_stream[n], c_ledger[n], c_entry[n], c_batch[n]
                    )
                self._receive(
                    inc, c_i[n], c_t[n], c_key[n], c_mkey[n], c_stream[n], c_uid[n], c_ledger[n], c_entry[n],
                    c_batch[n], c_count[n],
                )  # fmt: skip
            elif op == "ack":
                inc = live.get(c_consumer[n])
                if inc is None:
                    self._late_ack(_row(columns, n))
                    continue
                if watched:
                    self._watch_ack(c_i[n], c_mkey[n])
                self._ack(inc, c_i[n], c_mkey[n])
            elif op == "publish":
                self._publish(
                    c_i[n], c_t[n], c_key[n], c_mkey[n], c_stream[n], c_uid[n], c_producer[n], c_seq[n], c_result[n],
                    c_t0[n], c_ledger[n], c_entry[n], c_batch[n], n,
                )  # fmt: skip
            elif op == RECEIPT_COPY:
                self._receipt_copy(
                    c_i[n], c_key[n], c_mkey[n], c_stream[n], c_producer[n], c_seq[n], c_result[n], c_t0[n],
                    c_ledger[n], c_entry[n], c_batch[n], n,
                )  # fmt: skip
            else:
                self._rare(op, _row(columns, n))
                watched = self._watched  # a dead letter turns the dead-letter watch on
        self.events += stop - start

    def _watch_receive(
        self, inc: Incarnation, i: int, key: str, mkey: str, stream: str, ledger: int, entry: int, batch: int
    ) -> None:
        """The optional rules at a live receive, before :meth:`_receive` (only when ``_watched``):
        received_beyond_unacked_limit, received_beyond_lookahead's receipts, received_after_dead_letter, and the
        receipts ``dead_lettered_early`` counts."""
        if self._unacked is not None:
            self._unacked_receive(self._unacked, inc, i, key, mkey, stream, ledger, entry, batch)
        if self._lookahead is not None:
            self._lookahead.received(i, inc.consumer, _msg(mkey), key, stream, ledger, entry)
        name = inc.sub.name
        if self._dead and mkey in self._dead.get(name, ()):
            self._after_dead_letter(name, mkey, i, inc.consumer)
        if self._dl_max is not None:
            counted = (name, mkey)
            self._receipts[counted] = self._receipts.get(counted, 0) + 1

    def _watch_ack(self, i: int, mkey: str) -> None:
        """The optional rules at a live ack, before :meth:`_ack` (only when ``_watched``): the acknowledged
        message no longer counts toward its consumer's unacknowledged limit (live or late, :meth:`_late_ack`: it
        may have reached the broker)."""
        if self._unacked is not None:
            self._unacked.acked(i, mkey)

    def _receive(
        self, inc: Incarnation, i: EventInt, t: EventInt, key: str, mkey: str, stream: str, uid: str | None,
        ledger: EventInt, entry: EventInt, batch: EventInt, count: Any,
    ) -> None:  # fmt: skip
        """A live receive by ``inc`` (a late one: :meth:`_late_receive`) carrying redelivery count ``count``: the
        message becomes known and held, and the receive is judged for key_overlap, out_of_order,
        redelivered_after_ack, misassigned and wrong_redelivery_count.  The optional rules that watch every
        receive ran before it when the trace enables them (:meth:`_watch_receive`)."""
        sub = inc.sub
        rec = sub.recs.get(mkey)
        if rec is None and sub.settled and mkey in sub.settled:
            rec = self._revive(sub, mkey, (ledger, entry, batch))
        if rec is None:
            if uid is not None:
                self._identity(uid, mkey, (i, "receive", inc.consumer, _msg(mkey)), key)
            sticky = key if batch < 0 else self._entry_key(stream, ledger, entry, batch, key, mkey)
            scope = self._scope(stream, sticky)
            acked = bool(sub.acked_early) and mkey in sub.acked_early
            if acked:
                sub.acked_early.discard(mkey)
            rec = new_record(acked, None, sticky, scope, (ledger, entry, batch), None, None)
            sub.recs[mkey] = rec
            if count is not None:
                rec.rc = False if (acked or batch >= 0) else [inc, count, i, None]
            was_free = None
        else:
            rc = rec.rc
            # judged unless nothing can be (False), and a receive without a count changes nothing of an unjudged
            # message (None) but for one that can never be judged (acknowledged, a batch message)
            if rc is not False and (rc is not None or count is not None or rec.acked or rec.pos[2] >= 0):
                self._judge_count(sub, rec, inc, i, mkey, count)
            if uid is not None and rec.uid != uid:  # not the uid its publish receipt already evidenced
                self._identity(uid, mkey, (i, "receive", inc.consumer, _msg(mkey)), key)
            holder = rec.holder
            if holder is not None and (holder is inc or (holder.__class__ is dict and inc in holder)):
                return  # delivered again while held: changes nothing, judged by nothing
            was_free = rec.free
            if rec.key != key and self._own_keys.get(mkey, rec.key) != key:
                self.key_mismatches += 1
            if rec.arm_i >= 0 and self._armed_receive(sub, rec, inc, i, mkey):
                rec.acked = False  # the broker took the acknowledgement back: the message is owed again
            scope = rec.scope
        holding = sub.holding
        hold = holding.get(scope)
        # an acknowledged message (a late redelivery) is pending nowhere: its receive holds no key
        pending = not rec.acked
        if pending and hold is not None and inc not in hold:
            for overlap in exclusivity.overlaps(sub, rec, inc, i, mkey, hold):
                if not (self._non_persistent and self._moved_by_join(overlap, sub, mkey)):
                    self._emit(overlap)
        if rec.due is not None:
            if delayed.early(rec.due, t):
                self._emit(delayed.make_delivered_early(sub.name, rec.key, inc.consumer, _msg(mkey), rec.due, i, t))
            rec.due = None  # received: an ordinary message from now on
        heap = sub.free_heaps.get(scope)
        if heap:
            if heap[0][1] == mkey:
                _pop(heap)  # the message itself: in order (the common case)
            if (heap and heap[0][0] < rec.pos) or (hold is not None and (len(hold) > 1 or inc not in hold)):
                self._check_order(sub, rec, inc, i, mkey, hold)
        elif hold is not None and (len(hold) > 1 or inc not in hold):
            self._check_order(sub, rec, inc, i, mkey, hold)
        if self._fresh_selector is not None and self.first_fault is None:
            tl = sub.timeline
            if tl is not None and tl.broken_at is None:
                owner = tl._owner.get(rec.key, -1)
                if owner == -1:
                    owner = tl.latest_owner(rec.key)
                if owner != inc.id:
                    self._check_assignment(sub, rec, inc, i, t, was_free, mkey)
        rec.free = None
        holder = rec.holder
        if holder is None:
            rec.holder = inc
            rec.hold_i = i
        elif holder.__class__ is dict:
            holder[inc] = i
        else:
            rec.holder = {holder: rec.hold_i, inc: i}
        if not pending:
            pass  # held for the acknowledgement it may get (arming), not counted as a hold of the key
        elif hold is None:
            holding[scope] = {inc: 1}
        else:
            hold[inc] = hold.get(inc, 0) + 1
        inc.held[mkey] = rec

    def _ack(self, inc: Incarnation, i: EventInt, mkey: str) -> None:
        """A live ack by ``inc`` (a late one: :meth:`_late_ack`): every hold of the message ends, it is
        acknowledged (settled once its publish receipt is seen), and the ack arms redelivered_after_ack if ``inc``
        held it.  The optional rules that watch every ack ran before it when the trace enables them
        (:meth:`_watch_ack`)."""
        sub = inc.sub
        rec = sub.recs.get(mkey)
        if rec is None:
            if not (sub.settled and mkey in sub.settled):  # settled: acknowledged already, arm kept
                sub.acked_early.add(mkey)
            return
        holder = rec.holder
        if holder is None:
            arms = False
        elif holder.__class__ is not dict:  # one holder (the common case)
            arms = holder is inc
            del holder.held[mkey]
            if not rec.acked:  # (received again after an ack, the hold was never counted as the key's)
                hold = sub.holding[rec.scope]
                n_held = hold[holder]
                if n_held > 1:
                    hold[holder] = n_held - 1
                elif len(hold) > 1:
                    del hold[holder]
                else:
                    del sub.holding[rec.scope]
            rec.holder = None
        else:  # several holders
            arms = inc in holder
            if arms:
                rec.hold_i = holder[inc]  # the acked copy's receive (see redelivery.acked_with)
            if rec.acked:  # received again after an ack: those holds were never counted as the key's
                for other in holder:
                    del other.held[mkey]
            else:
                _end_counted_holds(sub, rec.scope, mkey, holder)
            rec.holder = None
        if mkey in self._published and not rec.exempt:  # settled: only the compact remainder stays
            del sub.recs[mkey]
            if arms:
                # new_settled(rec.scope, rec.key, i, inc, self._epoch, rec.hold_i), written out: the commonest
                # settle, and from source a call per message costs more than its six stores
                left = Settled()
                left.scope = rec.scope
                left.key = rec.key
                left.arm_i = i
                left.arm_inc = inc
                left.arm_epoch = self._epoch
                left.hold_i = rec.hold_i
                sub.settled[mkey] = left
            else:  # an ack that arms nothing leaves an earlier armed ack armed
                sub.settled[mkey] = settled_of(rec)
            return
        rec.acked = True
        rec.free = None
        if arms:
            rec.arm_i = i
            rec.arm_inc = inc
            rec.arm_epoch = self._epoch
            if rec.exempt:  # exempt: this armed ack ends the exemption until it is disarmed
                inc.suspended.append(mkey)

    def _publish(
        self, i: EventInt, t: EventInt, key: str, mkey: str | None, stream: str | None, uid: str | None,
        producer: str | None, seq: int | None, result: str | None, t0: int | None, ledger: EventInt, entry: EventInt,
        batch: EventInt, n: int,
    ) -> None:  # fmt: skip
        """A publish receipt (event ``n`` of its batch: its rare fields, ``deliver_after_ms``, are fetched by it):
        identity evidence (duplicate_publish, lost_write, unexpected_message), and a stored
        message becomes known (and free) in every subscription it reaches.  The bookkeeping every stored receipt
        does (the producer's highest ids, the scope string) is inline; a rule's own decision is called only when
        the receipt can break it."""
        if self.dedup_epochs is not None and producer is not None:
            producer = self.dedup_epochs.identity(producer)  # its epoch's identity; None while dedup is off
        ps = (producer, seq) if producer is not None and seq is not None else None
        first_of_uid = False
        if uid is not None and uid not in self.uid_pub:
            first_of_uid = True
            self.uid_pub[uid] = ps
            if result == "fail":
                self.failed_uids[uid] = i
                early = self.pending_unexpected.get(uid)
                if early is not None:
                    self.failed_received[uid] = early
            if uid in self.pending_unexpected:
                self._resolve_uid(uid, ps)
        elif uid is not None and result != "fail" and self.failed_uids:
            self.failed_uids.pop(uid, None)
        if result != "ok" or mkey is None or stream is None or ledger < 0 or entry < 0:  # (a stream with its mkey)
            if producer is not None and seq is not None:
                self._unstored_receipt(i, t, t0, result, mkey, producer, seq, key, n)
            return  # not stored
        if self._lookahead is not None:
            self._lookahead.published(stream, ledger, entry)
        if ps is not None and producer is not None and seq is not None:
            cur = self.ids.get(ps)
            self._stored_id(i, key, mkey, stream, producer, seq, t0, ledger, entry, batch, n, cur, True)
            if self.dedup_epochs is not None:
                self.dedup_epochs.stored_as[mkey] = producer
            if cur is None:
                self.ids[ps] = (mkey, i, key)  # compact: the first evidence, from a publish
            elif cur.__class__ is not tuple or cur[0] != mkey:
                self._evidence(ps, mkey, (i, "publish", None, _msg(mkey)), key)
        if mkey in self._published:
            return  # a second receipt naming the same message: not a new message
        self._published.add(mkey)
        if self._non_persistent:
            self._np_published[mkey] = i
        send_t = t if t0 is None else t0
        if batch >= 0:  # a batch entry is dispatched whole by its first message's key
            key = self._entry_key(stream, ledger, entry, batch, key, mkey)
        scopes = self._scopes.get(stream)
        scope = None if scopes is None else scopes.get(key)
        if scope is None:
            scope = self._scope(stream, key)
        for sub in self._sub_list:
            recs = sub.recs
            if not sub.created:
                continue  # no subscription yet
            known = recs.get(mkey)
            if known is not None:  # already known from a receive: settled if acknowledged meanwhile
                if known.acked and known.holder is None and not known.exempt:
                    del recs[mkey]
                    sub.settled[mkey] = settled_of(known)
                continue
            t_c = sub.expect_cache.get(stream)
            if t_c is None:
                t_c = sub.expect_cache[stream] = sub.created_at(stream.rpartition("|")[0])
            if t_c > send_t:
                continue  # sent strictly before the subscription existed (at an equal t: after)
            if sub.acked_early and mkey in sub.acked_early:  # an ack named it already: acknowledged
                sub.acked_early.discard(mkey)
                sub.settled[mkey] = new_settled(scope, key, -1, None, 0, -1)
            else:
                pos: Position = (ledger, entry, batch)
                # new_record(False, i, key, scope, pos, send_t, uid if first_of_uid else None), written out: nearly
                # every record is made here, and from source a call per message costs more than the stores
                rec = recs[mkey] = Record()
                rec.acked = False
                rec.exempt = False
                rec.free = i
                rec.holder = None
                rec.hold_i = -1
                rec.key = key
                rec.scope = scope
                rec.pos = pos
                rec.t0 = send_t
                rec.arm_i = -1
                rec.arm_inc = None
                rec.arm_epoch = 0
                rec.uid = uid if first_of_uid else None
                rec.due = None
                rec.rc = None
                if self._held_back and self._not_waiting(rec, send_t, i, n):
                    continue
                heap = sub.free_heaps.get(scope)
                if heap is None:
                    sub.free_heaps[scope] = [(pos, mkey)]
                else:
                    _push(heap, (pos, mkey))

    def _not_waiting(self, rec: Record, send_t: int, i: int, n: int) -> bool:
        """Whether a message just published (event ``n``) does not wait on its key's free heap (only asked when
        the header makes some message not wait, ``_held_back``): on a non-persistent topic it is delivered at
        once or dropped (:mod:`conformance.checks.nonpersistent`); a delayed one is due at its own time
        (:mod:`conformance.checks.delayed`), not in its key's order until received."""
        if self._non_persistent:
            return True
        due = delayed.due_of(send_t, i, self._extras(n).get("deliver_after_ms"), self._early_allowance)
        if due is None:
            return False
        rec.due = due
        return True

    def _entry_key(self, stream: str, ledger: int, entry: int, batch: int, key: str, mkey: str) -> str:
        """The sticky key of batch message ``mkey`` (own key ``key``): its entry's, the key on the first event of
        any message of the entry (``docs/checker.md``, "Batches").  With key-based batching it is ``key`` itself;
        with default batching an entry mixing keys goes whole to the consumer of its first message's key."""
        of_stream = self._entry_keys.get(stream)
        if of_stream is None:
            of_stream = self._entry_keys[stream] = {}
        sticky = of_stream.get((ledger, entry))
        if sticky is None:
            sticky = of_stream[(ledger, entry)] = key
            if batch > 0:
                self._entries_unled.add((stream, ledger, entry))
        elif batch == 0 and self._entries_unled and (stream, ledger, entry) in self._entries_unled:
            self._entries_unled.discard((stream, ledger, entry))
            if sticky != key:
                self.entry_order_breaks += 1
        if sticky != key and mkey not in self._own_keys:
            self._own_keys[mkey] = key
        return sticky

    def _scope(self, stream: str, key: str) -> str:
        """The shared scope string of ``key`` in ``stream`` (what ordering and exclusivity are judged within)."""
        of_stream = self._scopes.get(stream)
        if of_stream is None:
            of_stream = self._scopes[stream] = {}
        scope = of_stream.get(key)
        if scope is None:
            scope = of_stream[key] = stream + "\x1f" + key
        return scope

    # --- rare ops --------------------------------------------------------------------------------------
    def _rare(self, op: str, row: EventRow) -> None:
        """Every other op, to its handler: nack, redeliver, the membership events (open, close, crash, gone),
        fault, end, failover."""
        if self._unacked is not None:
            self._unacked_rare(self._unacked, op, row)
        if self._lookahead is not None:
            self._lookahead_rare(self._lookahead, op, row)
        if op == "nack":
            self._nack(row)
        elif op == "redeliver":
            self._redeliver(row)
        elif op == "open":
            self._open(row)
        elif op == "close" or op == "crash":
            self._leave(row, op)
        elif op == "gone":
            self._gone(row)
        elif op == "closed":
            self._completed(row)
        elif op == "fault":
            self._fault(row)
        elif op == "end":
            self._end(row)
        elif op == "failover":
            self._failover(row)
        elif op == "producer_open":
            self._producer_open(row)
        elif op == "producer_close":
            self._producer_close(row)
        elif op == "dead_letter":
            self._dead_letter(row)

    def _dead_letter(self, row: EventRow) -> None:
        """A message seen on the dead-letter topic: delivered (no longer owed, so not ``undelivered``), judged for
        ``dead_lettered_early``, and remembered for ``received_after_dead_letter``
        (:mod:`conformance.checks.dead_letter`)."""
        i, key, mkey = row.i, row.key, row.mkey
        sub = self._sub(self._extras(row.n).get("subscription"))
        dead = self._dead.setdefault(sub.name, {})
        self._watched = True  # from now on every live receive is looked up among the dead letters
        if mkey in dead:  # a second copy: the broker delivered the message again, and a client routed it again
            self._after_dead_letter(sub.name, mkey, i, None)
        rec = sub.recs.get(mkey)
        since = i
        if rec is not None:
            key = rec.key
            if rec.free is not None:
                since = free_mark(rec.free)[0]
            if rec.holder is None:  # the client acknowledged the original: owed to nobody, like an unarmed ack
                rec.acked = True
                rec.free = None
        dead[mkey] = (i, since, key, self._close_i >= since)
        maximum = self._dl_max
        if maximum is not None and sub.name not in self._redelivered_subs:
            received = self._receipts.get((sub.name, mkey), 0)
            if received < maximum + 1:
                self._emit(dead_letter.make_early(sub.name, key, _msg(mkey), i, received, maximum))

    def _after_dead_letter(self, sub_name: str, mkey: str, i: int, consumer: str | None) -> None:
        """A receive (``consumer``) or a second ``dead_letter`` (None) of a dead-lettered message on its
        subscription: ``received_after_dead_letter`` unless a
        consumer closed between the message's last release and its dead letter, or crashed or a fault came since
        that release (the original's ack may be lost)."""
        dead_i, since, key, closed = self._dead[sub_name].pop(mkey)
        if not closed and self._loss_i < since:
            self._emit(dead_letter.make_received(sub_name, key, _msg(mkey), dead_i, consumer, i))

    def _unacked_receive(
        self, limit: unacked_limit.UnackedLimit, inc: Incarnation, i: int, key: str, mkey: str, stream: str,
        ledger: int, entry: int, batch: int,
    ) -> None:  # fmt: skip
        """received_beyond_unacked_limit at a live receive (:mod:`conformance.checks.unacked_limit`)."""
        batch_entry = (stream, ledger, entry) if batch >= 0 else None
        found = limit.receive(i, inc.consumer, mkey, batch_entry)
        if found is not None:
            self._emit(
                unacked_limit.make_beyond_limit(inc.sub.name, key, inc.consumer, _msg(mkey), limit.limit, found, i)
            )

    @staticmethod
    def _unacked_rare(limit: unacked_limit.UnackedLimit, op: str, row: EventRow) -> None:
        """What else may have lowered a consumer's unacknowledged count (:mod:`conformance.checks.unacked_limit`)."""
        if op == "nack":
            limit.sent_back(row.consumer, row.mkey, (row.stream, row.ledger, row.entry) if row.batch >= 0 else None)
        elif op == "redeliver":
            limit.sent_back(row.consumer, None)
        elif op in ("open", "close", "crash"):
            limit.restart(row.i, row.consumer)
        elif op == "fault":
            limit.fault()

    def _lookahead_rare(self, rule: lookahead.LookAhead, op: str, row: EventRow) -> None:
        """Opens, leaves, redeliver requests and faults for received_beyond_lookahead
        (:mod:`conformance.checks.lookahead`)."""
        if op == "open":
            if row.result == "fail":
                return  # refused: never registered
            extra = self._extras(row.n)
            rule.opened(str(row.consumer), extra.get("subscription"), self.default_sub, extra.get("receiver_queue"))
        elif op == "close" or op == "crash":
            rule.left(str(row.consumer))
        elif op == "redeliver":
            rule.redeliver(str(row.consumer))
        elif op == "fault":
            rule.fault()

    def _producer_open(self, row: EventRow) -> None:
        """A producer was created and told its last sequence id (``seq``): ``last_sequence_id_behind`` if a higher
        id of it was stored on the topic partition before (a receipt logged before this event)."""
        i, producer, answer, result = row.i, row.producer, row.seq, row.result
        if producer is None or answer is None or result != "ok":
            return
        rule = self.dedup_epochs
        if rule is not None:
            closed = rule.closed_at(producer)
            before = rule.identity(producer)
            topic = self._extras(row.n).get("topic")
            if closed is not None and before is not None and topic is not None and self._judge_below:
                base, named = normalize_topic(str(topic))
                if (f"{base}|{named}", before) in self.stored_top:  # it had ids: the answer probes the purge
                    rule.probe(i, producer, row.t if row.t0 is None else row.t0, row.t, answer == -1)
            t0 = row.t if row.t0 is None else row.t0
            if rule.opened(producer, t0, row.t, answer) and answer != -1 and closed is not None:
                close_ref = (closed[1], "producer_close", None, None)
                ref = (i, "producer_open", None, None)
                self._emit(duplicates.make_not_purged(producer, answer, close_ref, ref, rule.bound_ms))
            named_now = rule.identity(producer)
            if named_now is None:
                return  # deduplication off: the broker answers -1, and remembers nothing
            producer = named_now
        if not self._judge_below:
            return
        topic = self._extras(row.n).get("topic")
        if topic is None:
            return
        base, named = normalize_topic(str(topic))
        higher = duplicates.below_highest(self.stored_top.get((f"{base}|{named}", producer)), answer)
        if higher is not None:
            ref = (i, "producer_open", None, None)
            self._emit(duplicates.make_behind(producer, answer, higher[0], duplicates.top_receipt(higher), ref))

    def _producer_close(self, row: EventRow) -> None:
        """A producer's close returned: its inactivity starts (a purge is proven once it lasts past the timeout plus
        one purge period, :mod:`conformance.checks.epochs`); without the timeout in the header it proves nothing."""
        if self.dedup_epochs is None:
            bound = epochs.purge_bound_ns(self.header.extra)
            if bound is None:
                return
            self.dedup_epochs = epochs.Epochs(bound)
        if row.producer is not None:
            self.dedup_epochs.closed(row.producer, row.t, row.i, row.t0)

    def _epoch_fault(self, name: str, t: int) -> None:
        """A broker restart (no inactivity proven across it) or a deduplication switch (the rules suspended, or
        every producer's next epoch): :mod:`conformance.checks.epochs`."""
        rule = self.dedup_epochs
        restart = name in ("broker_restart", "broker_restarted")
        if rule is None:
            bound = epochs.purge_bound_ns(self.header.extra)
            if restart and bound is None:
                return
            rule = self.dedup_epochs = epochs.Epochs(bound)
        if restart:
            rule.restarted(t, name == "broker_restarted")
        else:
            rule.switched(name == "deduplication_on")

    def _end(self, row: EventRow) -> None:
        """The run's end: ``undelivered`` is judged at :meth:`finish` only if it says the run was drained."""
        self.end_i = row.i
        self.drained = bool(self._extras(row.n).get("drained"))

    def _failover(self, row: EventRow) -> None:
        """The subscription left this cluster's copy of the topic: what that copy still holds for it is the
        replication check's (``skipped_after_failover``), not ``undelivered``."""
        extra = self._extras(row.n)
        name = extra.get("subscription")
        left = self._left_topics.setdefault(self.default_sub if name is None else name, set())
        left.add(normalize_topic(str(extra.get("topic")))[0])

    def _open(self, row: EventRow) -> None:
        i, t, consumer, result = row.i, row.t, row.consumer, row.result
        if result is not None and result != "ok":
            if result == "fail":
                self._refused(row)
            else:  # the client could not tell: the broker may have it registered from now on
                extra = self._extras(row.n)
                name = extra.get("name")
                self._registry(extra.get("subscription"))[i] = [
                    Registered.of(i, consumer if name is None else name, extra.get("policy")),
                    None,
                ]
            return
        if consumer in self.live:  # validated traces never do this; a live feed may
            raise InvalidArgument(f"event i={i}: consumer {consumer!r} opened again while still open")
        extra = self._extras(row.n)
        name, policy, topic = extra.get("name"), extra.get("policy"), extra.get("topic")
        sub = self._sub(extra.get("subscription"))
        inc = Incarnation(i, consumer, consumer if name is None else name, sub, policy, t)
        sub.incarnations.append(inc)
        base = None if topic is None else normalize_topic(topic)[0]
        if self._replicated and base is not None:
            self._attached[sub.name] = base
        if base not in sub.created:
            sub.created[base] = t
            sub.expect_cache.clear()
        self.live[consumer] = inc
        self.last_inc[consumer] = inc
        if self._non_persistent:
            self._np_last_open[sub.name] = i
        ranges = None
        if isinstance(policy, dict) and policy.get("sticky_ranges"):
            ranges = tuple((int(a), int(b)) for a, b in policy["sticky_ranges"])
        self._membership(sub, Change(i, t, "open", inc.id, inc.name, ranges), inc)
        self._registry(sub.name)[inc.id] = [Registered.of(inc.id, inc.name, policy), None]

    def _registry(self, subscription: str | None) -> dict[int, list[Any]]:
        """The consumers of ``subscription`` the broker may have registered: incarnation id -> [its
        :class:`~conformance.checks.assignment.Registered`, the ``t`` by which its close completed or its crash
        was seen removed (None while unknown)]."""
        name = self.default_sub if subscription is None else subscription
        registry = self._registered.get(name)
        if registry is None:
            registry = self._registered[name] = {}
        return registry

    def _refused(self, row: EventRow) -> None:
        """A refused subscribe: ``refused_open`` when Pulsar must accept it (:func:`assignment.must_accept`).

        Judged only with the subscribe's send time (``t0``) and an ``error`` naming a refusal (``ConsumerBusy``,
        ``ConsumerAssignError``), before any broker fault.  The consumers the broker may still have had are those
        whose completed close (``closed``) or seen removal (``gone``) is not strictly before ``t0``: an equal
        timestamp may not have completed first, and a close without ``closed`` may never have."""
        i, consumer, t0 = row.i, row.consumer, row.t0
        extra = self._extras(row.n)
        error = extra.get("error")
        cause = refusal_cause(error)
        if cause is None or self.first_fault is not None:
            return
        if t0 is None:
            if not self._refusal_noted:
                self._refusal_noted = True
                self.notes.append(
                    f"refused_open not judged at E{i}: the refused open carries no 't0' (when the subscribe was sent)"
                )
            return
        registry = self._registry(extra.get("subscription"))
        name = extra.get("name")
        policy = extra.get("policy")
        new = Registered.of(i, consumer if name is None else name, policy)
        maybe = [entry[0] for entry in registry.values() if entry[1] is None or entry[1] >= t0]
        reason = must_accept(self._fresh_selector, self._sticky, maybe, new)
        if reason is not None:
            sub = self.default_sub if extra.get("subscription") is None else extra["subscription"]
            self._emit(make_wrong_refusal(sub, consumer, i, str(error), cause, reason, new.ranges))

    def _completed(self, row: EventRow) -> None:
        """``closed``: the close of the handle's last incarnation completed by this event's ``t``."""
        t, consumer = row.t, row.consumer
        inc = self.last_inc.get(consumer)
        if inc is None or self.live.get(consumer) is inc:
            return
        entry = self._registry(inc.sub.name).get(inc.id)
        if entry is not None and entry[1] is None:
            entry[1] = t

    def _owed_here(self, sub: SubState, mkey: str) -> bool:
        """Whether ``undelivered`` judges ``mkey`` here: not on a copy of a failover run's topic that the
        subscription left or never consumed at the end (the replication check judges those)."""
        topic = _topic(mkey)
        if self._left_topics and topic in self._left_topics.get(sub.name, ()):
            return False
        return not (self._replicated and topic != self._attached.get(sub.name, topic))

    def _leave(self, row: EventRow, op: str) -> None:
        i, t, consumer = row.i, row.t, row.consumer
        if op == "crash":
            self._loss_i = i
        else:
            self._close_i = i
        inc = self.live.pop(consumer, None)
        if inc is None:
            return
        self._release_all(inc, (i, op, consumer), False)
        if op == "crash":
            inc.last_disarm = i
            self._revive_exemptions(inc)
        self._membership(inc.sub, Change(i, t, op, inc.id, inc.name), inc)

    def _gone(self, row: EventRow) -> None:
        """The harness saw the broker without the crashed consumer ``row``'s handle last was: its removal, which
        floats after the crash, happened by this event (:meth:`~conformance.checks.assignment.Timeline.gone`).
        Nothing when the handle is open again (the event then names no crashed incarnation)."""
        i, t, consumer = row.i, row.t, row.consumer
        inc = self.last_inc.get(consumer)
        if inc is None or self.live.get(consumer) is inc:
            return
        entry = self._registry(inc.sub.name).get(inc.id)
        if entry is not None and entry[1] is None:
            entry[1] = t
        if inc.sub.timeline is not None:
            inc.sub.timeline.gone(inc.id, i, t)

    def _nack(self, row: EventRow) -> None:
        i, consumer, mkey = row.i, row.consumer, row.mkey
        inc = self.live.get(consumer)
        if inc is None:
            return
        sub = inc.sub
        rec = sub.recs.get(mkey)
        if rec is None:
            if not (sub.settled and mkey in sub.settled):
                return
            rec = self._revive(sub, mkey, parse_position(_msg(mkey)))  # acknowledged, but perhaps not effectively
        ledger, entry, batch = rec.pos
        mark: Mark = (i, "nack", consumer)
        if batch >= 0:
            inc.batch_nacks.setdefault((rec.scope, ledger, entry), []).append(i)
            self._release_entry(sub, rec, inc, mark)
        holder = rec.holder
        if holder is inc or (holder.__class__ is dict and inc in holder):
            self._release(sub, rec, mkey, inc, mark, True)
        elif not rec.exempt:  # an ack that arms nothing may never have taken effect: the nack still exempts
            self._exempt(sub, rec, mkey)

    def _release_entry(self, sub: SubState, rec: Record, inc: Incarnation, mark: Mark) -> None:
        """A nack of batch message ``rec`` sends its whole entry back: the clients' negative-ack trackers drop the
        batch index (C++ and Java ``NegativeAcksTracker``) and the broker removes the entry from the consumer's
        pending acks, so every other message of the entry that ``inc`` holds is released as if nacked too
        (``docs/checker.md``, "Batches"): the broker may give the entry to another consumer while the
        application still holds the rest of it."""
        scope, (ledger, entry, _batch) = rec.scope, rec.pos
        for other_key, other in list(inc.held.items()):
            if other is not rec and other.scope == scope and other.pos[0] == ledger and other.pos[1] == entry:
                self._release(sub, other, other_key, inc, mark, True)

    def _redeliver(self, row: EventRow) -> None:
        i, consumer = row.i, row.consumer
        inc = self.live.get(consumer)
        if inc is None:
            return
        self._redelivered_subs.add(inc.sub.name)
        self._release_all(inc, (i, "redeliver", consumer), True)
        inc.last_disarm = i
        self._revive_exemptions(inc)

    def _fault(self, row: EventRow) -> None:
        """A fault: the holds of the consumers it touched end and their acknowledgements are disarmed.

        It touched the consumers its ``consumers`` field names (their current incarnations), or every consumer
        when it names none (no field) or carries ``unattributed`` handlers the driver could not name.
        """
        i = row.i
        extra = self._extras(row.n)
        if extra.get("fault") in epochs.EPOCH_FAULTS:
            self._epoch_fault(str(extra.get("fault")), row.t)
        if extra.get("fault") == expiry.EXPIRE_FAULT:
            self._expire(self._sub(extra.get("subscription")), row.t, extra.get("expire_seconds"))
            return  # the broker acknowledged; no consumer was touched, nothing about membership changed
        self._loss_i = i  # an acknowledgement sent before it may be lost (conformance.checks.dead_letter)
        if self.first_fault is None:
            self.first_fault = i
        mark = (i, "fault", None)
        named = extra.get("consumers")
        if named is None or extra.get("unattributed"):
            for inc in list(self.live.values()):
                self._release_all(inc, mark, False)
            self._epoch += 1
            for sub in self._sub_list:
                for inc in sub.incarnations:
                    if inc.suspended:
                        self._revive_exemptions(inc)
            return
        for name in named:
            touched = self.live.get(name)
            if touched is not None:
                self._release_all(touched, mark, False)
            last = self.last_inc.get(name)
            if last is not None:
                last.last_disarm = i
                self._revive_exemptions(last)

    def _moved_by_join(self, violation: Violation, sub: SubState, mkey: str) -> bool:
        last_open = self._np_last_open.get(sub.name, -1)
        return nonpersistent.moved_by_join(violation, last_open, self._np_published, mkey.rpartition("|")[0])

    def _np_receive(self, columns: list[list[Any]], n: int, inc: Incarnation | None) -> None:
        """A receive on a non-persistent topic: a second one of a message is ``delivered_twice``."""
        consumer = columns[3][n]
        if inc is None:
            inc = self.last_inc.get(consumer)
        sub = inc.sub.name if inc is not None else self._sub(self._extras(n).get("subscription")).name
        mkey = columns[5][n]
        key, i = columns[4][n], columns[0][n]
        twice = nonpersistent.delivered_twice(self._np_first, sub, key, mkey, _msg(mkey), i, consumer)
        if twice is not None:
            self._emit(twice)

    def _expire(self, sub: SubState, t: int, seconds: Any) -> None:
        """Message expiry (:mod:`conformance.checks.expiry`): every unacknowledged message of ``sub`` that may
        have expired is acknowledged by the broker, as by an ack that arms nothing; its holds end."""
        for mkey, rec in list(sub.recs.items()):
            if rec.acked or not expiry.may_expire(rec.t0, t, seconds):
                continue
            holder = rec.holder
            if holder is not None:
                _end_counted_holds(sub, rec.scope, mkey, holder if holder.__class__ is dict else (holder,))
                rec.holder = None
            rec.due = None
            if mkey in self._published and not rec.exempt:
                del sub.recs[mkey]
                sub.settled[mkey] = settled_of(rec)
                continue
            rec.acked = True
            rec.free = None

    def _late_receive(self, row: EventRow) -> None:
        i, consumer, key, mkey, stream, uid = row.i, row.consumer, row.key, row.mkey, row.stream, row.uid
        if self._lookahead is not None and stream is not None and mkey is not None:
            self._lookahead.received(i, str(consumer), _msg(mkey), str(key or ""), stream, row.ledger, row.entry)
        if uid is not None:
            self._identity(uid, mkey, (i, "receive", consumer, _msg(mkey)), key)
        last = self.last_inc.get(consumer)
        sub = last.sub if last is not None else self._sub(self._extras(row.n).get("subscription"))
        if mkey in sub.recs or (sub.settled and mkey in sub.settled):
            return  # known already; acknowledged or not, a late receive changes nothing
        if row.batch >= 0:
            key = self._entry_key(stream, row.ledger, row.entry, row.batch, key, mkey)
        scope = self._scope(stream, key)
        acked = bool(sub.acked_early) and mkey in sub.acked_early
        rec = new_record(acked, None, key, scope, (row.ledger, row.entry, row.batch), None, None)
        sub.recs[mkey] = rec
        if acked:
            sub.acked_early.discard(mkey)
        else:
            self._free(sub, rec, mkey, (i, "receive", consumer))

    def _late_ack(self, row: EventRow) -> None:
        """An ack by a consumer with no open incarnation: it arms nothing, but may have reached the broker, so
        the message is acknowledged (and held by nobody) like after any other ack."""
        consumer, mkey = row.consumer, row.mkey
        if self._unacked is not None:
            self._unacked.acked(row.i, mkey)  # it may have reached the broker
        last = self.last_inc.get(consumer)
        sub = last.sub if last is not None else self._sub(self._extras(row.n).get("subscription"))
        rec = sub.recs.get(mkey)
        if rec is None:
            if not (sub.settled and mkey in sub.settled):
                sub.acked_early.add(mkey)
            return
        holder = rec.holder
        if holder is not None:
            for other in list(holders_of(rec)):
                self._unhold(sub, rec, mkey, other)
        rec.acked = True  # an exemption stays: only an armed ack ends it
        rec.free = None
        if mkey in self._published and not rec.exempt:
            del sub.recs[mkey]
            sub.settled[mkey] = settled_of(rec)

    # --- shared state changes --------------------------------------------------------------------------
    def _sub(self, name: str | None) -> SubState:
        name = self.default_sub if name is None else name
        sub = self.subs.get(name)
        if sub is None:
            sub = self.subs[name] = SubState(name)
            self._sub_list = tuple(self.subs.values())
        return sub

    def _judge_count(self, sub: SubState, rec: Record, inc: Incarnation, i: int, mkey: str, count: int | None) -> None:
        """A live receive at E``i`` of a known message with redelivery count ``count``: judged against the
        previous live receive's when both are ``inc``'s (:mod:`conformance.checks.redelivery_count`); reported
        at the end unless the trace has a fault.  A receive without a count starts over."""
        prev = rec.rc
        if rec.acked or rec.pos[2] >= 0:
            rec.rc = False
            return
        if count is None:
            rec.rc = None
            return
        if prev is not None and prev[0] is inc:
            request = prev[3]
            how = redelivery_count.judge(prev[1], None if request is None else request[1], count)
            if how is not None:
                msg = _msg(mkey)
                self._wrong_counts.append(
                    redelivery_count.make_wrong_count(
                        sub.name, rec.key, inc.consumer, (prev[2], "receive", inc.consumer, msg),
                        None if request is None else (request[0], request[1], request[2], msg),
                        (i, "receive", inc.consumer, msg), prev[1], count, how,
                    )
                )  # fmt: skip
        rec.rc = [inc, count, i, None]

    def _revive(self, sub: SubState, mkey: str, pos: Position) -> Record:
        """The record of a settled message received again: acknowledged, with its first key and arming ack."""
        left = sub.settled.pop(mkey)
        rec = new_record(True, None, left.key, left.scope, pos, None, None)
        rec.rc = False
        rec.hold_i = left.hold_i
        rec.arm_i = left.arm_i
        rec.arm_inc = left.arm_inc
        rec.arm_epoch = left.arm_epoch
        sub.recs[mkey] = rec
        return rec

    def _unhold(self, sub: SubState, rec: Record, mkey: str, inc: Incarnation) -> None:
        holder = rec.holder
        if holder.__class__ is dict:
            del holder[inc]
            if len(holder) == 1:
                ((rec.holder, rec.hold_i),) = holder.items()
        else:
            rec.holder = None
        del inc.held[mkey]
        if rec.acked:
            return  # a receive of an acknowledged message holds no key (see the receive in _run)
        scope = rec.scope
        hold = sub.holding[scope]
        n_held = hold[inc]
        if n_held == 1:
            del hold[inc]
            if not hold:
                del sub.holding[scope]
        else:
            hold[inc] = n_held - 1

    def _release(self, sub: SubState, rec: Record, mkey: str, inc: Incarnation, mark: Mark, exempt: bool) -> None:
        self._unhold(sub, rec, mkey, inc)
        if exempt:  # a nack or redeliver by the holder: the broker raises the count before it sends m again
            rc = rec.rc
            if rc and rc[0] is inc and rc[3] is None:
                rc[3] = mark
        if exempt and not rec.exempt:  # exempt even if acknowledged: an ack that is not armed may not have counted
            self._exempt(sub, rec, mkey)
        if rec.acked:
            return  # an ack of it was logged: owed to nobody, never free
        if rec.holder is None:
            self._free(sub, rec, mkey, mark)

    def _release_all(self, inc: Incarnation, mark: Mark, exempt: bool) -> None:
        sub = inc.sub
        for mkey, rec in list(inc.held.items()):
            self._release(sub, rec, mkey, inc, mark, exempt)

    def _exempt(self, sub: SubState, rec: Record, mkey: str) -> None:
        rec.exempt = True
        self._push_exempt(sub, rec, mkey)
        if rec.armed(self._epoch):  # an armed ack ends it for now; it comes back if that ack is disarmed
            rec.arm_inc.suspended.append(mkey)

    def _push_exempt(self, sub: SubState, rec: Record, mkey: str) -> None:
        heap = sub.exempt_heaps.get(rec.scope)
        if heap is None:
            heap = sub.exempt_heaps[rec.scope] = []
        _push(heap, (rec.pos, mkey))

    def _revive_exemptions(self, inc: Incarnation) -> None:
        """``inc``'s acknowledgements were just disarmed: the exemptions its armed acks ended hold again."""
        sub = inc.sub
        for mkey in inc.suspended:
            rec = sub.recs.get(mkey)
            if rec is not None and rec.exempt and rec.arm_inc is inc:
                self._push_exempt(sub, rec, mkey)
        inc.suspended.clear()

    def _free(self, sub: SubState, rec: Record, mkey: str, mark: Mark) -> None:
        rec.free = mark
        if self._non_persistent:
            return  # released on a non-persistent topic: gone, never waiting for redelivery
        heap = sub.free_heaps.get(rec.scope)
        if heap is None:
            heap = sub.free_heaps[rec.scope] = []
        _push(heap, (rec.pos, mkey))

    # --- identity checks -------------------------------------------------------------------------------
    def _unstored_receipt(
        self,
        i: int,
        t: int,
        t0: int | None,
        result: str | None,
        mkey: str | None,
        producer: str,
        seq: int,
        key: str,
        n: int,
    ) -> None:
        """A publish that stored nothing the trace can see: a duplicate receipt (``ok``, ``-1:-1``) claims the
        (producer, seq) is stored (``lost_write`` if nothing shows it is, nor an id of the producer at or above the
        id its send was judged by stored before it: :func:`duplicates.dup_threshold`); an ``info`` or ``fail`` one
        may have stored it after all."""
        ps = (producer, seq)
        if result == "ok":
            if ps not in self.dup_receipts:
                self.dup_receipts[ps] = ((i, "publish", None, None if mkey is None else _msg(mkey)), key)
                need = duplicates.dup_threshold(seq, self._extras(n).get("send_seq"))
                if self.top_seq.get(producer, -1) >= need:
                    self.dup_excused.add(ps)  # at or below the highest stored id: Pulsar's answer (Dup)
                else:
                    self.unexcused.setdefault(producer, []).append((need, t, seq))
        else:
            self.maybe_stored.add(ps)
            self._may_store(producer, seq, t0)

    def judges_across_ids(self, all_receipts: bool = False) -> bool:
        """Whether this checker judged ``stored_below_highest`` over some stored receipt, or a receive under a
        broker's unacked-message limit (a partitioned engine then checks the trace again whole: the first rule
        compares ids its identity pass splits apart, the second counts a consumer's messages of every key).
        ``all_receipts``: the part was given every receipt of the trace (its own, and the others' as
        :data:`RECEIPT_COPY`), so the first rule was decided exactly."""
        return (
            (bool(self.stored_top) and not all_receipts)
            or self.dedup_epochs is not None  # epochs start at events that are not about one message
            or (self._unacked is not None and self._unacked.judging)
            or (self._lookahead is not None and self._lookahead.judging)
        )

    def _stored_id(
        self, i: int, key: str, mkey: str, stream: str, producer: str, seq: int, t0: int | None, ledger: int,
        entry: int, batch: int, n: int, cur: Any, judge: bool,
    ) -> None:  # fmt: skip
        """A receipt storing (producer, seq) as ``mkey`` (an entry's message ``batch``, -1 unbatched): the producer's
        highest ids move (``top_seq``, which excuses ``lost_write`` s; with deduplication on ``stored_top``, read by
        ``stored_below_highest`` and ``last_sequence_id_behind``), and with ``judge`` the receipt itself is judged
        for ``stored_below_highest`` first (``cur``: what stored (producer, seq) so far).  A part's copy of
        another part's receipt moves the ids without being judged (:meth:`_receipt_copy`)."""
        if seq > self.top_seq.get(producer, -1):  # it may be stored (as _may_store)
            self.top_seq[producer] = seq
        if self.unexcused:
            self._excuse(producer, seq, t0)
        if self._judge_below:
            sp = (stream, producer)
            top = self.stored_top.get(sp)
            sent = duplicates.send_ids(self._extras(n)) if batch == 0 else None
            if sent is not None:  # a batch sent with its ids (the raw protocol producer): judged by them
                self._stored_with_ids(i, key, mkey, sp, producer, seq, (ledger, entry), cur, top, sent, judge)
            elif top is None or seq > top[0]:  # the producer's next id: the highest now (duplicates.Top)
                if batch <= 0:
                    self.stored_top[sp] = (seq, i, mkey, (ledger, entry))
            elif judge and seq < top[0] and batch < 0:  # an unbatched send below the highest so far
                self._below_highest(i, key, mkey, producer, seq, (ledger, entry), cur, top, seq)

    def _receipt_copy(
        self, i: int, key: str, mkey: str | None, stream: str | None, producer: str | None, seq: int | None,
        result: str | None, t0: int | None, ledger: int, entry: int, batch: int, n: int,
    ) -> None:  # fmt: skip
        """A copy of a publish receipt another part judges (:data:`RECEIPT_COPY`: a partitioned engine gives every
        part the receipts of all keys on a trace with deduplication on).  Only what the rules comparing a
        producer's ids read moves: its highest ids (:meth:`_stored_id`, not judged) and, for a send whose outcome is
        unknown, the ids it may have stored (:meth:`_may_store`).  The message stays the other part's: no record,
        no evidence, no violation."""
        if producer is None or seq is None:
            return
        if result != "ok" or mkey is None or stream is None or ledger < 0 or entry < 0:
            if result != "ok":  # an info or fail receipt may have stored it; a duplicate receipt stores nothing
                self._may_store(producer, seq, t0)
            return
        self._stored_id(i, key, mkey, stream, producer, seq, t0, ledger, entry, batch, n, None, False)

    def _below_highest(
        self, i: int, key: str, mkey: str, producer: str, seq: int, position: tuple[int, int], cur: Any,
        top: duplicates.Top, judged: int,
    ) -> None:  # fmt: skip
        """A receipt storing (producer, seq) as ``mkey`` at ``position``, judged by id ``judged`` (its own for an
        unbatched send, the send's ``send_seq`` for a batch sent with its ids), against the producer's highest id
        stored so far as an entry's first message (``top``, from the receipts logged before): if nothing stored
        (producer, seq) under another id, ``stored_below_highest`` when that highest id is above ``judged`` and was
        stored earlier in the stream (:func:`duplicates.below_highest` decides).  :meth:`_publish` keeps ``top``
        (an entry's first message above it raises it)."""
        if not (cur is None or (cur.__class__ is tuple and cur[0] == mkey)):
            return
        higher = duplicates.below_highest(top, judged, position)
        if higher is not None:
            ref = (i, "publish", None, _msg(mkey))
            witness = duplicates.top_receipt(higher)
            self._emit(duplicates.make_stored_below(producer, seq, key, higher[0], witness, ref, send_seq=judged))

    def _stored_with_ids(
        self, i: int, key: str, mkey: str, sp: tuple[str, str], producer: str, seq: int, position: tuple[int, int],
        cur: Any, top: duplicates.Top | None, sent: tuple[int, int], judge: bool,
    ) -> None:  # fmt: skip
        """The receipt storing the first message of a batch whose publishes carry its send's ids (``send_seq``,
        ``highest_seq``: the raw protocol producer's): ``stored_below_highest`` judges the batch by ``send_seq``
        (the id the broker judged the send by), and the producer's highest id becomes ``max(send_seq,
        highest_seq)``, what the broker pushed (:func:`duplicates.send_ids`)."""
        if top is not None and judge:
            self._below_highest(i, key, mkey, producer, seq, position, cur, top, sent[0])
        value = max(sent)
        if top is None or value > top[0]:
            self.stored_top[sp] = (value, i, mkey, position)

    def _may_store(self, producer: str, seq: int, t0: int | None) -> None:
        """A send of (producer, seq) that may be stored.  It raises the producer's highest such id, and excuses each
        earlier first duplicate receipt of a lower id unless it was sent strictly after that receipt was logged
        (``t0`` later than the receipt's ``t``; without ``t0`` the send may have come first).  A stored receipt
        does the same inline (:meth:`_publish`)."""
        if seq > self.top_seq.get(producer, -1):
            self.top_seq[producer] = seq
        if self.unexcused:
            self._excuse(producer, seq, t0)

    def _excuse(self, producer: str, seq: int, t0: int | None) -> None:
        """The first duplicate receipts of ``producer`` a send of ``seq`` that may be stored excuses (see
        :meth:`_may_store`)."""
        waiting = self.unexcused.get(producer)
        if waiting:
            kept: list[tuple[int, int, int]] = []
            for need, d_t, d_seq in waiting:
                if seq >= need and (t0 is None or t0 <= d_t):
                    self.dup_excused.add((producer, d_seq))
                else:
                    kept.append((need, d_t, d_seq))
            if kept:
                self.unexcused[producer] = kept
            else:
                del self.unexcused[producer]

    def _identity(self, uid: str, mkey: str, ref: tuple[Any, ...], key: str) -> None:
        """A receive of ``mkey`` carrying ``uid``: evidence of a stored id, or (for now) an unexpected uid."""
        if self.failed_uids and uid in self.failed_uids and uid not in self.failed_received:
            self.failed_received[uid] = (ref, key)
        ps = self.uid_pub.get(uid, _MISSING)
        if self.dedup_epochs is not None and ps is not _MISSING:
            home = self.dedup_epochs.stored_as.get(mkey)  # a resend stored in a later epoch evidences that one
            if home is not None and ps is not None:
                ps = (home, ps[1])
        if ps is _MISSING:
            if uid not in self.pending_unexpected:
                self.pending_unexpected[uid] = (ref, key)
            self.pending_evidence.setdefault(uid, []).append((mkey, ref, key))
        elif ps is not None:
            cur = self.ids.get(ps)
            if cur is None or cur.__class__ is not tuple or cur[0] != mkey:
                self._evidence(ps, mkey, ref, key)

    def _resolve_uid(self, uid: str, ps: tuple[str, int] | None) -> None:
        self.pending_unexpected.pop(uid, None)
        pending = self.pending_evidence.pop(uid, None)
        if pending and ps is not None:
            for p_mkey, p_ref, p_key in pending:
                self._evidence(ps, p_mkey, p_ref, p_key)

    def _evidence(self, ps: tuple[str, int], mkey: str, ref: tuple[Any, ...], key: str) -> None:
        """Record that ``mkey`` stores ``ps``, as shown by event ``ref``.

        ``ids[ps]`` is a tuple while one id is known — ``(mkey, ref, key)``, or the compact ``(mkey, i, key)`` of
        a publish receipt — and a dict ``{mkey: (ref, key)}`` from the second on.
        """
        ids = self.ids
        cur = ids.get(ps)
        if cur is None:
            ids[ps] = (mkey, ref, key)
        elif cur.__class__ is tuple:
            first_ref = cur[1] if cur[1].__class__ is tuple else (cur[1], "publish", None, _msg(cur[0]))
            if cur[0] == mkey:
                if ref[0] < first_ref[0]:
                    ids[ps] = (mkey, ref, key)
            else:
                ids[ps] = {cur[0]: (first_ref, cur[2]), mkey: (ref, key)}
        else:
            have = cur.get(mkey)
            if have is None or ref[0] < have[0][0]:
                cur[mkey] = (ref, key)

    # --- violations found at a receive -----------------------------------------------------------------
    def _emit(self, violation: Violation) -> None:
        self.found.append(violation)
        self._new.append(violation)

    def _armed_receive(self, sub: SubState, rec: Record, inc: Incarnation, i: int, mkey: str) -> bool:
        """The first live receive after an armed ack, which that ack judges (:func:`redelivery.redelivered`) and
        no longer keeps armed: True when it is a ``redelivered_after_ack`` (the message is owed again)."""
        found = redelivery.redelivered(sub, rec, inc, i, mkey, self._epoch)
        rec.arm_i = -1
        if rec.exempt:  # no armed ack ends its exemption any more
            self._push_exempt(sub, rec, mkey)
        if found is None:
            return False
        self._emit(found)
        return True

    def _check_order(
        self, sub: SubState, rec: Record, inc: Incarnation, i: int, mkey: str, hold: dict[Incarnation, int] | None
    ) -> None:
        found = ordering.overtaken(sub, rec, inc, i, mkey, hold, self._epoch)
        if found is not None:
            if self._non_persistent and self._moved_by_join(found, sub, mkey):
                return
            self._emit(found)

    def _check_assignment(
        self, sub: SubState, rec: Record, inc: Incarnation, i: int, t: int, was_free: Any, mkey: str
    ) -> None:
        tl: Timeline = sub.timeline
        msg = _msg(mkey)
        lower: Lower = None
        lower_ref = None
        if was_free is not None:
            mark = free_mark(was_free)
            if mark[1] == "publish" and rec.t0 is not None:
                lower, lower_ref = ("time", min(rec.t0, t)), event_ref(mark, msg)
            elif mark[1] in _RELEASE_OPS:
                lower, lower_ref = ("index", mark[0]), event_ref(mark, msg)
        key = rec.key
        if tl.explains(i, lower, key, inc.id):
            return
        ref = (i, "receive", inc.consumer, msg)
        self.suspects.setdefault(sub.name, []).append(Suspect(ref, lower_ref, inc, key, lower))

    def _misassigned(self, sub_name: str, suspect: Suspect) -> Violation:
        tl: Timeline = self.subs[sub_name].timeline
        spec = self.header.selector
        what = f"{spec.kind} (Pulsar {spec.pulsar_version})" if spec is not None else "reference"
        expected = tl.expected(suspect.ref[0], suspect.lower, suspect.key)
        return make_misassigned(
            sub_name, suspect.key, suspect.inc.consumer, suspect.ref, suspect.lower_ref, expected, what
        )

    def _membership(self, sub: SubState, change: Change, inc: Incarnation) -> None:
        if self._fresh_selector is None:
            return
        tl = sub.timeline
        if tl is None:
            tl = sub.timeline = Timeline(self._fresh_selector, self._sticky)
        refusal = tl.apply(change)
        if refusal is not None and self.first_fault is None:
            # after a fault the old consumers may not have re-subscribed yet: Pulsar too could accept this open
            self._emit(make_refused_open(sub.name, inc.consumer, change.index, change.ranges, refusal.reason))
        pending = self.suspects.pop(sub.name, None)
        if not pending or tl.broken_at == change.index:
            return  # nothing waited for this change, or it is the one the timeline cannot follow
        for suspect in pending:
            if not tl.explains(suspect.ref[0], suspect.lower, suspect.key, suspect.inc.id):
                self._emit(self._misassigned(sub.name, suspect))

    # --- the end ---------------------------------------------------------------------------------------
    def finish(self) -> Verdict:
        """Decide what waits for the end of the trace and return the verdict."""
        found = self.found
        for sub_name, pending in self.suspects.items():
            tl = self.subs[sub_name].timeline
            for suspect in pending:
                if not tl.explains(suspect.ref[0], suspect.lower, suspect.key, suspect.inc.id):
                    found.append(self._misassigned(sub_name, suspect))
        self.suspects.clear()
        unjudged: list[Kind] = []
        if self._assign_unjudged:
            unjudged.append(Kind.MISASSIGNED)
        for name, tl in self.timelines.items():
            if tl.broken_at is not None:
                if tl.unjudgeable and Kind.MISASSIGNED not in unjudged:
                    unjudged.append(Kind.MISASSIGNED)
                self.notes.append(
                    f"misassigned not judged in subscription {name!r} from E{tl.broken_at} on: {tl.broken_reason}"
                )
        if self.first_fault is not None and self._fresh_selector is not None:
            self.notes.append(f"misassigned not judged after the fault at E{self.first_fault}")
        if self.drained and self.end_i is not None:
            for sub in self.subs.values():
                found.extend(loss.undelivered(sub, self.end_i, self._owed_here))
        else:
            unjudged.append(Kind.UNDELIVERED)
            self.notes.append("undelivered not judged: the run was not drained (no 'end' event with drained: true)")
        for uid, (ref, key) in self.pending_unexpected.items():
            found.append(make_unexpected(uid, key, ref))
        for uid, (ref, key) in self.failed_received.items():
            if uid in self.failed_uids:
                found.append(make_unexpected(uid, key, ref, failed_at=self.failed_uids[uid]))
        if self._wrong_counts and self.first_fault is None:
            found.extend(self._wrong_counts)
        elif self._wrong_counts:
            self.notes.append(
                f"wrong_redelivery_count not judged: the fault at E{self.first_fault} may have dropped the broker's"
                " redelivery counts"
            )
        self._wrong_counts = []
        if self._lookahead is not None:
            beyond = self._lookahead.verdict()
            if beyond is not None:
                found.append(lookahead.make_beyond_lookahead(self.default_sub, beyond))
        if self.dedup_epochs is not None:
            self._rehome_evidence()
            for life, schedule in enumerate(self.dedup_epochs.schedules):
                if schedule.broken:
                    found.append(duplicates.make_off_schedule(life, schedule.probes, schedule.period))
        found.extend(duplicates.duplicates(self.ids))
        found.extend(duplicates.lost_writes(self.dup_receipts, self.ids, self.maybe_stored, self.dup_excused))
        if self.key_mismatches:
            self.notes.append(key_mismatch_note(self.key_mismatches))
        if self.entry_order_breaks:
            self.notes.append(
                f"batch entries first seen through a later message of their batch, whose first message then named"
                f" another key: {self.entry_order_breaks}; their messages were judged under the earlier event's key,"
                " which need not be the one the broker routed them by"
            )
        return build_verdict(found, self.profile, events=self.events, notes=self.notes, unjudged=unjudged)

    def _rehome_evidence(self) -> None:
        """A receive logged before the receipt that stored its message in a later epoch went to its uid's first
        (producer, seq); move each such id to the identity whose receipt stored it."""
        stored_as = self.dedup_epochs.stored_as if self.dedup_epochs is not None else {}
        moved: list[tuple[tuple[str, int], str, tuple[Any, ...], str]] = []
        for ps, value in self.ids.items():
            if value.__class__ is dict:
                for mkey, (ref, key) in list(value.items()):
                    home = stored_as.get(mkey)
                    if home is not None and home != ps[0]:
                        del value[mkey]
                        moved.append(((home, ps[1]), mkey, ref, key))
                if len(value) == 1:
                    ((mkey, (ref, key)),) = value.items()
                    self.ids[ps] = (mkey, ref, key)
        for ps, mkey, ref, key in moved:
            self._evidence(ps, mkey, ref, key)


def key_mismatch_note(count: int) -> str:
    """The note for ``count`` receives whose key was not their message's first (the Spark engine sums them)."""
    return (
        f"{count} receive(s) carried a key other than their message's first one;"
        " each message is checked under its first key"
    )


def _msg(mkey: str) -> str:
    return mkey.rpartition("|")[2]


def _topic(mkey: str) -> str:
    return mkey.partition("|")[0]


def _extra_of(event: Event) -> dict[str, Any]:
    """The rare fields of an event (:data:`_RARE_FIELDS`), as :meth:`StreamingChecker._extras` returns them."""
    extra = event.extra
    return {
        "topic": event.topic,
        "subscription": event.subscription,
        "name": extra.get("name"),
        "policy": extra.get("policy"),
        "drained": event.drained,
        "consumers": extra.get("consumers"),
        "unattributed": extra.get("unattributed"),
        "deliver_after_ms": extra.get("deliver_after_ms"),
        "send_seq": extra.get("send_seq"),
        "highest_seq": extra.get("highest_seq"),
        "fault": extra.get("fault"),
        "expire_seconds": extra.get("expire_seconds"),
        "error": extra.get("error"),
        "receiver_queue": extra.get("receiver_queue"),
    }


def _columns_of(event: Event) -> list[list[Any]]:
    """One event as the columns :meth:`StreamingChecker._run` reads (a batch of one)."""
    return [[value] for value in _values_of(event)]


def _values_of(event: Event) -> tuple[Any, ...]:
    """The fields of ``event`` the loop reads, in the order of :data:`ROW_FIELDS` (but ``n``)."""
    mkey = stream = None
    ledger = entry = batch = -1
    if event.msg_id is not None and event.topic is not None:
        mkey, stream, msg = canonical_message(event.topic, event.msg_id)
        ledger, entry, batch = parse_position(msg)
    return (
        event.i, event.t, event.op.value, event.consumer, "" if event.key is None else event.key, mkey, stream,
        event.uid, event.producer, event.seq, None if event.result is None else event.result.value,
        event.extra.get("t0"), ledger, entry, batch, event.redelivery_count,
    )  # fmt: skip


def _end_counted_holds(sub: SubState, scope: str, mkey: str, holders: Iterable[Incarnation]) -> None:
    """End the holds of ``mkey`` by ``holders`` that count as holds of its key (``sub.holding[scope]``): an ack
    with several holders, or an expiry (the single-holder ack does the same inline, on the hot path)."""
    holding = sub.holding
    hold = holding[scope]
    for other in holders:
        n_held = hold[other]
        if n_held == 1:
            del hold[other]
        else:
            hold[other] = n_held - 1
        del other.held[mkey]
    if not hold:
        del holding[scope]


def _row(columns: list[list[Any]], n: int) -> EventRow:
    """Event ``n`` of a batch's columns as an :class:`EventRow` (for the rare ops and late events)."""
    return EventRow(
        columns[0][n], columns[1][n], columns[2][n], columns[3][n], columns[4][n], columns[5][n], columns[6][n],
        columns[7][n], columns[8][n], columns[9][n], columns[10][n], columns[11][n], columns[12][n], columns[13][n],
        columns[14][n], columns[15][n], n,
    )  # fmt: skip


assert EventRow._fields == ROW_FIELDS, "EventRow names the fields of ROW_FIELDS, in their order"
