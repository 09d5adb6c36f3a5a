"""The Key_Shared dispatcher of a non-persistent topic: no backlog, no redelivery, no draining.

Follows ``NonPersistentStickyKeyDispatcherMultipleConsumers.sendMessages`` (read at ascentstream/pulsar master
938e57cbd1): a non-persistent topic hands every published entry straight to each subscription's dispatcher
(``NonPersistentTopic.publishMessage``), which

* drops it when the subscription has no consumer;
* picks the key's consumer with the same selector a persistent subscription would use (STICKY: the exclusive
  hash-range selector; AUTO_SPLIT: consistent hashing or the auto-split selector, by broker setting), and drops
  the entry when no consumer owns its hash;
* sends it to that consumer when the consumer has permits (``getAvailablePermits() > 0``; the whole group of
  a read is sent, and the permits may go below zero), and otherwise **drops it**: it goes to no other consumer
  (``NonPersistentStickyKeyDispatcherMultipleConsumersTest.testSendMessageRespectFlowControl``).

Nothing is kept: acknowledgements, negative acknowledgements and redelivery requests change nothing
(``NonPersistentDispatcherMultipleConsumers.redeliverUnacknowledgedMessages`` is a no-op), a consumer's
removal releases nothing, and a joining consumer takes a key over at once (there is nothing pending to drain).
So a client sees: loss allowed, each message at most once, a key at one consumer at a time, per-key order.

Per release: before 2.8.1 the permits were not checked at all, every message went to its key's consumer
(:data:`~reference_model.versions.NON_PERSISTENT_FLOW_CONTROL`, apache/pulsar#11692); otherwise what changes is
what this class shares with the persistent dispatchers: the selector (:mod:`reference_model.selectors`, per
version) and the sticky key of a key-less message (resolved by the topic, ``producerName-sequenceId`` from 4.0,
apache/pulsar#23219). Read in ascentstream/pulsar: the file's history from 2.8 to master (938e57cbd1) changes
nothing else a client can observe (apache/pulsar#12035, a new dispatcher when a consumer of another mode
arrives after all left, reached 2.8.2 and 2.9.0 for both kinds of topic; the model builds one from 2.8.0).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from reference_model.keyshared.consumer import DispatchConsumer
from reference_model.keyshared.dispatcher import KeySharedDispatcher, ReadType
from reference_model.storage.entry import Entry
from reference_model.storage.position import Position
from reference_model.versions import NON_PERSISTENT_FLOW_CONTROL

__all__ = ["NonPersistentDispatcher"]


class NonPersistentDispatcher(KeySharedDispatcher):
    """``NonPersistentStickyKeyDispatcherMultipleConsumers``: each entry to its key's consumer, or nowhere."""

    implementation = "non-persistent"

    #: entries dropped because their key's consumer had no permits (Pulsar's ``msgDrop`` rate, as a count)
    dropped_no_permits: int = 0
    #: entries dropped because no consumer was connected or none owned the key's hash
    dropped_no_consumer: int = 0

    @property
    def flow_control(self) -> bool:
        """Whether this release drops a message whose consumer has no permits (apache/pulsar#11692)."""
        return self.version.has(NON_PERSISTENT_FLOW_CONTROL)

    # -- membership: nothing to rewind, release or drain ---------------------------------------------------
    def add_consumer(self, consumer: DispatchConsumer) -> None:
        """``addConsumer``: the selector takes it (or refuses it, :class:`ConsumerAssignError`); nothing else."""
        self.selector.add(consumer.ref, consumer.sticky_ranges)
        self.consumers[consumer.consumer_id] = consumer
        self._membership_changed()

    def remove_consumer(self, consumer: DispatchConsumer) -> None:
        """``removeConsumer``: the selector forgets it; what it was sent is gone with it."""
        if self.consumers.get(consumer.consumer_id) is not consumer:
            return
        self.selector.remove(consumer.ref)
        del self.consumers[consumer.consumer_id]
        self._membership_changed()
        consumer.active = False

    # -- client commands -----------------------------------------------------------------------------------
    def consumer_flow(self, consumer: DispatchConsumer, permits: int) -> None:
        """``Flow``: permits only; there is no backlog to read."""
        if self.consumers.get(consumer.consumer_id) is consumer:
            consumer.permits += permits

    def acknowledge(self, consumer: DispatchConsumer, position: Position) -> bool:
        """Nothing is pending on a non-persistent subscription."""
        return False

    def after_acknowledgements(self, mark_delete_moved: bool) -> None:
        return None

    def redeliver(self, consumer: DispatchConsumer, positions: Iterable[Position] | None) -> int:
        """A no-op, as in Pulsar: a non-persistent message is never delivered twice."""
        return 0

    def read_more_entries(self) -> None:
        """Nothing to read: entries arrive through :meth:`send_messages` only."""
        return None

    # -- dispatch ------------------------------------------------------------------------------------------
    def send_messages(self, entries: list[Entry]) -> int:
        """``sendMessages``: group the entries by their key's consumer; send each group to a consumer with
        permits, drop the others. Returns the entries sent."""
        if not self.consumers:
            self.dropped_no_consumer += len(entries)
            return 0
        groups: dict[int, list[Entry]] = {}
        for entry in entries:
            if entry.is_marker:
                continue
            consumer = self.select(self.slot_of(entry))
            if consumer is None:
                self.dropped_no_consumer += 1
                continue
            groups.setdefault(consumer.consumer_id, []).append(entry)
        sent = 0
        for consumer_id, group in groups.items():
            consumer = self.consumers[consumer_id]
            if self._may_send(consumer):
                for entry in group:
                    consumer.record_sent(entry)
                    consumer.sink(entry, 0)
                sent += len(group)
            else:
                self.dropped_no_permits += len(group)
        return sent

    def _may_send(self, consumer: DispatchConsumer) -> bool:
        """``consumer.getAvailablePermits() > 0 && consumer.isWritable()`` (a stalled connection is not writable:
        its messages are dropped); before apache/pulsar#11692 (2.8.1) no check: everything was sent."""
        if not self.flow_control:
            return True
        return consumer.permits > 0 and consumer.writable

    def stall_connection(self, consumer: DispatchConsumer) -> None:
        """The non-persistent dispatcher has always checked ``isWritable`` (with the permits, #11692)."""
        consumer.stalled = True
        consumer.writable = not self.flow_control

    # -- what the persistent read loop needs, never used here ----------------------------------------------
    def _replay_candidates(self, max_positions: int) -> list[Position]:
        return []

    def _normal_read_allowed(self) -> bool:
        return False

    def _send_entries(self, read_type: ReadType, entries: list[Entry]) -> int:
        return self.send_messages(entries)

    # -- stats ---------------------------------------------------------------------------------------------
    def consumer_stats(self, consumer: DispatchConsumer) -> dict[str, Any]:
        return {}

    def subscription_stats(self) -> dict[str, Any]:
        return {"msgDropCount": self.dropped_no_permits}
