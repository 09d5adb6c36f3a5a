"""The client side of a consumer: receiver queue, flow permits, acknowledgements, negative acks, crashes.

Follows the C++ client that the Python ``pulsar-client`` wraps (``ConsumerImpl``):

* On subscribe the client grants ``receiver_queue_size`` permits (``Flow``). Messages the broker sends wait in
  the receiver queue ("prefetched") until the application calls :meth:`receive`. Each message taken counts
  one permit back; when ``receiver_queue_size / 2`` have accumulated they are sent in one ``Flow``
  (``increaseAvailablePermits``). So a consumer whose application does not receive stops getting messages once
  its queue is full, and messages can sit prefetched, invisible to the application, at a consumer.
* A batch arrives as one entry: all its messages enter the queue together. The entry is acknowledged to the
  broker once every message of it was acknowledged (no batch-index acks, the Python default).
* :meth:`negative_acknowledge` asks the broker to redeliver the entry after
  ``negative_ack_redelivery_delay_ms``; :meth:`redeliver_unacknowledged_messages` asks for every pending entry
  at once. Neither clears the receiver queue (the C++ client does not), so copies may arrive twice.
* :meth:`acknowledge_cumulative` is refused by the client on Key_Shared
  (``CumulativeAcknowledgementNotAllowedError``); nothing reaches the broker.
* :meth:`close` removes the consumer at once. :meth:`crash` kills the client: its queue is lost, nothing is
  sent any more, and the broker keeps it (and keeps sending to it, up to its permits) until it notices, after
  ``crash_detection_delay_ms``; then its pending messages are redelivered to others.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from reference_model.broker.errors import AlreadyClosed, CumulativeAcknowledgementNotAllowedError
from reference_model.broker.messages import ModelMessage, ModelMessageId
from reference_model.errors import InvalidArgument
from reference_model.keyshared import DispatchConsumer, EntrySink, KeySharedPolicy
from reference_model.storage.entry import Entry
from reference_model.storage.position import Position

if TYPE_CHECKING:
    from reference_model.broker.model_broker import ModelBroker
    from reference_model.broker.subscription import ServerSubscription

__all__ = ["ModelConsumer"]

#: ``ModelMessage(...)`` without ``type.__call__`` (one per message delivered; see ``storage/_fast_init.py``)
_new_received: Callable[..., ModelMessage] = ModelMessage.__new__


class ModelConsumer:
    """A Key_Shared consumer of the model broker, with the ``pulsar.Consumer`` method names."""

    def __init__(
        self,
        broker: ModelBroker,
        *,
        topic: str,
        subscription: str,
        consumer_name: str,
        consumer_id: int,
        policy: KeySharedPolicy,
        receiver_queue_size: int,
        negative_ack_redelivery_delay_ms: int,
        initial_position: str,
        replicate_subscription_state: bool,
    ) -> None:
        self._broker = broker
        self._topic = topic
        self._subscription_name = subscription
        self._name = consumer_name
        self.consumer_id = consumer_id
        self.policy = policy
        self.receiver_queue_size = receiver_queue_size
        #: permits are sent back in one ``Flow`` once this many messages were taken (half the queue)
        self._flow_threshold = max(receiver_queue_size // 2, 1)
        self.negative_ack_redelivery_delay_ms = negative_ack_redelivery_delay_ms
        self.initial_position = initial_position
        self.replicate_subscription_state = replicate_subscription_state
        self._queue: deque[ModelMessage] = deque()
        self._permits_to_flow = 0
        self._batch_unacked: dict[Position, set[int]] = {}
        self._nacks_due: set[tuple[int, Position]] = set()  #: (when, entry) of the redeliveries nacks asked for
        self.state = "connecting"
        self.server: DispatchConsumer | None = None
        self.server_subscription: ServerSubscription | None = None
        self._connection = 0  # bumped on every (re)connect; a late delivery for an old connection is dropped

    # -- pulsar.Consumer surface ---------------------------------------------------------------------------
    def topic(self) -> str:
        return self._topic

    def subscription_name(self) -> str:
        return self._subscription_name

    def consumer_name(self) -> str:
        return self._name

    def is_connected(self) -> bool:
        return self.state == "open"

    def receive(self, timeout_millis: int | None = None) -> ModelMessage | None:
        """The next message, advancing the simulated clock while waiting; ``None`` after ``timeout_millis``.

        ``timeout_millis=None`` waits as long as anything is scheduled to happen; with nothing left that could
        deliver a message it returns ``None`` instead of blocking forever.
        """
        if self.state != "open":
            self._check_open("receive")
        if timeout_millis is not None and timeout_millis < 0:
            raise InvalidArgument(f"receive(timeout_millis={timeout_millis}) needs a timeout >= 0 (or None).")
        queue = self._queue
        if not queue:
            if self.receiver_queue_size == 0 and self._permits_to_flow == 0:
                self._permits_to_flow = -1  # zero-queue consumer: ask for exactly one message
                self._send_flow(1)
            if not queue:
                self._broker.clock.advance_until(lambda: bool(queue) or self.state != "open", timeout_millis)
            if self.state != "open" or not queue:
                return None
        msg = queue.popleft()
        if self.receiver_queue_size:  # each message taken counts a permit back, sent in one Flow at half the queue
            taken = self._permits_to_flow = self._permits_to_flow + 1
            if taken >= self._flow_threshold:
                self._permits_to_flow = 0
                self._send_flow(taken)
        return msg

    def acknowledge(self, message: ModelMessage | ModelMessageId) -> None:
        """Acknowledge one message; the entry is acknowledged to the broker once all its messages are."""
        if self.state != "open":
            self._check_open("acknowledge")
        if isinstance(message, ModelMessage):
            position = message.entry.position
            index = message.index
        else:
            position = message.position
            index = message.batch
        batches = self._batch_unacked
        if batches:
            pending = batches.get(position)
            if pending is not None:
                pending.discard(max(index, 0))
                if pending:
                    return
                del batches[position]
        assert self.server is not None and self.server_subscription is not None
        self.server_subscription.acknowledge(self.server, position)

    def acknowledge_cumulative(self, message: ModelMessage | ModelMessageId) -> None:
        """Refused on Key_Shared, as the client refuses it (``CumulativeAcknowledgementNotAllowedError``)."""
        self._check_open("acknowledge_cumulative")
        raise CumulativeAcknowledgementNotAllowedError(
            "Cumulative acknowledgement is not allowed on a Key_Shared subscription"
            f" ({self._subscription_name!r} on {self._topic!r}); acknowledge each message with acknowledge(msg)."
        )

    def negative_acknowledge(self, message: ModelMessage | ModelMessageId) -> None:
        """Ask for redelivery of the message's entry after ``negative_ack_redelivery_delay_ms``."""
        self._check_open("negative_acknowledge")
        msg_id = message.message_id() if isinstance(message, ModelMessage) else message
        position = msg_id.position
        connection = self._connection
        # The C++ client (and so the Python one) keys its NegativeAcksTracker by entry, the batch index erased
        # ("group all nacks from same batch"), and sends the entries whose delay ran out in one request: nacks
        # of several messages of one batch due at the same instant ask for the entry once, not once each (twice
        # would take back the copy the first request delivered, with the acks the consumer sent for it).
        due = (self._broker.clock.now_ns() + self.negative_ack_redelivery_delay_ms * 1_000_000, position)
        if due in self._nacks_due:
            return
        self._nacks_due.add(due)

        def redeliver() -> None:
            self._nacks_due.discard(due)
            if self.state == "open" and self._connection == connection and self.server_subscription is not None:
                dispatcher = self.server_subscription.dispatcher
                assert self.server is not None
                if dispatcher is not None:
                    dispatcher.redeliver(self.server, [position])

        self._broker.clock.call_later(self.negative_ack_redelivery_delay_ms, redeliver)

    def redeliver_unacknowledged_messages(self) -> None:
        """Ask the broker to redeliver every entry pending at this consumer (the queue is kept)."""
        self._check_open("redeliver_unacknowledged_messages")
        assert self.server_subscription is not None and self.server is not None
        dispatcher = self.server_subscription.dispatcher
        if dispatcher is not None:
            dispatcher.redeliver(self.server, None)

    def close(self) -> None:
        """Close: the broker removes the consumer now and redelivers its pending messages to others."""
        if self.state in ("closed", "crashed"):
            return
        self.state = "closed"
        self._queue.clear()
        self._broker._consumer_closed(self)

    def crash(self) -> None:
        """Kill the client: nothing more is received or sent; the broker notices after the detection delay."""
        if self.state in ("closed", "crashed"):
            return
        self.state = "crashed"
        self._queue.clear()
        self._broker._consumer_crashed(self)

    def unsubscribe(self) -> None:
        raise InvalidArgument("unsubscribe is not modelled; close() the consumers instead.")

    # -- introspection (not in pulsar-client) --------------------------------------------------------------
    def num_prefetched(self) -> int:
        """Messages in the receiver queue: delivered by the broker, not yet taken by the application."""
        return len(self._queue)

    def prefetched(self) -> list[ModelMessage]:
        return list(self._queue)

    # -- connection ----------------------------------------------------------------------------------------
    def _check_open(self, what: str) -> None:
        if self.state != "open":
            raise AlreadyClosed(
                f"Consumer {self._name!r} on {self._topic!r} is {self.state}; {what}() needs an open consumer."
            )

    def _open_connection(self) -> EntrySink:
        """A new connection (first subscribe or a reconnect): a fresh receiver queue, and the sink the broker
        writes to; writes meant for an older connection are dropped."""
        self._connection += 1
        self._queue.clear()
        self._batch_unacked.clear()
        self._permits_to_flow = 0
        connection = self._connection
        queue = self._queue
        topic = self._topic

        def sink(entry: Entry, redelivery_count: int) -> None:
            if self.state != "open" or self._connection != connection:
                return
            if entry.batch_size == 1 and entry.metadata.num_messages_in_batch is None and self.receiver_queue_size:
                queue.append(_new_received(ModelMessage, entry, 0, topic, redelivery_count))  # the common case
            else:
                self._entry_received(entry, redelivery_count)

        return sink

    def _attach(self, server: DispatchConsumer, subscription: ServerSubscription) -> None:
        """Subscribed: grant the initial ``receiver_queue_size`` permits."""
        self.server = server
        self.server_subscription = subscription
        self.state = "open"
        if self.receiver_queue_size > 0:
            self._send_flow(self.receiver_queue_size)

    def _entry_received(self, entry: Entry, redelivery_count: int) -> None:
        if entry.is_batch:
            self._batch_unacked[entry.position] = set(range(entry.batch_size))
        topic = self._topic
        for i in range(entry.batch_size):
            self._queue.append(ModelMessage(entry, i, topic, redelivery_count))
        if self.receiver_queue_size == 0 and self._permits_to_flow < 0:
            self._permits_to_flow = 0

    def _send_flow(self, permits: int) -> None:
        if self.server is not None and self.server_subscription is not None:
            self.server_subscription.flow(self.server, permits)

    def __repr__(self) -> str:
        return (
            f"ModelConsumer({self._name!r}#{self.consumer_id}, {self._subscription_name!r}, {self.state},"
            f" prefetched={len(self._queue)})"
        )
