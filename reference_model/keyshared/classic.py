"""The classic Key_Shared dispatcher: Pulsar 3.x, and 4.x with
``subscriptionKeySharedUseClassicPersistentImplementation``.

Follows ``PersistentStickyKeyDispatcherMultipleConsumersClassic`` (= the 3.x dispatcher before PIP-282):

* **Recently joined consumers** (``recentlyJoinedConsumers``, whenever out-of-order delivery is not allowed,
  STICKY included: apache/pulsar#23271). A consumer joining a subscription with more than one consumer and
  with entries in flight (``getNumberOfEntriesSinceFirstNotAckedMessage() > 1``) records the cursor's read
  position ``P`` (``readPositionWhenJoining`` in its stats) and may only receive entries *below* ``P`` until the
  mark-delete position reaches ``P``. For replay reads ``P`` is lowered to the oldest recorded position (#8292).
  Entries are dropped from the map in order while ``P <= nextValid(markDelete)``, stopping at the first that is
  not; before apache/pulsar#23795 (3.0.9 / 3.3.4 / 4.0.2, with apache/pulsar#23802 in the same releases) the map
  was neither kept sorted nor protected from a rewind pending at join time, and an out-of-order map could stall
  the subscription for good.
* **Coarse blocking**: in a normal read, if *any* slot of the entries grouped for a consumer has something in the
  replay queue, *none* of them are sent to it (PIP-379 blocks per slot).
* Permits are compared with the number of *entries* for a consumer, capped by ``maxUnacked - unacked``.
* The replay filter (``filterOutEntriesWillBeDiscarded``) takes the first positions of the replay queue and keeps,
  per consumer, what its permits and the recently-joined rule allow.
* An entry whose hash no consumer owns waits in the replay queue; before apache/pulsar#14014 (2.8.3 / 2.9.3) a
  normal read dropped it (never redelivered until the topic was reloaded).
* Look-ahead: when a round sent nothing and nobody joined recently, the next replay is skipped once
  (``isDispatcherStuckOnReplays``); there is no look-ahead limit, so the replay queue can grow without bound.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from reference_model.keyshared.consumer import DispatchConsumer
from reference_model.keyshared.dispatcher import KeySharedDispatcher, ReadType
from reference_model.storage.entry import Entry
from reference_model.storage.position import Position, format_position
from reference_model.versions import CLASSIC_RECENTLY_JOINED_SORTED, CLASSIC_UNSELECTED_TO_REPLAY

__all__ = ["ClassicDispatcher"]


class ClassicDispatcher(KeySharedDispatcher):
    """Pulsar's classic (3.x) ``PersistentStickyKeyDispatcherMultipleConsumers``."""

    implementation = "classic"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.recently_joined: dict[DispatchConsumer, Position] | None = None if self.allow_out_of_order else {}
        self.sort_recently_joined = self.version.has(CLASSIC_RECENTLY_JOINED_SORTED)
        self.unselected_to_replay = self.version.has(CLASSIC_UNSELECTED_TO_REPLAY)

    # -- membership ----------------------------------------------------------------------------------------
    def _after_add(self, consumer: DispatchConsumer, impacted: Any) -> None:
        read_position = self.cursor.read_position
        consumer.read_position_when_joining = read_position
        joined = self.recently_joined
        if (
            joined is not None
            and len(self.consumers) > 1
            and self.cursor.entries_since_first_not_acked() > 1
            and not (self.sort_recently_joined and self.should_rewind)
        ):
            joined[consumer] = read_position
            if self.sort_recently_joined:
                self._sort_recently_joined()

    def _sort_recently_joined(self) -> None:
        """``sortRecentlyJoinedConsumersIfNeeded``: re-sort if the last two positions are out of order."""
        joined = self.recently_joined
        if joined is None or len(joined) < 2:
            return
        values = list(joined.values())
        if values[-2] > values[-1]:
            ordered = sorted(joined.items(), key=lambda item: item[1])
            joined.clear()
            joined.update(ordered)

    def _after_remove(self, consumer: DispatchConsumer, impacted: Any) -> None:
        joined = self.recently_joined
        if joined is not None:
            joined.pop(consumer, None)
            if len(self.consumers) == 1:
                joined.clear()
            self._remove_from_recently_joined()

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
        if self.allow_out_of_order:
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
        """A normal read needs a consumer that is not a recent joiner and has permits
        (``hasConsumersNeededNormalRead``, apache/pulsar#7105), unless nothing waits for replay."""
        if not self.replay.positions or self.recently_joined is None:
            return True
        joined = self.recently_joined
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
