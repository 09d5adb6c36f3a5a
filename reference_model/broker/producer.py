"""The client side of a producer: sequence ids, batching (default and key-based), receipts.

Follows the C++ client that the Python ``pulsar-client`` wraps (``ProducerImpl``, ``BatchMessageContainer``,
``BatchMessageKeyBasedContainer``) and the Python binding's argument handling:

* Sequence ids: the next id is ``last + 1``, where ``last`` starts at ``initial_sequence_id`` or, without one,
  at the ``last_sequence_id`` the broker answers on connect (deduplication on; -1 otherwise). An explicit
  ``send(..., sequence_id=x)`` is used as given. The Python binding drops falsy values (``sequence_id=0``,
  ``initial_sequence_id=0``, ``partition_key=""``, ``ordering_key=""``) as if absent (``if x:``).
* Batching is off by default in Python. When on, messages collect until ``batching_max_messages``,
  ``batching_max_allowed_size_in_bytes`` or ``batching_max_publish_delay_ms`` after the first, or a flush.
  A default batch is one entry routed by its *first* message's keys; key-based batching groups by ordering
  key, else partition key, and sends the groups sorted by their first sequence id. A batch is sent with its
  first message's sequence id and no ``highest_sequence_id`` (what the C++ client does).
* ``send`` blocks until the receipt (with batching: until the batch is flushed, advancing the simulated
  clock); ``send_async`` returns at once and calls ``callback(result, message_id)`` later.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from reference_model.broker.errors import AlreadyClosed, BrokerClientError, SendTimeout
from reference_model.broker.messages import ModelMessageId
from reference_model.broker.storage_outage import WritePending
from reference_model.errors import InvalidArgument, did_you_mean
from reference_model.storage.entry import Entry, MessageMetadata, SingleMessage

if TYPE_CHECKING:
    from reference_model.broker.clock import Timer
    from reference_model.broker.model_broker import ModelBroker
    from reference_model.broker.topic import ServerTopic

__all__ = ["BATCHING_TYPES", "ModelProducer", "SendCallback"]

BATCHING_TYPES: tuple[str, ...] = ("Default", "KeyBased")

# The records' constructors called directly, without ``type.__call__``: every send builds three of them
# (see ``reference_model/storage/_fast_init.py``).
_new_message: Callable[..., SingleMessage] = SingleMessage.__new__
_new_metadata: Callable[..., MessageMetadata] = MessageMetadata.__new__
_new_message_id: Callable[..., ModelMessageId] = ModelMessageId.__new__

#: ``callback(result, message_id)``: result ``"Ok"`` or the error's ``pulsar_name``; id ``None`` on error.
SendCallback = Callable[[str, ModelMessageId | None], None]


@dataclass(slots=True)
class _Pending:
    message: SingleMessage
    callback: SendCallback
    size: int


def _normalise_batching_type(value: object) -> str:
    name = getattr(value, "name", value)
    if isinstance(name, str):
        for known in BATCHING_TYPES:
            if name.replace("_", "").lower() == known.lower():
                return known
    raise InvalidArgument(
        f"Expected a batching type but got batching_type={value!r}."
        f"{did_you_mean(str(name), BATCHING_TYPES)} Choices: {', '.join(BATCHING_TYPES)}."
    )


class ModelProducer:
    """A producer of the model broker, with the ``pulsar.Producer`` method names."""

    def __init__(
        self,
        broker: ModelBroker,
        *,
        topic: str,
        producer_name: str,
        producer_id: int,
        initial_sequence_id: int | None,
        batching_enabled: bool,
        batching_type: object,
        batching_max_messages: int,
        batching_max_allowed_size_in_bytes: int,
        batching_max_publish_delay_ms: int,
        send_timeout_millis: int = 30_000,
    ) -> None:
        self._broker = broker
        self._topic = topic
        self._name = producer_name
        self.producer_id = producer_id
        self.batching_enabled = bool(batching_enabled)
        self.batching_type = _normalise_batching_type(batching_type)
        for label, value in (
            ("batching_max_messages", batching_max_messages),
            ("batching_max_allowed_size_in_bytes", batching_max_allowed_size_in_bytes),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidArgument(f"{label} must be an int >= 1 but got {label}={value!r}.")
        if batching_max_publish_delay_ms < 0:
            raise InvalidArgument(
                f"batching_max_publish_delay_ms must be >= 0 but got {batching_max_publish_delay_ms!r}."
            )
        self.batching_max_messages = batching_max_messages
        self.batching_max_bytes = batching_max_allowed_size_in_bytes
        self.batching_max_publish_delay_ms = batching_max_publish_delay_ms
        if isinstance(send_timeout_millis, bool) or not isinstance(send_timeout_millis, int) or send_timeout_millis < 0:
            raise InvalidArgument(f"send_timeout_millis must be an int >= 0 but got {send_timeout_millis!r}.")
        #: how long ``send`` waits for its receipt (0: for ever), as the client's ``sendTimeout``
        self.send_timeout_ms = send_timeout_millis
        # the Python binding ignores a falsy initial id
        self._initial_sequence_id = initial_sequence_id if initial_sequence_id else None
        self._last_sequence_id = -1 if self._initial_sequence_id is None else self._initial_sequence_id
        self._next_sequence_id = self._last_sequence_id + 1
        self._pending: list[_Pending] = []
        self._pending_bytes = 0
        self._batch_timer: Timer | None = None
        #: the broker's topic this producer writes to (set on connect; topics are never deleted)
        self._server: ServerTopic | None = None
        self.state = "open"
        self.sent_entries = 0
        self._last_error: BrokerClientError = BrokerClientError("no send failed yet")

    # -- pulsar.Producer surface ---------------------------------------------------------------------------
    def topic(self) -> str:
        return self._topic

    def producer_name(self) -> str:
        return self._name

    def last_sequence_id(self) -> int:
        """The highest sequence id published and acknowledged by the broker (-1 if none)."""
        return self._last_sequence_id

    def is_connected(self) -> bool:
        return self.state == "open"

    def send(
        self,
        content: bytes,
        properties: Mapping[str, str] | None = None,
        partition_key: str | None = None,
        ordering_key: str | bytes | None = None,
        sequence_id: int | None = None,
        event_timestamp: int | None = None,
        deliver_after: timedelta | None = None,
        deliver_at: int | None = None,
        **unsupported: Any,
    ) -> ModelMessageId:
        """Publish and wait for the receipt; a duplicate dropped by deduplication returns id ``(-1, -1)``.

        A receipt that does not come within ``send_timeout_millis`` (a write in flight while the storage is down)
        raises :class:`SendTimeout`; the write may still complete later, as with a real client.
        """
        outcome: list[tuple[str, ModelMessageId | None]] = []
        self.send_async(
            content,
            lambda result, msg_id: outcome.append((result, msg_id)),
            properties,
            partition_key,
            ordering_key,
            sequence_id,
            event_timestamp,
            deliver_after,
            deliver_at,
            **unsupported,
        )
        if not outcome:
            self._broker.clock.advance_until(lambda: bool(outcome), self.send_timeout_ms or None)
        if not outcome:
            self.flush()
        if not outcome:
            raise SendTimeout(f"Producer {self._name!r}: no receipt within send_timeout_millis={self.send_timeout_ms}.")
        result, msg_id = outcome[0]
        if result != "Ok" or msg_id is None:
            raise self._last_error
        return msg_id

    def send_async(
        self,
        content: bytes,
        callback: SendCallback,
        properties: Mapping[str, str] | None = None,
        partition_key: str | None = None,
        ordering_key: str | bytes | None = None,
        sequence_id: int | None = None,
        event_timestamp: int | None = None,
        deliver_after: timedelta | None = None,
        deliver_at: int | None = None,
        **unsupported: Any,
    ) -> None:
        """Publish without waiting; ``callback(result, message_id)`` runs when the receipt arrives.

        ``deliver_after`` (a ``timedelta``) or ``deliver_at`` (ms on the broker's clock) set the message's delivery
        time, as ``pulsar-client`` does; such a message is never batched (the C++ client's ``canAddToBatch``
        refuses it): what the container holds is flushed first and it goes alone.
        """
        if self.state != "open":
            self._check_open("send")
        if unsupported:
            raise InvalidArgument(f"send() options {sorted(unsupported)} are not modelled (replication clusters).")
        deliver_at_ns = 0
        if deliver_after is not None or deliver_at is not None:
            deliver_at_ns = self._deliver_at_ns(deliver_after, deliver_at)
        if type(content) is not bytes:
            if not isinstance(content, (bytes, bytearray)):
                raise InvalidArgument(f"Expected bytes for content but got {type(content).__name__}.")
            content = bytes(content)
        if sequence_id:  # Python's `if sequence_id:`: 0 and None mean "not set"
            seq = int(sequence_id)
        else:
            seq = self._next_sequence_id
            self._next_sequence_id = seq + 1
        okey = ordering_key.encode() if isinstance(ordering_key, str) else ordering_key
        message = _new_message(
            SingleMessage,
            content,
            seq,
            partition_key or None,
            okey or None,
            tuple(sorted((str(k), str(v)) for k, v in properties.items())) if properties else (),
            event_timestamp or 0,
        )
        if deliver_at_ns:
            self.flush()
            self._publish_one(message, callback, deliver_at_ns)
            return
        if not self.batching_enabled:
            self._publish_one(message, callback)
            return
        size = len(message.payload)
        if self._pending and (
            len(self._pending) + 1 > self.batching_max_messages or self._pending_bytes + size > self.batching_max_bytes
        ):
            self.flush()
        self._pending.append(_Pending(message, callback, size))
        self._pending_bytes += size
        if len(self._pending) >= self.batching_max_messages or self._pending_bytes >= self.batching_max_bytes:
            self.flush()
        elif self._batch_timer is None:
            self._batch_timer = self._broker.clock.call_later(self.batching_max_publish_delay_ms, self.flush)

    def flush(self) -> None:
        """Send what the batch container holds now."""
        if self._batch_timer is not None:
            self._batch_timer.cancel()
            self._batch_timer = None
        if not self._pending:
            return
        pending, self._pending, self._pending_bytes = self._pending, [], 0
        if self.batching_type == "KeyBased":
            groups: dict[str | bytes | None, list[_Pending]] = {}
            for item in pending:
                key = item.message.ordering_key or item.message.partition_key or None
                groups.setdefault(key, []).append(item)
            for group in sorted(groups.values(), key=lambda g: g[0].message.sequence_id):
                self._publish(group, batched=True)
        else:
            self._publish(pending, batched=True)

    def send_batch_with_ids(
        self,
        messages: Sequence[tuple[bytes, Mapping[str, str], str | None, int]],
        *,
        sequence_id: int,
        highest_sequence_id: int,
    ) -> list[tuple[str, ModelMessageId | None]]:
        """Send ``messages`` (``(content, properties, partition_key, sequence_id)`` each) as one batch whose send
        carries ``sequence_id`` and ``highest_sequence_id``, as a protocol client that sets a batch's highest id does
        (Java's; the C++ client behind ``pulsar-client`` never does, see :mod:`reference_model.dedup.client_batching`),
        and wait for the receipts as :meth:`send` does.  Returns ``(result, message id)`` per message: ``"Ok"`` with
        the id (``-1:-1`` for a duplicate), the error's name, or ``"Timeout"`` when no receipt came in time."""
        if self.state != "open":
            self._check_open("send")
        if not messages:
            raise InvalidArgument("send_batch_with_ids needs at least one message.")
        check_int = self._check_send_id
        check_int("sequence_id", sequence_id)
        check_int("highest_sequence_id", highest_sequence_id)
        self.flush()
        outcome: dict[int, tuple[str, ModelMessageId | None]] = {}
        items = []
        for index, (content, properties, partition_key, seq) in enumerate(messages):
            check_int("sequence_id", seq)
            props = tuple(sorted((str(k), str(v)) for k, v in properties.items()))
            message = SingleMessage(bytes(content), seq, partition_key or None, None, props, 0)

            def done(result: str, msg_id: ModelMessageId | None, index: int = index) -> None:
                outcome[index] = (result, msg_id)

            items.append(_Pending(message, done, len(message.payload)))
        self._publish(items, batched=True, send_ids=(sequence_id, highest_sequence_id))
        if len(outcome) < len(items):
            self._broker.clock.advance_until(lambda: len(outcome) == len(items), self.send_timeout_ms or None)
        return [outcome.get(index, ("Timeout", None)) for index in range(len(items))]

    @staticmethod
    def _check_send_id(name: str, value: object) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvalidArgument(f"{name} must be an int >= 0 but got {name}={value!r}.")

    def close(self) -> None:
        """Flush what is pending, then close."""
        if self.state != "open":
            return
        self.flush()
        self.state = "closed"
        self._broker._producer_closed(self)

    # -- publishing ----------------------------------------------------------------------------------------
    def _deliver_at_ns(self, deliver_after: timedelta | None, deliver_at: int | None) -> int:
        """The delivery time on the broker's clock (ns) of ``deliver_after`` or ``deliver_at`` (ms)."""
        if deliver_after is not None:
            if not isinstance(deliver_after, timedelta):
                raise InvalidArgument(f"Expected a timedelta for deliver_after but got {type(deliver_after).__name__}.")
            return self._broker.clock.now_ns() + max(0, int(deliver_after.total_seconds() * 1000)) * 1_000_000
        if isinstance(deliver_at, bool) or not isinstance(deliver_at, int):
            raise InvalidArgument(f"Expected milliseconds (int) for deliver_at but got {type(deliver_at).__name__}.")
        return max(1, deliver_at * 1_000_000)

    def _publish_one(self, message: SingleMessage, callback: SendCallback, deliver_at_ns: int = 0) -> None:
        """A non-batched send: one message, one entry, one receipt (the common case, kept free of lists)."""
        seq = message.sequence_id
        metadata = _new_metadata(
            MessageMetadata,
            self._name,
            seq,
            self._broker.clock._now_ns,
            message.partition_key,
            False,
            message.ordering_key,
        )
        if deliver_at_ns:
            metadata = replace(metadata, deliver_at_ns=deliver_at_ns)
        try:
            server = self._server
            entry = (server.publish if server is not None else self._broker._topic(self._topic).publish)(
                metadata, (message,)
            )
        except BrokerClientError as exc:
            self._last_error = exc
            callback(exc.pulsar_name, None)
            return
        except WritePending as pending:
            pending.write.listeners.append(lambda error, written: self._single_outcome(seq, callback, error, written))
            return
        self._single_outcome(seq, callback, None, entry)

    def _single_outcome(
        self,
        seq: int,
        callback: SendCallback,
        error: BrokerClientError | None,
        entry: Entry | None,
    ) -> None:
        """The receipt of a non-batched send: an error, the duplicate id ``-1:-1`` (no entry), or the entry's id."""
        if error is not None:
            self._last_error = error
            callback(error.pulsar_name, None)
            return
        self.sent_entries += 1
        if seq > self._last_sequence_id:
            self._last_sequence_id = seq
        if entry is None:
            callback("Ok", ModelMessageId(-1, -1, -1, -1))
        else:
            position = entry.position
            callback("Ok", _new_message_id(ModelMessageId, position[0], position[1], -1, -1))

    def _publish(self, items: list[_Pending], *, batched: bool, send_ids: tuple[int, int] | None = None) -> None:
        """One entry of ``items``: sent under the first message's id (the C++ client), or ``send_ids``
        ``(sequence_id, highest_sequence_id)`` when given (:meth:`send_batch_with_ids`)."""
        first = items[0].message
        metadata = MessageMetadata(
            producer_name=self._name,
            sequence_id=first.sequence_id if send_ids is None else send_ids[0],
            publish_time_ns=self._broker.clock.now_ns(),
            partition_key=first.partition_key,
            ordering_key=first.ordering_key,
            num_messages_in_batch=len(items) if batched else None,
            highest_sequence_id=-1 if send_ids is None else send_ids[1],
        )
        try:
            entry = self._broker._publish(self._topic, metadata, tuple(i.message for i in items))
        except BrokerClientError as exc:
            self._batch_outcome(items, first, exc, None, batched=batched)
            return
        except WritePending as pending:
            pending.write.listeners.append(
                lambda error, written: self._batch_outcome(items, first, error, written, batched=batched)
            )
            return
        self._batch_outcome(items, first, None, entry, batched=batched)

    def _batch_outcome(
        self,
        items: list[_Pending],
        first: SingleMessage,
        error: BrokerClientError | None,
        entry: Entry | None,
        *,
        batched: bool,
    ) -> None:
        """The receipts of one entry's messages: each gets the error, or its id in the entry (``-1`` if dropped)."""
        if error is not None:
            self._last_error = error
            for item in items:
                item.callback(error.pulsar_name, None)
            return
        self.sent_entries += 1
        # the C++ client's own last id: first + count - 1 when the receipt echoes the first id
        self._last_sequence_id = max(self._last_sequence_id, first.sequence_id + len(items) - 1)
        for index, item in enumerate(items):
            batch_index = index if batched else -1
            if entry is None:
                msg_id = ModelMessageId(-1, -1, -1, batch_index)
            else:
                msg_id = ModelMessageId(entry.position.ledger_id, entry.position.entry_id, -1, batch_index)
            item.callback("Ok", msg_id)

    def _connected(self, last_sequence_id_from_broker: int) -> None:
        """``ProducerSuccess``: adopt the broker's last id when the client has none of its own."""
        self.state = "open"
        if self._initial_sequence_id is None and self._last_sequence_id == -1 and last_sequence_id_from_broker >= 0:
            self._last_sequence_id = last_sequence_id_from_broker
            self._next_sequence_id = last_sequence_id_from_broker + 1

    def _check_open(self, what: str) -> None:
        if self.state != "open":
            raise AlreadyClosed(f"Producer {self._name!r} on {self._topic!r} is {self.state}; {what}() needs it open.")

    def __repr__(self) -> str:
        return f"ModelProducer({self._name!r}, {self._topic!r}, next_seq={self._next_sequence_id}, {self.state})"
