"""The classic Key_Shared dispatcher: Pulsar 3.x, and 4.x with
``subscriptionKeySharedUseClassicPersistentImplementation``.

Follows ``PersistentStickyKeyDispatcherMultipleConsumersClassic`` (= the 3.x dispatcher before PIP-282):

* **Recently joined consumers** (``recentlyJoinedConsumers``, whenever out-of-order delivery is not allowed,
  STICKY included: apache/pulsar#23271). A consumer joining a subscription with more than one consumer and
  with entries in flight (``getNumberOfEntriesSinceFirstNotAckedMessage() > 1``) records the cursor's read
  position ``P`` (``readPositionWhenJoining`` in its stats) and may only receive entries *below* ``P`` until the
  mark-delete position reaches ``P``. For replay reads ``P`` is lowered to the oldest recorded position (#8292).
  Entries are dropped from the map in order while ``P <= nextValid(markDelete)``, stopping at the first that is
  not, so an out-of-order map stalls the subscription for good. Three gates (:func:`record_joiner`): before
  apache/pulsar#23802 (3.0.9 / 3.3.4 / 4.0.2) a consumer joining while a cursor rewind waits for an in-flight read
  records the read position from before the rewind, and a consumer joining after the rewind a lower one; before
  apache/pulsar#23795 (same releases) the map is never re-sorted; from #23795 until apache/pulsar#24634
  (3.0.14 / 3.3.9 / 4.0.7 / 4.1.1) the re-sort check compares the wrong pair of entries.
* **The read a removal triggers is in flight.** When a consumer leaves and others remain, its pending entries go
  to the replay queue and Pulsar issues an asynchronous replay read for them; consumers closed at the same moment
  find it in flight, and if they are the last, the next consumer's cursor rewind waits for it
  (``shouldRewindBeforeReadingOrReplaying``). The model completes that read after
  :data:`REMOVAL_REPLAY_READ_MS` of simulated time (synchronously without a clock), so clients closing every
  consumer in one instant get the interleaving of #23802 the way Pulsar's clients do.
* **Coarse blocking**: in a normal read, if *any* slot of the entries grouped for a consumer has something in the
  replay queue, *none* of them are sent to it (PIP-379 blocks per slot).
* Permits are compared with the number of *entries* for a consumer, capped by ``maxUnacked - unacked``.
* The replay filter (``filterOutEntriesWillBeDiscarded``) takes the first positions of the replay queue and keeps,
  per consumer, what its permits and the recently-joined rule allow; a normal read needs a consumer that is not
  blocked, not recently joined and has permits (``hasConsumersNeededNormalRead``). Both came with
  apache/pulsar#22245 (3.0.5, 3.3.0); before, every replay position was read and a normal read always allowed.
* An entry whose hash no consumer owns waits in the replay queue; before apache/pulsar#14014 (2.8.3 / 2.9.3) a
  normal read dropped it (never redelivered until the topic was reloaded).
* Look-ahead: when a round sent nothing and nobody joined recently, the next replay is skipped once
  (``isDispatcherStuckOnReplays``); there is no look-ahead limit, so the replay queue can grow without bound.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Sequence
from typing import Any, TypeVar

from reference_model.keyshared.consumer import DispatchConsumer
from reference_model.keyshared.dispatcher import KeySharedDispatcher, ReadType
from reference_model.storage.entry import Entry
from reference_model.storage.position import Position, format_position
from reference_model.versions import (
    CLASSIC_RECENTLY_JOINED_SORTED,
    CLASSIC_REPLAY_FILTER,
    CLASSIC_SKIP_JOINERS_WHILE_REWIND_PENDING,
    CLASSIC_SORT_CHECKS_LAST_TWO,
    CLASSIC_UNSELECTED_TO_REPLAY,
    REWIND_BEFORE_REPLAY_READ,
    PulsarVersion,
)

__all__ = ["REMOVAL_REPLAY_READ_MS", "ClassicDispatcher", "record_joiner"]

#: Simulated time a replay read issued by a consumer removal stays in flight.
REMOVAL_REPLAY_READ_MS = 1

K = TypeVar("K", bound=Hashable)


def record_joiner(joined: dict[K, Position], consumer: K, position: Position, version: PulsarVersion) -> bool:
    """Record ``consumer`` as recently joined at ``position`` and re-sort as ``version`` does; return whether
    it sorted (``recentlyJoinedConsumers.put`` + ``sortRecentlyJoinedConsumersIfNeeded``).

    Before #23795 nothing is sorted. With #23795 the map is sorted by position (stably) when the check finds the
    last entries out of order; as first shipped the check's loop dropped the previous entry on its second step,
    so it compares the right pair only from four entries on (never with two; with three, the third against the
    second the wrong way round), fixed by #24634.
    """
    joined[consumer] = position
    if not version.has(CLASSIC_RECENTLY_JOINED_SORTED) or len(joined) == 1:
        return False
    earlier: Position | None = None
    later: Position | None = None
    if version.has(CLASSIC_SORT_CHECKS_LAST_TWO):
        for value in joined.values():
            if earlier is None:
                earlier = value
            elif later is None:
                later = value
            else:
                earlier, later = later, value
    else:
        for value in joined.values():
            if earlier is None:
                earlier = value
            else:
                earlier, later = later, value
    if earlier is None or later is None or not earlier > later:
        return False
    ordered = sorted(joined.items(), key=lambda item: item[1])
    joined.clear()
    joined.update(ordered)
    return True


class ClassicDispatcher(KeySharedDispatcher):
    """Pulsar's classic (3.x) ``PersistentStickyKeyDispatcherMultipleConsumers``."""

    implementation = "classic"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.recently_joined: dict[DispatchConsumer, Position] | None = None if self.allow_out_of_order else {}
        self.skip_joiners_while_rewinding = self.version.has(CLASSIC_SKIP_JOINERS_WHILE_REWIND_PENDING)
        self.replay_filter = self.version.has(CLASSIC_REPLAY_FILTER)
        #: how many times joining re-sorted the recently joined map (Pulsar logs an error each time)
        self.recently_joined_sorts = 0
        #: positions of the replay read a removal issued, while it is in flight
        self._in_flight_replay: list[Position] = []
        self.unselected_to_replay = self.version.has(CLASSIC_UNSELECTED_TO_REPLAY)
        self._rewind_before_replay = REWIND_BEFORE_REPLAY_READ.reference in self.proposed_fixes

    # -- membership ----------------------------------------------------------------------------------------
    def _after_add(self, consumer: DispatchConsumer, impacted: Any) -> None:
        read_position = self.cursor.read_position
        consumer.read_position_when_joining = read_position
        joined = self.recently_joined
        if (
            joined is not None
            and len(self.consumers) > 1
            and self.cursor.entries_since_first_not_acked() > 1
            and not (self.skip_joiners_while_rewinding and self.should_rewind)
            and record_joiner(joined, consumer, read_position, self.version)
        ):
            self.recently_joined_sorts += 1

    def _after_remove(self, consumer: DispatchConsumer, impacted: Any) -> None:
        joined = self.recently_joined
        if joined is not None:
            joined.pop(consumer, None)
            if len(self.consumers) == 1:
                joined.clear()
            self._remove_from_recently_joined()

    def _read_after_removal(self) -> None:
        """Issue the replay read for the leaving consumer's entries as an in-flight read (see the module doc)."""
        if self._schedule is None or self._pending_read is not None or self._in_read or not self.replay:
            self.read_more_entries()
            return
        to_read = min(self.available_permits_total(), self.settings.max_read_batch_size, self._max_entries_read_limit())
        positions = self._replay_candidates(to_read) if to_read > 0 else []
        if not positions:
            self.read_more_entries()
            return
        self._in_flight_replay = positions
        self._pending_read = (ReadType.REPLAY, None)
        pending = self._pending_read

        def complete() -> None:
            if self._pending_read is pending:
                self.complete_pending_read()

        self._schedule(REMOVAL_REPLAY_READ_MS, complete)

    def _complete_replay_read(self) -> None:
        """``readEntriesComplete`` of the in-flight replay read: with no consumer the entries are dropped and the
        cursor rewound (``trySendMessagesToConsumers``); else they are dispatched, then reading goes on."""
        positions, self._in_flight_replay = self._in_flight_replay, []
        if not self.consumers:
            self.cursor.rewind()
            return
        if self.should_rewind and self._rewind_before_replay:
            # apache/pulsar#10662's proposed fix (no release): the replay read's entries are dropped like a normal
            # read's, and the deferred rewind happens now; Pulsar dispatches them (#23803)
            self.cursor.rewind()
            self.should_rewind = False
            self.read_more_entries()
            return
        if self._replay_read_overtaken(positions):  # apache/pulsar#12890: older replay entries go first
            self.read_more_entries()
            return
        entries = [self.log.get(p) for p in positions if not self.cursor.is_deleted(p)]
        if entries:
            self.entries_replayed += len(entries)
            self._in_read = True
            try:
                self._send_entries(ReadType.REPLAY, entries)
            finally:
                self._in_read = False
        self.read_more_entries()

    def _after_last_removed(self, consumer: DispatchConsumer) -> None:
        if self.recently_joined is not None:
            self.recently_joined.clear()
        self.skip_next_replay = False

    def _remove_from_recently_joined(self) -> bool:
        """Drop joiners, in map order, whose position the mark-delete position has reached; stop at the first
        that it has not (``removeConsumersFromRecentJoinedConsumers``)."""
        joined = self.recently_joined
        if not joined:
            return False
        next_valid = self.log.next_valid_position(self.cursor.mark_delete_position)
        removed = False
        for consumer, position in list(joined.items()):
            if position <= next_valid:
                del joined[consumer]
                removed = True
            else:
                break
        return removed

    def after_acknowledgements(self, mark_delete_moved: bool) -> None:
        if mark_delete_moved and self.recently_joined and self._remove_from_recently_joined():
            self.read_more_entries()
        super().after_acknowledgements(mark_delete_moved)

    # -- permits -------------------------------------------------------------------------------------------
    def available_permits(self, consumer: DispatchConsumer) -> int:
        """``getAvailablePermits`` (classic): permits capped by ``maxUnacked - unacked``."""
        permits = consumer.permits
        if permits <= 0:
            return 0
        max_unacked = consumer.max_unacked_messages
        if max_unacked > 0:
            room = max_unacked - consumer.pending.unacked_messages
            if room < permits:
                return room if room > 0 else 0
        return permits

    def _restricted_max_entries(
        self,
        consumer: DispatchConsumer,
        positions: Sequence[Position],
        permits: int,
        read_type: ReadType,
        slots: Collection[int] | None,
    ) -> int:
        """``getRestrictedMaxEntriesForConsumer``: how many of ``positions`` (in order) may go to ``consumer``."""
        max_messages = len(positions)
        if permits < max_messages:
            max_messages = permits
        if max_messages <= 0:
            return 0
        if read_type is ReadType.NORMAL and slots:
            queued_slots = self.replay.slot_counts
            for slot in slots:
                if slot in queued_slots:
                    return 0
        joined = self.recently_joined
        if joined is None:
            return max_messages
        self._remove_from_recently_joined()
        limit = joined.get(consumer)
        if limit is None:
            return max_messages
        if read_type is ReadType.REPLAY:
            oldest = next(iter(joined.values()))
            if oldest < limit:
                limit = oldest
        for i in range(max_messages):
            if positions[i] >= limit:
                return i
        return max_messages

    # -- reading -------------------------------------------------------------------------------------------
    def _replay_candidates(self, max_positions: int) -> list[Position]:
        if self.skip_next_replay:
            self.skip_next_replay = False
            return []
        if not self.replay:
            return []
        head = self.replay.select(max_positions)
        if self.allow_out_of_order or not self.replay_filter:
            return head
        return self._filter_replay(head)

    def _filter_replay(self, positions: list[Position]) -> list[Position]:
        """``filterOutEntriesWillBeDiscarded``: per consumer, what permits and the joining rule allow."""
        kept: list[Position] = []
        grouped: dict[DispatchConsumer, list[Position]] = {}
        for position in positions:
            slot = self.replay.slot_of(position)
            if slot is None:
                kept.append(position)
                continue
            consumer = self.select(slot)
            if consumer is None:
                continue
            grouped.setdefault(consumer, []).append(position)
        for consumer, group in grouped.items():
            permits = self.available_permits(consumer)
            if permits == 0:
                continue
            n = self._restricted_max_entries(consumer, group, permits, ReadType.REPLAY, None)
            kept.extend(group[:n])
        kept.sort()
        return kept

    def _normal_read_allowed(self) -> bool:
        """``hasConsumersNeededNormalRead`` (#22245): a consumer that is not blocked on unacked messages, not
        recently joined and has permits. Recent joiners cannot take anything a normal read brings (it all lies at
        or above their join position), so without such a consumer the read would only be discarded. Before
        #22245 a normal read is always allowed."""
        joined = self.recently_joined
        if joined is None or not self.replay_filter:
            return True
        return any(not c.blocked_on_unacked and c not in joined and c.permits > 0 for c in self.consumers.values())

    def _replay_read_overtaken(self, positions: Sequence[Position]) -> bool:
        """Whether a replay read of ``positions`` that completes now must be dropped and reading start again:
        something older than every position it read was queued for replay while it was in flight (a consumer
        closed), and from apache/pulsar#12890 (2.8.3 / 2.9.1) the older messages go first
        (``minReplayedPosition``). Before the fix the read's entries were dispatched: a consumer that just lost its
        restriction (the last other consumer left) got them ahead of the closed consumer's (apache/pulsar#12885).
        The entries stay in the replay queue either way (only sent positions leave it)."""
        if not positions or self.allow_out_of_order or not self.replay_precedence:
            return False
        first = self.replay.first()
        return first is not None and first < min(positions)

    # -- dispatch ------------------------------------------------------------------------------------------
    def _unselected(self, read_type: ReadType, position: Position, slot: int) -> None:
        """An entry whose hash no consumer owns (a STICKY range nobody holds) waits in the replay queue.

        Before apache/pulsar#14014 (2.8.3 / 2.9.3) a normal read released it and moved on: the entry stayed
        unacknowledged, was never read again and the subscription looked stuck until the topic was reloaded. A
        replay read left it in the replay queue (only sent positions were removed), as now.
        """
        if read_type is ReadType.NORMAL and not self.unselected_to_replay:
            return
        self._add_to_replay(position, slot)

    def _send_one(self, read_type: ReadType, entry: Entry) -> int:
        """:meth:`_send_entries` for a round of one entry (every publish on the client surface), without tables."""
        slot = self._slots.get(entry.sticky_key)
        if slot is None:
            slot = self.slot_of(entry)
        consumer = self.select(slot)
        sent = 0
        if consumer is None:
            self._unselected(read_type, entry.position, slot)
        else:
            position = entry.position
            permits = self.available_permits(consumer)
            if self._restricted_max_entries(consumer, (position,), permits, read_type, (slot,)) == 0:
                self._add_to_replay(position, slot)
            else:
                if read_type is ReadType.REPLAY:
                    self.replay.remove(position)
                if self._send(consumer, entry, slot):
                    sent = 1
        if (sent == 0 or entry.batch_size == 0) and not self.recently_joined:
            if not self.skip_next_replay:
                self._lookahead_triggered = True
            self.skip_next_replay = True
        return sent

    def _send_entries(self, read_type: ReadType, entries: list[Entry]) -> int:
        grouped: dict[DispatchConsumer, list[tuple[Entry, int]]] = {}
        slots_by_consumer: dict[DispatchConsumer, set[int]] = {}
        slot_of = self.slot_of
        for entry in entries:
            slot = slot_of(entry)
            consumer = self.select(slot)
            if consumer is None:
                self._unselected(read_type, entry.position, slot)
                continue
            grouped.setdefault(consumer, []).append((entry, slot))
            slots_by_consumer.setdefault(consumer, set()).add(slot)
        sent_messages = 0
        sent_entries = 0
        for consumer, items in grouped.items():
            n = self._restricted_max_entries(
                consumer,
                [e.position for e, _ in items],
                self.available_permits(consumer),
                read_type,
                slots_by_consumer[consumer],
            )
            for entry, slot in items[n:]:
                self._add_to_replay(entry.position, slot)
            for entry, slot in items[:n]:
                if read_type is ReadType.REPLAY:
                    self.replay.remove(entry.position)
                if self._send(consumer, entry, slot):
                    sent_messages += entry.batch_size
                    sent_entries += 1
        if sent_messages == 0 and not self.recently_joined:
            if not self.skip_next_replay:
                self._lookahead_triggered = True
            self.skip_next_replay = True
        return sent_entries

    # -- stats ---------------------------------------------------------------------------------------------
    def consumer_stats(self, consumer: DispatchConsumer) -> dict[str, Any]:
        position = consumer.read_position_when_joining
        return {"readPositionWhenJoining": format_position(position) if position is not None else None}

    def subscription_stats(self) -> dict[str, Any]:
        joined = self.recently_joined or {}
        return {"consumersAfterMarkDeletePosition": {c.name: format_position(p) for c, p in joined.items()}}
