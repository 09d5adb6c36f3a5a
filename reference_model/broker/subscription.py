"""A durable subscription of a topic: its cursor, its Key_Shared dispatcher, and acknowledgements.

Follows ``PersistentSubscription``:

* The cursor (mark-delete, individually deleted entries) is durable and survives restarts; the dispatcher and
  its consumers are not.
* A consumer whose type, Key_Shared mode or ``allowOutOfOrderDelivery`` differs from the connected consumers'
  is refused (``SubscriptionBusyException`` "Subscription is of different type", client ``ConsumerBusy``);
  with no consumer connected the dispatcher is replaced by one for the new policy
  (``testSelectorChangedAfterAllConsumerDisconnected``).
* Individual acknowledgements delete entries in the cursor; cumulative acknowledgement is refused on
  Key_Shared by the client, but remote updates of a replicated subscription move the mark-delete position
  (:meth:`acknowledge_cumulative_to`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_model.broker.errors import ConsumerBusy
from reference_model.keyshared import DispatchConsumer, KeySharedDispatcher, KeySharedPolicy, make_dispatcher
from reference_model.storage.cursor import ManagedCursor
from reference_model.storage.entry import Entry
from reference_model.storage.position import Position

if TYPE_CHECKING:
    from reference_model.broker.topic import ServerTopic

__all__ = ["ServerSubscription"]


class ServerSubscription:
    """One subscription of one topic. ``replicated`` and ``mark_delete_position`` are what replication reads."""

    def __init__(self, topic: ServerTopic, name: str, cursor: ManagedCursor, *, replicated: bool = False) -> None:
        self.topic = topic
        self.name = name
        self.cursor = cursor
        self.replicated = replicated
        self.dispatcher: KeySharedDispatcher | None = None
        self.msg_out_counter = 0

    # -- what replication reads ----------------------------------------------------------------------------
    @property
    def mark_delete_position(self) -> Position:
        return self.cursor.mark_delete_position

    @property
    def read_position(self) -> Position:
        return self.cursor.read_position

    @property
    def consumers(self) -> list[DispatchConsumer]:
        return list(self.dispatcher.consumers.values()) if self.dispatcher is not None else []

    # -- consumers -----------------------------------------------------------------------------------------
    def add_consumer(self, consumer: DispatchConsumer, policy: KeySharedPolicy) -> None:
        """Attach ``consumer``; may raise :class:`ConsumerBusy` or :class:`ConsumerAssignError`."""
        dispatcher = self.dispatcher
        if dispatcher is not None and dispatcher.consumers:
            current = dispatcher.policy
            if current.mode != policy.mode or current.allow_out_of_order_delivery != policy.allow_out_of_order_delivery:
                raise ConsumerBusy(
                    f"Subscription is of different type: subscription {self.name!r} on {self.topic.name!r} has"
                    f" connected consumers with Key_Shared mode {current.mode} and allowOutOfOrderDelivery="
                    f"{current.allow_out_of_order_delivery}, but the new consumer asked for mode {policy.mode} and"
                    f" allowOutOfOrderDelivery={policy.allow_out_of_order_delivery}. Close them first, or subscribe"
                    " with the same policy."
                )
        if dispatcher is None or (
            not dispatcher.consumers
            and (
                dispatcher.policy.mode != policy.mode
                or dispatcher.policy.allow_out_of_order_delivery != policy.allow_out_of_order_delivery
            )
        ):
            dispatcher = self.dispatcher = self._new_dispatcher(policy)
        dispatcher.add_consumer(consumer)

    def _new_dispatcher(self, policy: KeySharedPolicy) -> KeySharedDispatcher:
        broker = self.topic.broker
        generation = broker.generation

        def schedule(delay_ms: int, callback: Any) -> None:
            def run() -> None:
                if broker.generation == generation and self.dispatcher is dispatcher:
                    callback()

            broker.clock.call_later(delay_ms, run)

        dispatcher = make_dispatcher(
            cursor=self.cursor,
            policy=policy,
            settings=broker.config.key_shared,
            version=broker.version,
            implementation=broker.implementation,
            schedule=schedule,
            on_marker=self._marker_read,
            non_persistent=not self.topic.persistent,
            clock=broker.clock.now_ns,
            proposed_fixes=broker.config.proposed_fixes,
        )
        return dispatcher

    def remove_consumer(self, consumer: DispatchConsumer) -> None:
        if self.dispatcher is not None:
            self.dispatcher.remove_consumer(consumer)

    def flow(self, consumer: DispatchConsumer, permits: int) -> None:
        if self.dispatcher is not None:
            self.dispatcher.consumer_flow(consumer, permits)

    def dispatch(self) -> None:
        """New entries arrived: let the dispatcher read (a pending read at the end of the topic completes)."""
        if self.dispatcher is not None and self.dispatcher.consumers:
            self.dispatcher.entries_added()

    # -- acknowledgements ----------------------------------------------------------------------------------
    def acknowledge(self, consumer: DispatchConsumer, position: Position) -> None:
        """An individual acknowledgement of one whole entry."""
        dispatcher = self.dispatcher
        if dispatcher is not None:
            dispatcher.acknowledge(consumer, position)
        moved = self.cursor.delete(position)
        if moved:
            listeners = self.topic.broker.listeners
            if listeners:
                listeners.mark_delete_advanced(self.topic.name, self.name, self.cursor.mark_delete_position)
            if self.topic.trims:
                self.topic.trim_consumed()
        dispatcher = self.dispatcher  # a listener may have replaced it
        if dispatcher is not None:
            dispatcher.after_acknowledgements(moved)

    def acknowledge_cumulative_to(self, position: Position) -> bool:
        """Move the mark-delete position to ``position`` (a remote update of a replicated subscription).

        Pending entries and replay positions at or below it are dropped, as acknowledged. Returns whether the
        mark-delete position moved.
        """
        if not self.cursor.mark_delete(position):
            return False
        dispatcher = self.dispatcher
        if dispatcher is not None:
            md = self.cursor.mark_delete_position
            for consumer in list(dispatcher.consumers.values()):
                for p, batch_size, slot in consumer.pending.remove_all_up_to(md):
                    dispatcher.total_unacked -= batch_size
                    dispatcher.redelivery_counts.pop(p, None)
                    dispatcher._pending_removed(consumer, slot, closing=False)
            dispatcher.replay.remove_all_up_to(md)
        self.topic.broker.listeners.mark_delete_advanced(self.topic.name, self.name, self.cursor.mark_delete_position)
        if self.topic.trims:
            self.topic.trim_consumed()
        if dispatcher is not None:
            dispatcher.after_acknowledgements(True)
        return True

    def expire_messages(self, cutoff_ns: int) -> bool:
        """Message expiry (``PersistentMessageExpiryMonitor.expireMessages``, what a TTL check runs): the mark-delete
        position moves to the newest entry published before ``cutoff_ns`` (``findNewestMatching`` over the
        unacknowledged entries); pending acks and replay positions at or below it are dropped
        (:meth:`acknowledge_cumulative_to`: PIP-379's ``markDeletePositionMoveForward``, classic's recently joined
        positions then pass).  Returns whether anything expired."""
        newest = None
        for entry in self.cursor.log.entries_after(self.cursor.mark_delete_position):
            if entry.metadata.publish_time_ns >= cutoff_ns:
                break
            newest = entry.position
        if newest is None:
            return False
        moved = self.acknowledge_cumulative_to(newest)
        dispatcher = self.dispatcher
        if moved and dispatcher is not None and dispatcher.consumers:
            # the expired messages no longer count as unacknowledged: a consumer (or the subscription) blocked at
            # its max-unacked limit is released as after acknowledgements (``addUnAckedMessages`` with the
            # negative count), else it waited for acks of messages the broker had acknowledged itself
            for consumer in list(dispatcher.consumers.values()):
                consumer.maybe_unblock()
            dispatcher._unacked_released()
            dispatcher.read_more_entries()
        return moved

    def _marker_read(self, entry: Entry) -> None:
        before = self.cursor.mark_delete_position
        self.cursor.delete(entry.position)
        broker = self.topic.broker
        broker.listeners.marker_read(self.topic.name, self.name, entry)
        if self.cursor.mark_delete_position != before:
            broker.listeners.mark_delete_advanced(self.topic.name, self.name, self.cursor.mark_delete_position)
            if self.topic.trims:
                self.topic.trim_consumed()

    # -- restart -------------------------------------------------------------------------------------------
    def unload(self) -> None:
        """Drop everything that is not durable (a broker restart): dispatcher, consumers, read position."""
        self.dispatcher = None
        self.cursor.rewind()

    def __repr__(self) -> str:
        return f"ServerSubscription({self.topic.name!r}, {self.name!r}, {self.cursor!r})"
