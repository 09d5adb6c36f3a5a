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
  ``negative_ack_redelivery_delay_ms``; nacks due at the same instant are one request naming each entry once
  (``NegativeAcksTracker``); :meth:`redeliver_unacknowledged_messages` asks for every pending entry
  at once. Neither clears the receiver queue (the C++ client does not), so copies may arrive twice.
* With ``unacked_messages_timeout_ms`` (the client's ack timeout; 0 or None: off, else at least 10 s as the C++
  client demands) every message the application received is tracked until it is acknowledged or negatively
  acknowledged (``UnAckedMessageTrackerEnabled``): the tracker keeps ``ceil(timeout / tick) + 1`` time
  partitions, a message joins the newest, and every ``tick`` (1 s, the C++ ``tickDurationInMs`` default) the
  oldest partition is popped and its messages' entries are sent back with ``RedeliverUnacknowledgedMessages``
  for those ids only, so a message comes back at least ``timeout`` after it was received. A
  :meth:`redeliver_unacknowledged_messages`, a close, a crash or a reconnect clears the tracker.
* With ``dead_letter`` (``(max_redeliver_count, topic)``, the client's ``DeadLetterPolicy``) a message the
  application received with a redelivery count of at least the maximum is a candidate
  (``possibleSendToDeadLetterTopicMessages``): when the client would next ask for its entry again (a negative
  ack falling due, the ack timeout), it publishes the entry's messages to the dead-letter topic instead, with
  the ``REAL_TOPIC`` and ``ORIGIN_MESSAGE_ID`` properties, and acknowledges them once the send is receipted
  (``processPossibleToDLQ``). A copy arriving with a count above the maximum is routed so without the
  application seeing it. The redelivery counts are the model broker's (``Dispatcher.redelivery_counts``).
* :meth:`acknowledge_cumulative` is refused by the client on Key_Shared
  (``CumulativeAcknowledgementNotAllowedError``); nothing reaches the broker.
* :meth:`close` removes the consumer at once. :meth:`crash` kills the client: its queue is lost, nothing is
  sent any more, and the broker keeps it (and keeps sending to it, up to its permits) until it notices, after
  ``crash_detection_delay_ms``; then its pending messages are redelivered to others.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from reference_model.broker.clock import NS_PER_MS
from reference_model.broker.errors import AlreadyClosed, CumulativeAcknowledgementNotAllowedError
from reference_model.broker.messages import ModelMessage, ModelMessageId
from reference_model.errors import InvalidArgument
from reference_model.keyshared import DispatchConsumer, EntrySink, KeySharedPolicy
from reference_model.storage.entry import Entry
from reference_model.storage.position import Position

if TYPE_CHECKING:
    from reference_model.broker.model_broker import ModelBroker
    from reference_model.broker.producer import ModelProducer
    from reference_model.broker.subscription import ServerSubscription

__all__ = ["MIN_UNACKED_MESSAGES_TIMEOUT_MS", "UNACKED_TICK_MS", "ModelConsumer"]

#: the C++ client refuses a shorter ack timeout ("should be greater than 10 seconds"; 0 switches it off)
MIN_UNACKED_MESSAGES_TIMEOUT_MS = 10_000
#: ``ConsumerConfiguration::tickDurationInMs`` default: how often the ack-timeout tracker looks
UNACKED_TICK_MS = 1_000

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
        unacked_messages_timeout_ms: int = 0,
        dead_letter: tuple[int, str] | None = None,
    ) -> None:
        self._broker = broker
        #: (max_redeliver_count, dead-letter topic), or None: no dead-letter policy
        self.dead_letter = dead_letter
        #: entry -> its messages received with a count at the maximum: routed at their next redelivery request
        self._dead_candidates: dict[Position, list[ModelMessage]] = {}
        self._dead_producer: ModelProducer | None = None
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
        #: (connection, due time in ns) -> the entries one redelivery request will name (see negative_acknowledge)
        self._nacks: dict[tuple[int, int], dict[Position, None]] = {}
        self.state = "connecting"
        self.server: DispatchConsumer | None = None
        self.server_subscription: ServerSubscription | None = None
        self._connection = 0  # bumped on every (re)connect; a late delivery for an old connection is dropped
        self.unacked_messages_timeout_ms = unacked_messages_timeout_ms
        #: the ack-timeout tracker's time partitions (oldest first) of (position, batch index); empty when off
        self._unacked_partitions: deque[set[tuple[Position, int]]] = deque()
        self._unacked_where: dict[tuple[Position, int], set[tuple[Position, int]]] = {}
        self._unacked_ticking = False
        #: the client stopped reading its socket (``stall_connection``): what the broker writes waits here, unread
        self._stalled = False
        self._socket: deque[tuple[Entry, int]] = deque()
        if unacked_messages_timeout_ms:
            blank = math.ceil(unacked_messages_timeout_ms / UNACKED_TICK_MS)
            self._unacked_partitions.extend(set() for _ in range(blank + 1))

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
        if self.dead_letter is not None and msg.redelivery_count() >= self.dead_letter[0]:
            if msg.redelivery_count() > self.dead_letter[0]:  # routed unseen; the permit still counts back
                self._route_dead([msg])
                self._count_permit()
                return self.receive(timeout_millis)
            self._dead_candidates.setdefault(msg.entry.position, []).append(msg)
        if self.unacked_messages_timeout_ms:
            self._track_unacked(msg.entry.position, max(msg.index, 0))
        self._count_permit()
        return msg

    def _count_permit(self) -> None:
        if self.receiver_queue_size:  # each message taken counts a permit back, sent in one Flow at half the queue
            taken = self._permits_to_flow = self._permits_to_flow + 1
            if taken >= self._flow_threshold:
                self._permits_to_flow = 0
                self._send_flow(taken)

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
        if self._unacked_where:
            self._untrack_unacked(position, max(index, 0))
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
        """Ask for redelivery of the message's entry after ``negative_ack_redelivery_delay_ms``.

        Nacks falling due at the same instant go in ONE redelivery request, each entry once, as the C++ client's
        ``NegativeAcksTracker`` groups them (a map keyed by entry id, one ``std::set`` per timer tick): two nacks
        of two copies of one entry (a duplicate delivery) are one request, not two. Two requests would make the
        broker redeliver the copy the first one just resent, though the application may have acknowledged it.
        """
        self._check_open("negative_acknowledge")
        msg_id = message.message_id() if isinstance(message, ModelMessage) else message
        position = msg_id.position
        if self._unacked_where:
            self._untrack_unacked(position, max(msg_id.batch, 0))
        connection = self._connection
        clock = self._broker.clock
        due_ns = clock.now_ns() + int(self.negative_ack_redelivery_delay_ms * NS_PER_MS)
        nacks = self._nacks
        bucket = nacks.get((connection, due_ns))
        if bucket is not None:
            bucket[position] = None
            return
        bucket = nacks[(connection, due_ns)] = {position: None}

        def redeliver() -> None:
            del nacks[(connection, due_ns)]
            if self.state == "open" and self._connection == connection and self.server_subscription is not None:
                dispatcher = self.server_subscription.dispatcher
                assert self.server is not None
                positions = self._without_dead(list(bucket))
                if dispatcher is not None and positions:
                    dispatcher.redeliver(self.server, positions)

        clock.call_at(due_ns, redeliver)

    def redeliver_unacknowledged_messages(self) -> None:
        """Ask the broker to redeliver every entry pending at this consumer (the queue is kept)."""
        self._check_open("redeliver_unacknowledged_messages")
        assert self.server_subscription is not None and self.server is not None
        self._clear_unacked()
        dispatcher = self.server_subscription.dispatcher
        if dispatcher is not None:
            dispatcher.redeliver(self.server, None)

    def close(self) -> None:
        """Close: the broker removes the consumer now and redelivers its pending messages to others."""
        if self.state in ("closed", "crashed"):
            return
        self.state = "closed"
        self._queue.clear()
        self._clear_unacked()
        self._broker._consumer_closed(self)

    def crash(self) -> None:
        """Kill the client: nothing more is received or sent; the broker notices after the detection delay."""
        if self.state in ("closed", "crashed"):
            return
        self.state = "crashed"
        self._queue.clear()
        self._clear_unacked()
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
        self._socket.clear()
        self._batch_unacked.clear()
        self._clear_unacked()
        self._permits_to_flow = 0
        connection = self._connection
        queue = self._queue
        topic = self._topic

        def sink(entry: Entry, redelivery_count: int) -> None:
            if self.state != "open" or self._connection != connection:
                return
            if self._stalled:
                self._socket.append((entry, redelivery_count))  # written, backed up in the socket, unread
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
        if self._stalled and subscription.dispatcher is not None:
            subscription.dispatcher.stall_connection(server)
        if self.receiver_queue_size > 0:
            self._send_flow(self.receiver_queue_size)

    # -- a socket the client stops reading (TCP back-pressure) ---------------------------------------------
    def stall_connection(self) -> None:
        """The client stops reading its connection: the broker's writes back up unread; permits stay as they are.

        ``KeySharedSlowConsumerTest`` turns the client channel's auto-read off; the driver does it for a real
        broker with a proxy that stops forwarding the broker's bytes (``docs/targets.md``).
        """
        self._check_open("stall_connection")
        self._stalled = True
        subscription = self.server_subscription
        if self.server is not None and subscription is not None and subscription.dispatcher is not None:
            subscription.dispatcher.stall_connection(self.server)

    def resume_connection(self) -> None:
        """The client reads again: what backed up arrives in order, then the broker learns the socket drained."""
        self._check_open("resume_connection")
        self._stalled = False
        backed_up, self._socket = self._socket, deque()
        for entry, redelivery_count in backed_up:
            self._entry_received(entry, redelivery_count)
        subscription = self.server_subscription
        if self.server is not None and subscription is not None and subscription.dispatcher is not None:
            subscription.dispatcher.connection_writable(self.server)

    @property
    def connection_stalled(self) -> bool:
        return self._stalled

    def _entry_received(self, entry: Entry, redelivery_count: int) -> None:
        if entry.is_batch:
            self._batch_unacked[entry.position] = set(range(entry.batch_size))
        topic = self._topic
        for i in range(entry.batch_size):
            self._queue.append(ModelMessage(entry, i, topic, redelivery_count))
        if self.receiver_queue_size == 0 and self._permits_to_flow < 0:
            self._permits_to_flow = 0

    # -- the ack-timeout tracker (UnAckedMessageTrackerEnabled) ---------------------------------------------
    def _track_unacked(self, position: Position, index: int) -> None:
        item = (position, index)
        where = self._unacked_where
        old = where.get(item)
        if old is not None:
            old.discard(item)
        newest = self._unacked_partitions[-1]
        newest.add(item)
        where[item] = newest
        if not self._unacked_ticking:
            self._unacked_ticking = True
            self._broker.clock.call_later(UNACKED_TICK_MS, self._unacked_tick)

    def _untrack_unacked(self, position: Position, index: int) -> None:
        partition = self._unacked_where.pop((position, index), None)
        if partition is not None:
            partition.discard((position, index))

    def _clear_unacked(self) -> None:
        for partition in self._unacked_partitions:
            partition.clear()
        self._unacked_where.clear()

    def _unacked_tick(self) -> None:
        """Pop the oldest partition and ask for its entries again; tick on while anything is tracked."""
        partitions = self._unacked_partitions
        expired = partitions.popleft()
        partitions.append(set())
        for item in expired:
            self._unacked_where.pop(item, None)
        if expired and self.state == "open" and self.server_subscription is not None and self.server is not None:
            self._redeliver_timed_out(sorted({position for position, _ in expired}))
        if self._unacked_where:
            self._broker.clock.call_later(UNACKED_TICK_MS, self._unacked_tick)
        else:
            self._unacked_ticking = False

    def _redeliver_timed_out(self, positions: list[Position]) -> None:
        """``redeliverUnacknowledgedMessages(ids)``: the broker takes back these entries (Shared/Key_Shared)."""
        assert self.server_subscription is not None and self.server is not None
        dispatcher = self.server_subscription.dispatcher
        positions = self._without_dead(positions)
        if dispatcher is not None and positions:
            dispatcher.redeliver(self.server, positions)

    def _without_dead(self, positions: list[Position]) -> list[Position]:
        """``positions`` but the dead-letter candidates among them, which are routed to the dead-letter topic."""
        candidates = self._dead_candidates
        if not candidates:
            return positions
        kept = []
        for position in positions:
            messages = candidates.pop(position, None)
            if messages is None:
                kept.append(position)
            else:
                self._route_dead(messages)
        return kept

    def _route_dead(self, messages: list[ModelMessage]) -> None:
        """Publish ``messages`` to the dead-letter topic and acknowledge each once its send is receipted."""
        assert self.dead_letter is not None
        if self._dead_producer is None:
            self._dead_producer = self._broker.create_producer(
                self.dead_letter[1], producer_name=f"{self._subscription_name}-{self._name}-DLQ"
            )
        connection = self._connection
        for msg in messages:
            properties = dict(msg.properties())
            properties["REAL_TOPIC"] = self._topic
            properties["ORIGIN_MESSAGE_ID"] = str(msg.message_id())

            def sent(result: object, _msg_id: object, msg: ModelMessage = msg) -> None:
                if str(result) == "Ok" and self.state == "open" and self._connection == connection:
                    self.acknowledge(msg)

            self._dead_producer.send_async(
                msg.data(), sent, properties=properties, partition_key=msg.partition_key() or None
            )

    def _send_flow(self, permits: int) -> None:
        if self.server is not None and self.server_subscription is not None:
            self.server_subscription.flow(self.server, permits)

    def __repr__(self) -> str:
        return (
            f"ModelConsumer({self._name!r}#{self.consumer_id}, {self._subscription_name!r}, {self.state},"
            f" prefetched={len(self._queue)})"
        )
