"""What both Key_Shared dispatchers share: membership, permits, the replay queue, and the read loop.

Follows ``PersistentDispatcherMultipleConsumers`` (the base of both of Pulsar's Key_Shared dispatchers):

* ``read_more_entries`` is one *read round* after another: a **replay** read when the replay queue yields
  positions the dispatcher may send now, else a **normal** read from the cursor's read position if allowed.
  Entries of a round are dispatched (or put into the replay queue) by the implementation's
  :meth:`_send_entries`.
* Pulsar re-reads after every flow, join, leave and new entry, after acknowledgements (via the unblocking
  interval) and, when a round sent nothing, again after a back-off. The model runs rounds until one makes no
  progress (nothing sent, read position unchanged, replay queue unchanged) and is re-run by the same events;
  the back-off's repeated identical rounds are collapsed (they cannot change the outcome).
* Reads are instantaneous unless a test holds them (:meth:`hold_reads`): then a normal read stays *in flight*
  until :meth:`complete_pending_read`, which lets a scenario force the interleavings Pulsar's races need
  (a delayed cursor rewind, #23802; a close while a read is in flight, #12885: from 2.8.3 / 2.9.1 such a read is
  redone after the older replay, apache/pulsar#12890).
* **Delayed delivery** (PIP-26; ``InMemoryDelayedDeliveryTracker``): a normal read skips an entry whose
  ``deliverAtTime`` is later than the cutoff (now plus ``delayedDeliveryTickTimeMillis``, the default
  non-strict mode: up to a tick early) and keeps its position in the tracker (``trackDelayedDelivery`` in
  ``filterEntriesForConsumer``); the cursor reads on past it.  A timer at the cutoff re-reads, and each read
  round first moves the due positions into the replay queue *without* their hash (``getMessagesToReplayNow``:
  ``redeliveryMessages.add(ledgerId, entryId)``), so they are dispatched as replays, after the Key_Shared rules of
  the implementation (draining hashes, or the recently joined consumers' positions).  The tracker belongs to the
  dispatcher: a restart, or a new dispatcher, finds the still unacknowledged delayed entries again by reading.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from typing import Any

from reference_model.errors import ModelStateError
from reference_model.keyshared.consumer import DispatchConsumer
from reference_model.keyshared.policy import KeySharedPolicy
from reference_model.keyshared.replay_queue import ReplayQueue
from reference_model.keyshared.settings import DispatcherSettings
from reference_model.selectors import ConsumerRef, Selector
from reference_model.storage.cursor import ManagedCursor
from reference_model.storage.entry import Entry
from reference_model.storage.position import Position
from reference_model.versions import (
    CLASSIC_REPLAY_PRECEDENCE_AFTER_READ,
    REDELIVERY_COUNT_ON_REQUEST_ONLY,
    SLOW_SOCKET_DOES_NOT_STALL_OTHERS,
    PulsarVersion,
)

__all__ = ["KeySharedDispatcher", "ReadType", "Scheduler"]

#: ``schedule(delay_ms, callback)``: run ``callback`` on the simulated clock after ``delay_ms``.
Scheduler = Callable[[int, Callable[[], None]], Any]

#: A safety net against a model bug that would loop forever; never reached by a correct model.
_MAX_ROUNDS = 10_000_000
#: Sticky key -> slot cache bound (the slot depends only on the key and the selector's hash range).
_SLOT_CACHE_SIZE = 1 << 16


class ReadType(enum.Enum):
    """``PersistentDispatcherMultipleConsumers.ReadType``."""

    NORMAL = "Normal"
    REPLAY = "Replay"


class KeySharedDispatcher(ABC):
    """A Key_Shared dispatcher of one subscription. Subclasses: PIP-379 and classic."""

    #: ``"pip379"`` or ``"classic"``.
    implementation: str = ""

    def __init__(
        self,
        *,
        cursor: ManagedCursor,
        selector: Selector,
        policy: KeySharedPolicy,
        settings: DispatcherSettings,
        version: PulsarVersion,
        schedule: Scheduler | None = None,
        on_marker: Callable[[Entry], None] | None = None,
        clock: Callable[[], int] | None = None,
        proposed_fixes: frozenset[str] = frozenset(),
    ) -> None:
        self.cursor = cursor
        #: references of proposed fixes of open Pulsar bugs this dispatcher applies (none in any release)
        self.proposed_fixes = proposed_fixes
        self.log = cursor.log
        self.selector = selector
        self.policy = policy
        self.settings = settings
        self.version = version
        self.allow_out_of_order = policy.allow_out_of_order_delivery
        #: a read that completes after something older was queued for replay is redone (apache/pulsar#12890)
        self.replay_precedence = version.has(CLASSIC_REPLAY_PRECEDENCE_AFTER_READ)
        self.replay = ReplayQueue(track_hashes=not self.allow_out_of_order)
        self.consumers: dict[int, DispatchConsumer] = {}
        self.redelivery_counts: dict[Position, int] = {}
        #: 2.11+: only a redelivery request raises a count; before, any send of a tracked position did (#17060)
        self.counts_on_request = version.has(REDELIVERY_COUNT_ON_REQUEST_ONLY)
        self._schedule = schedule
        self._on_marker = on_marker
        self._slots: dict[bytes, int] = {}
        #: slot -> the consumer the selector picks for it (``None``: none), valid until the membership changes
        self._slot_consumers: dict[int, DispatchConsumer | None] = {}
        self._read_scheduled = False
        self._in_read = False
        self._read_again = False
        self.total_unacked = 0
        self.blocked_on_unacked = False
        # in-flight reads (only while a test holds reads)
        self._holding = False
        self._pending_read: tuple[ReadType, Position | None] | None = None
        self.should_rewind = False
        # hook a test uses to run an action in the middle of a replay-filter pass (#23870)
        self._filter_interleave: tuple[Position | None, Callable[[], None]] | None = None
        self.rounds = 0
        #: entries read from the replay queue so far (``testNoRepeatedReadAndDiscard`` bounds it)
        self.entries_replayed = 0
        #: set by a round that decided to skip the next replay read (look-ahead); counts as progress once
        self._lookahead_triggered = False
        #: skip the next replay read once, to read ahead (PIP-379 ``skipNextReplayToTriggerLookAhead``, classic
        #: ``isDispatcherStuckOnReplays``); set and consumed by the implementations
        self.skip_next_replay = False
        #: ``now_ns()`` of the broker's clock (delayed delivery); without it, delivery times are ignored
        self._clock = clock
        #: the delayed-delivery tracker: position -> ``deliverAtTime`` (ns) of entries read but not yet due
        self.delayed: dict[Position, int] = {}
        #: cutoff instants (ns) a re-read is scheduled for
        self._delayed_timers: set[int] = set()
        #: apache/pulsar#26630 / #26635 (5.0.0): an unwritable consumer gets nothing, and a stalled write holds back
        #: no other consumer; before, the next read waited for every write of the round (see :meth:`_send`)
        self.writability_checked = version.has(SLOW_SOCKET_DOES_NOT_STALL_OTHERS)
        #: a round wrote to a stalled connection and (before 5.0.0) its completion is what would read again: no read
        #: is armed, so new entries wait for an explicit trigger (``Flow``, acknowledgements that move the mark-delete
        #: position, a membership change, the connection becoming writable)
        self._awaiting_writes = False

    # -- membership ----------------------------------------------------------------------------------------
    def add_consumer(self, consumer: DispatchConsumer) -> None:
        """Add a consumer (``addConsumer``); raises :class:`ConsumerAssignError` if the selector refuses it."""
        if not self.consumers:
            # first consumer after none: rewind to the first unacknowledged entry (base ``addConsumer``)
            if self._pending_read is not None:
                self.should_rewind = True
            else:
                self.cursor.rewind()
                self.should_rewind = False
            self.replay.clear()
            self.redelivery_counts.clear()
        impacted = self.selector.add(consumer.ref, consumer.sticky_ranges)
        self.consumers[consumer.consumer_id] = consumer
        self._membership_changed()
        self._after_add(consumer, impacted)

    def remove_consumer(self, consumer: DispatchConsumer) -> None:
        """Remove a consumer (``removeConsumer``): its pending entries go back to the replay queue."""
        if self.consumers.get(consumer.consumer_id) is not consumer:
            return
        impacted = self.selector.remove(consumer.ref)
        del self.consumers[consumer.consumer_id]
        self._membership_changed()
        consumer.active = False
        self.total_unacked -= consumer.unacked_messages
        self._unacked_released()  # ``removeConsumer`` -> ``addUnAckedMessages(-consumer.getUnackedMessages())``
        if not self.consumers:
            consumer.pending.drain(close=True)
            self.replay.clear()
            self.redelivery_counts.clear()
            self.total_unacked = 0
            self._unacked_released()
            self._after_last_removed(consumer)
            return
        self._release_pending(consumer)
        self._after_remove(consumer, impacted)
        self._read_after_removal()

    def _read_after_removal(self) -> None:
        """The read a removal triggers (``removeConsumer`` -> ``readMoreEntries``); implementations may issue it as
        an in-flight read."""
        self.read_more_entries()

    def _release_pending(self, consumer: DispatchConsumer) -> None:
        """A leaving consumer's pending entries go back to the replay queue with their slots; their redelivery
        counts stay as they were (no tracker call from 3.0 on): only a redelivery request counts.  Before 2.11
        ``redeliveryTracker.addIfAbsent`` tracks them, so their next send raises the count (:meth:`_send`)."""
        counts = self.redelivery_counts
        for position, _batch, slot in consumer.pending.drain(close=True):
            if self._add_to_replay(position, slot or None) and not self.counts_on_request:
                counts.setdefault(position, 0)

    def _membership_changed(self) -> None:
        """The selector and ``consumers`` just changed: drop what was derived from them."""
        self._slot_consumers.clear()

    def _after_add(self, consumer: DispatchConsumer, impacted: Any) -> None:
        """Implementation-specific work after a consumer joined."""
        return None

    def _after_remove(self, consumer: DispatchConsumer, impacted: Any) -> None:
        """Implementation-specific work after a consumer left (others remain)."""
        return None

    def _after_last_removed(self, consumer: DispatchConsumer) -> None:
        """Implementation-specific work after the last consumer left."""
        return None

    def consumer_by_ref(self, ref: ConsumerRef | None) -> DispatchConsumer | None:
        if ref is None:
            return None
        return self.consumers.get(ref.consumer_id)

    def select(self, slot: int) -> DispatchConsumer | None:
        """The consumer the selector picks for ``slot`` (cached until the membership changes)."""
        cache = self._slot_consumers
        if slot in cache:
            return cache[slot]
        ref = self.selector.select(slot)
        consumer = None if ref is None else self.consumers.get(ref.consumer_id)
        if len(cache) >= _SLOT_CACHE_SIZE:
            cache.clear()
        cache[slot] = consumer
        return consumer

    def slot_of(self, entry: Entry) -> int:
        """The slot of an entry (``getStickyKeyHash``; cached per sticky key, as Pulsar caches it per entry)."""
        key = entry.sticky_key
        slot = self._slots.get(key)
        if slot is None:
            if len(self._slots) >= _SLOT_CACHE_SIZE:
                self._slots.clear()
            slot = self._slots[key] = self.selector.slot_of(key)
        return slot

    # -- client commands -----------------------------------------------------------------------------------
    def consumer_flow(self, consumer: DispatchConsumer, permits: int) -> None:
        """``Flow``: more permits for ``consumer``, then read."""
        if self.consumers.get(consumer.consumer_id) is not consumer:
            return
        consumer.add_permits(permits)
        self.read_more_entries()

    def acknowledge(self, consumer: DispatchConsumer, position: Position) -> bool:
        """An individual acknowledgement of a whole entry: drop its pending ack; return whether one was found.

        The ack may come through another consumer of the subscription than the one holding the entry
        (``Consumer.getAckOwnerConsumer``); the holder's pending ack is removed then.
        """
        owner = consumer
        record = consumer.pending.remove(position)
        if record is None:
            for other in self.consumers.values():
                if other is not consumer:
                    record = other.pending.remove(position)
                    if record is not None:
                        owner = other
                        break
        if self.redelivery_counts:
            self.redelivery_counts.pop(position, None)
        if record is None:
            return False
        batch_size, slot = record
        owner.message_ack_counter += batch_size
        if owner.consumer_id in self.consumers:
            self.total_unacked -= batch_size
        self._pending_removed(owner, slot, closing=False)
        if owner.blocked_on_unacked and owner.maybe_unblock():
            self.read_more_entries()
        self._unacked_released()
        return True

    def _unacked_released(self) -> None:
        """``addUnAckedMessages`` with a negative count (an ack, a consumer's removal, a redelivery request): a
        subscription blocked at ``maxUnackedMessagesPerSubscription`` unblocks once it is below half of it
        (``unAckedMessages < maxUnackedMessages / 2``); the caller's read follows.  Without the removal and
        redelivery paths, a subscription whose blocked holders all left stayed blocked with nothing unacked."""
        if self.blocked_on_unacked and self.total_unacked < self.settings.max_unacked_per_subscription // 2:
            self.blocked_on_unacked = False

    def _pending_removed(self, consumer: DispatchConsumer, slot: int, *, closing: bool) -> None:
        """A pending ack of ``consumer`` went away (draining bookkeeping in PIP-379)."""
        return None

    def after_acknowledgements(self, mark_delete_moved: bool) -> None:
        """Re-read after acknowledgements, after ``keySharedUnblockingIntervalMs`` (coalesced).

        Pulsar re-reads after a hash is unblocked or the mark-delete position moves (``RescheduleReadHandler``),
        and a round that sent nothing is retried with a back-off anyway; both are covered by one re-read at
        the unblocking interval.
        """
        if self._read_scheduled:
            return  # coalesced with the re-read already scheduled (``schedule_read`` would do nothing)
        if self._awaiting_writes and not mark_delete_moved:
            return  # no round retries (the last one sent), no hash unblocked: only a moving mark-delete reads
        self.schedule_read(self.settings.unblocking_interval_ms)

    def redeliver(self, consumer: DispatchConsumer, positions: Iterable[Position] | None) -> int:
        """``RedeliverUnacknowledgedMessages``: all pending entries (``None``) or the given ones, without hashes.

        ``Consumer.redeliverUnacknowledgedMessages`` removes the pending acks, then the dispatcher adds the
        positions to the replay queue *without* their hash ("difficult to get the sticky key here"): ordering
        is not kept for redelivered messages (PIP-379's documented contract). Returns the entries queued.
        """
        if self.consumers.get(consumer.consumer_id) is not consumer:
            return 0
        wanted = [p for p, _b, _s in consumer.pending] if positions is None else sorted(set(positions))
        queued = 0
        # A read a hash unblocked here asks for (``keySharedUnblockingIntervalMs = 0``) runs after this request is
        # done, as Pulsar's ``reScheduleReadInMs(0)`` hands it to the broker's executor: run at once, it
        # dispatched a later message of the key before its earlier one was back in the replay queue
        nested = self._in_read
        self._in_read = True
        try:
            for position in wanted:
                record = consumer.pending.remove(position)
                if record is None:
                    continue
                batch_size, slot = record
                self.total_unacked -= batch_size
                consumer.msg_redeliver_counter += batch_size
                self._pending_removed(consumer, slot, closing=False)
                if self._add_to_replay(position, None):
                    if self.counts_on_request:
                        self.redelivery_counts[position] = self.redelivery_counts.get(position, 0) + 1
                    else:  # before 2.11: ``addIfAbsent``, the next send raises the count (:meth:`_send`)
                        # both forms: a Key_Shared consumer's redeliver-all request reaches the per-position form too
                        # (``Consumer.redeliverUnacknowledgedMessages`` with pending acks, branch-2.8 to branch-2.10)
                        self.redelivery_counts.setdefault(position, 0)
                    queued += 1
        finally:
            if not nested:
                self._in_read = False
                self._read_again = False  # the read below serves what was asked meanwhile
        # Unblocked whatever remains unacknowledged, with the parked permits (it was ``maybe_unblock`` then
        # ``blocked = False``, which lost the parked permits when more than half the limit stayed unacknowledged:
        # a consumer nacking two batches over its limit then stalled for good)
        consumer.unblock_for_redelivery()
        self._unacked_released()  # ``clearUnAckedMsgs`` -> ``addUnAckedMessages(-n)``
        self.read_more_entries()
        return queued

    def _add_to_replay(self, position: Position, slot: int | None) -> bool:
        """``addMessageToReplay``: only entries that are still unacknowledged."""
        if self.cursor.is_deleted(position):
            return False
        return self.replay.add(position, slot)

    # -- reading -------------------------------------------------------------------------------------------
    def schedule_read(self, delay_ms: int) -> None:
        """Run :meth:`read_more_entries` after ``delay_ms`` on the simulated clock (coalesced)."""
        if delay_ms <= 0 or self._schedule is None:
            self.read_more_entries()
            return
        if self._read_scheduled:
            return
        self._read_scheduled = True

        def run() -> None:
            self._read_scheduled = False
            self.read_more_entries()

        self._schedule(delay_ms, run)

    def read_more_entries(self) -> None:
        """Run read rounds until one makes no progress (``readMoreEntries``)."""
        if self._in_read:
            self._read_again = True
            return
        self._in_read = True
        self._awaiting_writes = False
        replay = self.replay
        cursor = self.cursor
        log = self.log
        try:
            budget = _MAX_ROUNDS
            while budget > 0:
                budget -= 1
                self.rounds += 1
                if self._read_round():
                    if self._awaiting_writes:
                        return  # the round's completion waits for a stalled write: nothing reads again
                    last = log._last
                    if (
                        not replay.positions
                        and not self._read_again
                        and not self._holding
                        and (last is None or cursor.read_position > last)
                    ):
                        # the next round would stop at its first test (nothing to replay, nothing new): stop here
                        self.rounds += 1
                        return
                    continue
                if self._read_again:
                    self._read_again = False
                    continue
                return
            raise ModelStateError(f"The dispatcher did not settle after {_MAX_ROUNDS} read rounds: a model bug.")
        finally:
            self._in_read = False

    def entries_added(self) -> None:
        """New entries were written: a read waiting at the end of the topic completes (``readMoreEntries``).

        While a round's completion waits for a write to a stalled connection (before 5.0.0), no read is waiting:
        the new entries stay unread until an explicit trigger reads again.
        """
        if not self._awaiting_writes:
            self.read_more_entries()

    def stall_connection(self, consumer: DispatchConsumer) -> None:
        """``consumer``'s client stopped reading its socket: its writes back up; it keeps its permits.

        From 5.0.0 (apache/pulsar#26630) its channel turns unwritable and it gets nothing more; before, it is
        written to as long as it has permits and each such write never completes (:meth:`_send`).
        """
        consumer.stalled = True
        if self.writability_checked:
            consumer.writable = False

    def connection_writable(self, consumer: DispatchConsumer) -> None:
        """``consumer``'s client reads again: the writes that waited complete, the channel is writable, read."""
        consumer.stalled = False
        consumer.writable = True
        if self.consumers.get(consumer.consumer_id) is consumer:
            self.read_more_entries()

    def available_permits_total(self) -> int:
        total = 0
        for consumer in self.consumers.values():
            permits = consumer.permits
            if permits > 0:
                total += permits
        return total

    def _read_round(self) -> bool:
        # Runs (at least twice) for every entry published: the small helpers are inlined, as commented.
        consumers = self.consumers
        if not consumers or self._pending_read is not None:
            return False
        replay = self.replay
        cursor = self.cursor
        if self.delayed:
            self._release_due_delayed()
        if not replay.positions and not self._holding:
            last = self.log._last  # ``cursor.has_more_entries()``
            if last is None or cursor.read_position > last:
                return False  # nothing to replay, nothing new: a read would wait at the end of the topic
        # ``min(available_permits_total(), max read batch, read limit)``, summing only as far as needed (and
        # without the builtin ``min``, which costs more than the rest of this on a hot path)
        cap = self.settings.max_read_batch_size
        limit = self._max_entries_read_limit()
        if limit < cap:
            cap = limit
        to_read = 0
        for consumer in consumers.values():
            permits = consumer.permits
            if permits > 0:
                to_read += permits
                if to_read >= cap:
                    to_read = cap
                    break
        if to_read <= 0:
            return False
        version_before = replay.version
        self._lookahead_triggered = False
        # ``_replay_candidates`` has nothing to do (nor a flag to consume) with an empty queue and no skip pending
        positions = self._replay_candidates(to_read) if replay.positions or self.skip_next_replay else None
        if positions:
            entries: list[Entry] = []
            for position in positions:
                if cursor.is_deleted(position):
                    replay.remove(position)
                else:
                    entries.append(self.log.get(position))
            if entries:
                self.entries_replayed += len(entries)
                sent = self._send_entries(ReadType.REPLAY, entries)
            else:
                sent = 0
            return sent > 0 or replay.version != version_before or self._lookahead_triggered
        if self.blocked_on_unacked:
            return False
        if not self._normal_read_allowed():
            return False
        if self._holding:
            first = replay.first()
            self._pending_read = (ReadType.NORMAL, first)
            return False
        last = self.log._last  # ``cursor.has_more_entries()``
        if last is None or cursor.read_position > last:
            return replay.version != version_before
        if self.should_rewind:
            # a rewind deferred by an in-flight replay read (every consumer left while it was in flight): Pulsar's
            # next normal read completes, drops its entries and rewinds (``readEntriesComplete``); the same as
            # rewinding before reading
            cursor.rewind()
            self.should_rewind = False
        queued = replay.positions
        return self._normal_read(to_read, queued[0] if queued else None)

    def _normal_read(self, to_read: int, min_replayed: Position | None) -> bool:
        cursor = self.cursor
        replay = self.replay
        before = cursor.read_position
        version_before = replay.version
        entries = cursor.read_entries(to_read)
        for entry in entries:
            if entry.metadata.marker_type is not None:
                entries = self._strip_markers(entries)
                break
        if entries and self._clock is not None:
            for entry in entries:
                if entry.metadata.deliver_at_ns:
                    entries = self._track_delayed(entries)
                    break
        if entries:
            if min_replayed is not None and not self.allow_out_of_order and self.replay_precedence:
                first = replay.first()
                if first is not None and first < min_replayed:
                    # #12885: something older was queued for replay while this read was in flight
                    for entry in entries:
                        self._add_to_replay(entry.position, self.slot_of(entry))
                    return True
            if len(entries) == 1:
                self._send_one(ReadType.NORMAL, entries[0])
            else:
                self._send_entries(ReadType.NORMAL, entries)
        return cursor.read_position != before or replay.version != version_before

    def _cutoff_ns(self) -> int:
        """``getCutoffTime``: an entry due at or before it is delivered now (non-strict: one tick ahead)."""
        assert self._clock is not None
        return self._clock() + self.settings.delayed_delivery_tick_ms * 1_000_000

    def _track_delayed(self, entries: list[Entry]) -> list[Entry]:
        """``trackDelayedDelivery``: entries not yet due go to the tracker (with a re-read at their cutoff) and are
        not dispatched now; the others are returned."""
        cutoff = self._cutoff_ns()
        out: list[Entry] = []
        for entry in entries:
            due = entry.metadata.deliver_at_ns
            if due and due > cutoff:
                self.delayed[entry.position] = due
                self._schedule_delayed(due - self.settings.delayed_delivery_tick_ms * 1_000_000)
            else:
                out.append(entry)
        return out

    def _schedule_delayed(self, at_ns: int) -> None:
        """A read when the clock reaches ``at_ns`` (``InMemoryDelayedDeliveryTracker.updateTimer``)."""
        if self._schedule is None or self._clock is None or at_ns in self._delayed_timers:
            return
        self._delayed_timers.add(at_ns)
        delay_ms = max(0, -(-(at_ns - self._clock()) // 1_000_000))

        def fire() -> None:
            self._delayed_timers.discard(at_ns)
            self.read_more_entries()

        self._schedule(delay_ms, fire)

    def _release_due_delayed(self) -> None:
        """``getMessagesToReplayNow``: the tracker's due positions join the replay queue without their hash."""
        cutoff = self._cutoff_ns()
        due = sorted(p for p, at in self.delayed.items() if at <= cutoff)
        for position in due:
            del self.delayed[position]
            self._add_to_replay(position, None)

    def _strip_markers(self, entries: list[Entry]) -> list[Entry]:
        """Markers are acknowledged as they are read and never sent (``filterEntriesForConsumer``)."""
        out: list[Entry] = []
        for entry in entries:
            if entry.is_marker:
                if self._on_marker is not None:
                    self._on_marker(entry)
            else:
                out.append(entry)
        return out

    @abstractmethod
    def _replay_candidates(self, max_positions: int) -> list[Position]:
        """Positions to replay now (after this implementation's replay filter)."""

    @abstractmethod
    def _normal_read_allowed(self) -> bool:
        """Whether a normal read may be issued now."""

    def _max_entries_read_limit(self) -> int:
        return self.settings.max_read_batch_size

    @abstractmethod
    def _send_entries(self, read_type: ReadType, entries: list[Entry]) -> int:
        """Dispatch one round's entries; return how many entries were sent."""

    def _send_one(self, read_type: ReadType, entry: Entry) -> int:
        """Dispatch a round of one entry (what every publish causes); implementations may specialise it."""
        return self._send_entries(read_type, [entry])

    def _send(self, consumer: DispatchConsumer, entry: Entry, slot: int) -> bool:
        """Record the pending ack (send-time re-check) and write the entry to the consumer's connection."""
        if not self._add_pending_if_allowed(consumer, entry, slot):
            self._add_to_replay(entry.position, slot)
            return False
        consumer.record_sent(entry)
        total = self.total_unacked = self.total_unacked + entry.batch_size
        max_sub = self.settings.max_unacked_per_subscription
        if max_sub > 0 and total >= max_sub:
            self.blocked_on_unacked = True
        counts = self.redelivery_counts
        count = counts.get(entry.position, 0) if counts else 0
        if counts and not self.counts_on_request and entry.position in counts:
            count = counts[entry.position] = count + 1  # before 2.11 every send of a tracked position counts
        consumer.sink(entry, count)
        if consumer.stalled and not self.writability_checked:
            # the write backs up; the round's ``keyNumbers`` / ``remainingConsumersToFinishSending`` barrier waits
            self._awaiting_writes = True
        return True

    def _add_pending_if_allowed(self, consumer: DispatchConsumer, entry: Entry, slot: int) -> bool:
        return consumer.pending.add_if_allowed(entry.position, entry.batch_size, slot)

    # -- forcing interleavings (tests) ---------------------------------------------------------------------
    def hold_reads(self) -> None:
        """From now on a normal read stays in flight until :meth:`complete_pending_read` (test hook)."""
        self._holding = True

    def complete_pending_read(self) -> bool:
        """Complete the in-flight normal read, if any (``readEntriesComplete``); return whether there was one."""
        if self._pending_read is None:
            return False
        read_type, min_replayed = self._pending_read
        self._pending_read = None
        if read_type is ReadType.REPLAY:
            self._complete_replay_read()
            return True
        if not self.consumers:
            return True
        if self.should_rewind:
            # the rewind requested while this read was in flight happens now; the read's entries are dropped
            self.cursor.rewind()
            self.should_rewind = False
            self.read_more_entries()
            return True
        total = self.available_permits_total()
        to_read = max(1, min(total, self.settings.max_read_batch_size, self._max_entries_read_limit()))
        self._in_read = True
        try:
            self._normal_read(to_read, min_replayed)
        finally:
            self._in_read = False
        self.read_more_entries()
        return True

    def _complete_replay_read(self) -> None:
        """Complete an in-flight replay read (only implementations that issue one have it)."""
        self.read_more_entries()

    def release_reads(self) -> None:
        """Stop holding reads; complete the in-flight one and dispatch normally again."""
        self._holding = False
        if not self.complete_pending_read():
            self.read_more_entries()

    @property
    def has_pending_read(self) -> bool:
        return self._pending_read is not None

    def interleave_replay_filter(self, action: Callable[[], None], after: Position | None = None) -> None:
        """Run ``action`` once, inside the next replay-filter pass, right after it judged ``after``
        (or the first position). Forces the timing of the #23870 race (an ack during replay filtering)."""
        self._filter_interleave = (after, action)

    def _filter_step_done(self, position: Position) -> None:
        hook = self._filter_interleave
        if hook is not None and (hook[0] is None or hook[0] == position):
            self._filter_interleave = None
            hook[1]()

    # -- stats ---------------------------------------------------------------------------------------------
    @abstractmethod
    def consumer_stats(self, consumer: DispatchConsumer) -> dict[str, Any]:
        """Implementation-specific consumer stats fields."""

    @abstractmethod
    def subscription_stats(self) -> dict[str, Any]:
        """Implementation-specific subscription stats fields."""

    def key_hash_ranges(self) -> dict[int, list[tuple[int, int]]]:
        """``consumer_id -> ranges`` as this version's stats print them."""
        return {ref.consumer_id: ranges for ref, ranges in self.selector.ranges().items()}

    def __repr__(self) -> str:
        return (
            f"<{type(self).__name__} consumers={len(self.consumers)} replay={len(self.replay)}"
            f" read={self.cursor.read_position} markDelete={self.cursor.mark_delete_position}>"
        )
