"""The PIP-379 Key_Shared dispatcher (Pulsar 4.0+ default): draining hashes instead of "recently joined".

Follows ``PersistentStickyKeyDispatcherMultipleConsumers`` of Pulsar 4.0 (apache/pulsar#23352). For every entry
of a round, in position order (``filterAndGroupEntriesForDispatching``):

* its slot selects a consumer; no consumer (a STICKY gap), no permits left in this round (permits count
  *entries* here), or a blocked hash sends it to the replay queue, and then every later entry of the same
  slot in the round follows it there (``alreadyBlockedHashes``);
* **R1** (normal reads only): a slot with anything in the replay queue is blocked;
* **R2** (``drainingHashesRequired`` = AUTO_SPLIT without out-of-order delivery): a slot draining at another
  consumer is blocked (:class:`DrainingHashesTracker`);
* **R3** the replay filter chooses which replay positions to read: positions without a known hash pass; a slot
  without consumer, without permits or draining elsewhere is skipped, and since 4.0.3 (apache/pulsar#23874) so
  is every later position of a slot skipped earlier in the same pass;
* **R4** at send time ``addPendingAckIfAllowed`` refuses an entry whose slot drains at another consumer;
* **look-ahead**: normal reads stop while the replay queue holds ``effectiveLookAheadLimit`` entries and read at
  most ``limit - replay size``; a round that sent nothing while a consumer with permits was blocked by hash, or
  had no entry at all for some consumer with permits, skips the next replay read once to read ahead.

Consumer joins register draining hashes for the pending entries of the slots other consumers lost; a leaving
consumer's pending entries return to the replay queue *with* their slots (R1 keeps their order).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reference_model.keyshared.consumer import DispatchConsumer
from reference_model.keyshared.dispatcher import KeySharedDispatcher, ReadType
from reference_model.keyshared.draining import DrainingHashesTracker
from reference_model.keyshared.ranges import RangeSet
from reference_model.keyshared.replay_queue import ReplayQueue
from reference_model.keyshared.settings import effective_lookahead_limit
from reference_model.selectors import AssignmentSnapshot, ConsumerRef, ImpactedRanges, diff_ranges
from reference_model.storage.entry import Entry
from reference_model.storage.position import Position
from reference_model.versions import (
    DRAINING_REASSIGNMENT_FIX,
    LOOKAHEAD_ONLY_WITH_MORE_ENTRIES,
    OUT_OF_ORDER_REPLAY_FILTERED,
    PIP_379_REPLAY_FILTER_FIX,
)

__all__ = ["DRAINING_REASSIGNMENT_FIX", "Pip379Dispatcher"]  # the fix lives in ``versions``; re-exported here

#: "not in the slot -> consumer cache" (``None`` there means "no consumer")
_UNKNOWN: Any = object()


def _ignore(slot: int) -> None:
    """``blockStickyKeyHashIfOrderingRequired`` when out-of-order delivery is allowed: block nothing."""


class Pip379Dispatcher(KeySharedDispatcher):
    """Pulsar 4.0's ``PersistentStickyKeyDispatcherMultipleConsumers``."""

    implementation = "pip379"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.draining_required = not self.policy.is_sticky and not self.allow_out_of_order
        self.tracker: DrainingHashesTracker[DispatchConsumer] | None = (
            DrainingHashesTracker(self._hash_unblocked) if self.draining_required else None
        )
        #: ``getEffectiveLookAheadLimit`` for the current consumers (kept up to date by ``_membership_changed``)
        self._lookahead_value = effective_lookahead_limit(self.settings, len(self.consumers))
        self.replay_filter_fix = self.version.has(PIP_379_REPLAY_FILTER_FIX)
        self.reassignment_fix = self.version.has(DRAINING_REASSIGNMENT_FIX)
        #: apache/pulsar#26236 (ordered delivery) and #26268 (out-of-order too): look-ahead only with more entries
        self.lookahead_needs_more_entries = self.version.has(OUT_OF_ORDER_REPLAY_FILTERED) or (
            self.version.has(LOOKAHEAD_ONLY_WITH_MORE_ENTRIES) and not self.allow_out_of_order
        )
        #: apache/pulsar#26268: out-of-order replay records each position's hash (not counted: nothing blocks) and
        #: the replay filter skips positions whose consumer has no permits
        self.out_of_order_replay_filtered = self.allow_out_of_order and self.version.has(OUT_OF_ORDER_REPLAY_FILTERED)
        if self.out_of_order_replay_filtered:
            self.replay = ReplayQueue(track_hashes=True, count_hashes=False)
        self._assignments: AssignmentSnapshot | None = (
            self.selector.snapshot() if self.draining_required and self.reassignment_fix else None
        )

    # -- membership ----------------------------------------------------------------------------------------
    def _hash_unblocked(self, slot: int) -> None:
        self.schedule_read(self.settings.unblocking_interval_ms)

    def _after_add(self, consumer: DispatchConsumer, impacted: Any) -> None:
        if self.tracker is not None:
            gained = self._gained_ranges()
            if impacted is not None:
                self._register_draining(consumer, impacted)
            self._release_returned(consumer, gained)

    def _gained_ranges(self) -> dict[ConsumerRef, list[tuple[int, int]]]:
        """Ranges each consumer gained in the last membership change (``diffRanges`` "after" side)."""
        before = self._assignments
        if before is None:
            return {}
        after = self._assignments = self.selector.snapshot()
        gained: dict[ConsumerRef, list[tuple[int, int]]] = {}
        for hash_range, was, now in diff_ranges(before, after):
            if now is not None and now != was:
                gained.setdefault(now, []).append(hash_range)
        return gained

    def _release_returned(self, skip: DispatchConsumer, gained: dict[ConsumerRef, list[tuple[int, int]]]) -> None:
        """apache/pulsar#24736: a consumer that gets back a hash draining at itself drops its references."""
        tracker = self.tracker
        assert tracker is not None
        for ref, ranges in gained.items():
            consumer = self.consumers.get(ref.consumer_id)
            if consumer is None or consumer is skip or not len(consumer.pending):
                continue
            returned = RangeSet(ranges)
            for _position, _batch, slot in consumer.pending:
                if slot and slot in returned:
                    entry = tracker.get_entry(slot)
                    if entry is not None and entry.consumer is consumer:
                        tracker.reduce_ref_count(consumer, slot, closing=False)

    def _register_draining(self, skip: DispatchConsumer, impacted: ImpactedRanges) -> None:
        """``registerDrainingHashes``: pending entries of lost slots drain at the consumer that holds them."""
        tracker = self.tracker
        assert tracker is not None
        for ref, lost in impacted.items():
            consumer = self.consumers.get(ref.consumer_id)
            if consumer is None or consumer is skip or not lost or not len(consumer.pending):
                continue
            lost_slots = RangeSet(lost)
            for _position, _batch, slot in consumer.pending:
                if slot and slot in lost_slots:
                    tracker.add_entry(consumer, slot)

    def _release_pending(self, consumer: DispatchConsumer) -> None:
        """As the classic one (``removeConsumer`` makes no redelivery-tracker call in 4.x: a close or crash does not
        raise the count), plus the draining hashes' bookkeeping."""
        tracker = self.tracker
        if tracker is not None:
            tracker.start_batch()
        try:
            for position, _batch, slot in consumer.pending.drain(close=True):
                self._add_to_replay(position, slot or None)
                if tracker is not None:
                    tracker.reduce_ref_count(consumer, slot, closing=True)
        finally:
            if tracker is not None:
                tracker.end_batch()

    def _after_remove(self, consumer: DispatchConsumer, impacted: Any) -> None:
        if self.tracker is not None:
            gained = self._gained_ranges()
            if impacted is not None:
                self._register_draining(consumer, impacted)
            self._release_returned(consumer, gained)
            self.tracker.consumer_removed(consumer)

    def _after_last_removed(self, consumer: DispatchConsumer) -> None:
        if self.tracker is not None:
            self.tracker.clear()
        if self._assignments is not None:
            self._assignments = self.selector.snapshot()
        self.skip_next_replay = False

    def _pending_removed(self, consumer: DispatchConsumer, slot: int, *, closing: bool) -> None:
        tracker = self.tracker
        if tracker is not None and tracker._entries:  # nothing drains: nothing to release
            tracker.reduce_ref_count(consumer, slot, closing=closing)

    # -- permits and limits --------------------------------------------------------------------------------
    def available_permits(self, consumer: DispatchConsumer) -> int:
        """``getAvailablePermits``: 0 while closing; else permits, capped by the room left under max-unacked
        (estimated in entries with the consumer's average messages per entry).

        It is positive exactly when the consumer is active and writable (apache/pulsar#26630), has permits, and is
        under its max-unacked limit (if any): the hot paths (:meth:`_send_one`, :meth:`_normal_read_allowed`) test
        that directly.
        """
        permits = consumer.permits
        if permits <= 0 or not consumer.active or not consumer.writable:
            return 0
        max_unacked = consumer.max_unacked_messages
        if max_unacked > 0:
            room = max_unacked - consumer.pending.unacked_messages
            if room <= 0:
                return 0
            sent_messages = consumer.msg_out_counter
            if sent_messages == consumer.entries_out_counter:
                return permits if permits < room else room  # one message per entry so far: the average is 1
            avg = max(consumer.avg_messages_per_entry, 1)
            return min(permits, (room + avg - 1) // avg)
        return permits

    def lookahead_limit(self) -> int:
        """``getEffectiveLookAheadLimit`` for the current number of consumers."""
        return self._lookahead_value

    def _membership_changed(self) -> None:
        super()._membership_changed()
        self._lookahead_value = effective_lookahead_limit(self.settings, len(self.consumers))

    def _max_entries_read_limit(self) -> int:
        room = self._lookahead_value - len(self.replay.positions)
        return room if room > 1 else 1

    def _normal_read_allowed(self) -> bool:
        """``isNormalReadAllowed``: replay queue under the look-ahead limit and a consumer with permits."""
        if len(self.replay.positions) >= self._lookahead_value:
            return False
        for c in self.consumers.values():
            # ``available_permits(c) > 0``, without computing how many
            if (
                not c.blocked_on_unacked
                and c.permits > 0
                and c.active
                and c.writable
                and (c.max_unacked_messages <= 0 or c.pending.unacked_messages < c.max_unacked_messages)
            ):
                return True
        return False

    # -- replay filter (R3) --------------------------------------------------------------------------------
    def _replay_candidates(self, max_positions: int) -> list[Position]:
        if self.skip_next_replay:
            self.skip_next_replay = False
            return []
        if not self.replay.positions:
            return []
        if self.allow_out_of_order:
            if not self.out_of_order_replay_filtered:
                return self.replay.select(max_positions)
            accept, _ = self._make_replay_filter(block_for_ordering=False)
            return self.replay.select(max_positions, accept, None)
        accept, blocked = self._make_replay_filter()
        # with the fix, a blocked hash is rejected at once and nothing else happens (unless a test interleaves)
        rejected = blocked if self.replay_filter_fix and self._filter_interleave is None else None
        return self.replay.select(max_positions, accept, rejected)

    def _make_replay_filter(
        self, *, block_for_ordering: bool = True
    ) -> tuple[Callable[[Position, int | None], bool], set[int]]:
        """A stateful ``ReplayPositionFilter`` for one pass, and the set of hashes it blocks as it goes.

        ``block_for_ordering=False`` (out-of-order delivery from apache/pulsar#26268): a rejected position blocks
        nothing later in the pass (``blockStickyKeyHashIfOrderingRequired``); only "no consumer" and "no permits"
        reject (an out-of-order dispatcher has no draining hashes).
        """
        permits: dict[DispatchConsumer, int] = {}
        blocked: set[int] = set()
        # out of order, the set stays empty: nothing is blocked for ordering
        block = blocked.add if block_for_ordering else _ignore
        fix = self.replay_filter_fix
        tracker = self.tracker

        def accept(position: Position, slot: int | None) -> bool:
            try:
                if slot is None:
                    return True  # no hash known: filtered at dispatch time
                if fix and slot in blocked:
                    return False
                consumer = self.select(slot)
                if consumer is None:
                    block(slot)
                    return False
                left = permits.get(consumer)
                if left is None:
                    left = permits[consumer] = self.available_permits(consumer)
                if left <= 0:
                    block(slot)
                    return False
                if tracker is not None and tracker.should_block(consumer, slot):
                    block(slot)
                    return False
                permits[consumer] = left - 1
                return True
            finally:
                if self._filter_interleave is not None:
                    self._filter_step_done(position)

        return accept, blocked

    # -- dispatch ------------------------------------------------------------------------------------------
    def _send_one(self, read_type: ReadType, entry: Entry) -> int:
        """:meth:`_send_entries` for a round of one entry, the round every publish on the client surface causes.

        The same rules in the same order, without the per-round tables (for one entry: the consumer's permits
        are its available permits, nothing is blocked earlier in the round, only this consumer is targeted).
        """
        replay = self.replay
        normal = read_type is ReadType.NORMAL
        lookahead_allowed = len(replay.positions) < self._lookahead_value
        slot = self._slots.get(entry.sticky_key)
        if slot is None:
            slot = self.slot_of(entry)
        consumer = self._slot_consumers.get(slot, _UNKNOWN)
        if consumer is _UNKNOWN:
            consumer = self.select(slot)
        hash_blocked = False
        if (
            consumer is not None  # and ``available_permits(consumer) > 0``, without computing how many:
            and consumer.permits > 0
            and consumer.active
            and consumer.writable
            and (
                consumer.max_unacked_messages <= 0 or consumer.pending.unacked_messages < consumer.max_unacked_messages
            )
        ):
            tracker = self.tracker
            if (normal and slot in replay.slot_counts) or (
                tracker is not None and slot in tracker._entries and tracker.should_block(consumer, slot)
            ):
                hash_blocked = lookahead_allowed and normal
            else:
                if not normal:
                    replay.remove(entry.position)
                return 1 if self._send(consumer, entry, slot) else 0
        self._add_to_replay(entry.position, slot)
        if lookahead_allowed:
            # a consumer with permits was blocked by hash, or one with permits had nothing in this round
            trigger = hash_blocked or any(
                c is not consumer and self.available_permits(c) > 0 for c in self.consumers.values()
            )
            if trigger and self._lookahead_may_engage():
                if not self.skip_next_replay:
                    self._lookahead_triggered = True
                self.skip_next_replay = True
        return 0

    def _send_entries(self, read_type: ReadType, entries: list[Entry]) -> int:
        """``trySendMessagesToConsumers`` with ``filterAndGroupEntriesForDispatching``."""
        if len(entries) == 1:
            return self._send_one(read_type, entries[0])
        replay = self.replay
        tracker = self.tracker
        # the tracker's table, read directly on this hot path: ``should_block`` only matters for a draining slot
        draining = tracker._entries if tracker is not None else None
        normal = read_type is ReadType.NORMAL
        lookahead_allowed = len(replay.positions) < self._lookahead_value
        permits: dict[DispatchConsumer, int] = {}
        grouped: dict[DispatchConsumer, list[tuple[Entry, int]]] = {}
        blocked_slots: set[int] = set()
        blocked_by_hash: list[DispatchConsumer] = []
        targeted: set[DispatchConsumer] = set()
        select = self.select
        slot_cache = self._slots
        in_replay = replay.contains_slot
        for entry in entries:
            slot = slot_cache.get(entry.sticky_key)
            if slot is None:
                slot = self.slot_of(entry)
            consumer: DispatchConsumer | None = None
            dispatch = False
            hash_blocked = False
            if slot not in blocked_slots:
                consumer = select(slot)
                if consumer is not None:
                    if lookahead_allowed:
                        targeted.add(consumer)
                    left = permits.get(consumer)
                    if left is None:
                        left = permits[consumer] = self.available_permits(consumer)
                    if left > 0:
                        if (normal and in_replay(slot)) or (
                            draining and slot in draining and tracker.should_block(consumer, slot)  # type: ignore[union-attr]
                        ):
                            hash_blocked = lookahead_allowed and normal
                        else:
                            permits[consumer] = left - 1
                            dispatch = True
            if dispatch:
                assert consumer is not None
                group = grouped.get(consumer)
                if group is None:
                    group = grouped[consumer] = []
                group.append((entry, slot))
            else:
                blocked_slots.add(slot)
                if hash_blocked:
                    assert consumer is not None
                    blocked_by_hash.append(consumer)
                self._add_to_replay(entry.position, slot)

        trigger = False
        if lookahead_allowed and not grouped:
            if normal:
                trigger = any(permits.get(c, 0) > 0 for c in blocked_by_hash)
            if not trigger:
                trigger = any(c not in targeted and self.available_permits(c) > 0 for c in self.consumers.values())

        sent = 0
        for consumer, items in grouped.items():
            for entry, slot in items:
                if not normal:
                    replay.remove(entry.position)
                if self._send(consumer, entry, slot):
                    sent += 1
        if trigger and self._lookahead_may_engage():
            if not self.skip_next_replay:
                self._lookahead_triggered = True
            self.skip_next_replay = True
        return sent

    def _lookahead_may_engage(self) -> bool:
        """Whether a triggered look-ahead may skip the next replay (``skipNextReplayToTriggerLookAhead``).

        From apache/pulsar#26236 (ordered delivery) and #26268 (out-of-order delivery as well) only while the cursor
        has more entries (``cursor.hasMoreEntries()``): at the end of the topic the skipped replay left deliverable
        messages in the replay queue behind a read that waits for new entries. Before, always.
        """
        if not self.lookahead_needs_more_entries:
            return True
        last = self.log._last
        return last is not None and self.cursor.read_position <= last

    def _add_pending_if_allowed(self, consumer: DispatchConsumer, entry: Entry, slot: int) -> bool:
        """R4 (``handleAddingPendingAck``): refuse a slot that drains at another consumer."""
        tracker = self.tracker
        if tracker is not None and tracker._entries:
            draining = tracker.get_entry(slot)
            if draining is not None and draining.consumer is not consumer:
                return False
        return consumer.pending.add_if_allowed(entry.position, entry.batch_size, slot)

    # -- stats ---------------------------------------------------------------------------------------------
    def consumer_stats(self, consumer: DispatchConsumer) -> dict[str, Any]:
        if self.tracker is not None:
            return self.tracker.consumer_stats(consumer)
        return {
            "drainingHashesCount": 0,
            "drainingHashesClearedTotal": 0,
            "drainingHashesUnackedMessages": 0,
            "drainingHashes": [],
        }

    def subscription_stats(self) -> dict[str, Any]:
        count = cleared = unacked = 0
        for consumer in self.consumers.values():
            stats = self.consumer_stats(consumer)
            count += stats["drainingHashesCount"]
            cleared += stats["drainingHashesClearedTotal"]
            unacked += stats["drainingHashesUnackedMessages"]
        return {
            "drainingHashesCount": count,
            "drainingHashesClearedTotal": cleared,
            "drainingHashesUnackedMessages": unacked,
        }
