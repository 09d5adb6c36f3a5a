"""The client surface the run loop needs, whatever is behind it (pulsar-client, a child process, the model).

A :class:`ConsumerHandle` receives :class:`Delivery` values and acknowledges them; a :class:`ProducerHandle`
sends one message at a time (or a batch) and reports a :class:`SendOutcome`.  Message identity travels in
properties: ``ks-uid`` (one per logical message: ``producer:seq``, shared by a retry), ``ks-seq`` and
``ks-key`` (the sticky key the driver computed, needed for keyless messages).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = [
    "BATCHING_MAX_BYTES",
    "BATCHING_MAX_MESSAGES",
    "BATCHING_MAX_PUBLISH_DELAY_MS",
    "PROP_KEY",
    "PROP_SEQ",
    "PROP_UID",
    "ConsumerHandle",
    "ConsumerSpec",
    "Delivery",
    "OutgoingMessage",
    "ProducerHandle",
    "SendOutcome",
    "delivery_from_message",
    "delivery_key",
    "format_msg_id",
]

PROP_UID = "ks-uid"
PROP_SEQ = "ks-seq"
PROP_KEY = "ks-key"
#: the client's ``batchingMaxBytes`` the driver's batching producers are created with (the clients' own default,
#: 128 KiB, set explicitly so that the trace header can name it: ``batching_max_bytes``, judged by
#: ``oversized_batch``)
BATCHING_MAX_BYTES = 128 * 1024
#: the ``batchingMaxMessages`` and ``batchingMaxPublishDelay`` (ms) of the driver's batching producers (in the
#: trace header as ``batching_max_messages`` and ``batching_max_publish_delay_ms``: ``batch_flushed_early``)
BATCHING_MAX_MESSAGES = 100
BATCHING_MAX_PUBLISH_DELAY_MS = 5


def format_msg_id(ledger: int, entry: int, partition: int = -1, batch_index: int = -1) -> str:
    """The trace's ``ledger:entry:partition:batch_index``."""
    return f"{ledger}:{entry}:{partition}:{batch_index}"


def delivery_key(
    ordering_key: str | None, partition_key: str | None, properties: Mapping[str, str], producer: str | None
) -> str:
    """The sticky key a Pulsar 4.0 broker dispatches on: ordering key, else partition key, else the
    ``producerName-sequenceId`` fallback (PR #23219) that the driver also stored as property ``ks-key``."""
    if ordering_key:
        return ordering_key
    if partition_key:
        return partition_key
    stored = properties.get(PROP_KEY)
    if stored:
        return stored
    return f"{producer or 'unknown'}-{properties.get(PROP_SEQ, '?')}"


@dataclass(frozen=True, slots=True)
class Delivery:
    """One message as the application received it.  ``token`` is the client's own message, for acks."""

    key: str
    msg_id: str
    uid: str | None
    redelivery_count: int
    producer: str | None = None
    seq: int | None = None
    #: the event time the message carries as received (``Message.event_timestamp()``; 0: none set)
    event_time: int = 0
    token: Any = field(default=None, compare=False, repr=False)


def delivery_from_message(msg: Any) -> Delivery:
    """``msg`` as the application received it: one rule for pulsar-client's ``Message`` and the model broker's,
    which has the same methods (``properties``, ``message_id``, ``producer_name``, ...)."""
    props = msg.properties() or {}
    mid = msg.message_id()
    producer = msg.producer_name() or None
    seq_text = props.get(PROP_SEQ)
    return Delivery(
        key=delivery_key(msg.ordering_key() or None, msg.partition_key() or None, props, producer),
        msg_id=format_msg_id(mid.ledger_id(), mid.entry_id(), mid.partition(), mid.batch_index()),
        uid=props.get(PROP_UID),
        redelivery_count=int(msg.redelivery_count()),
        producer=producer,
        seq=int(seq_text) if seq_text and seq_text.isdigit() else None,
        event_time=int(msg.event_timestamp() or 0),
        token=msg,
    )


@dataclass(frozen=True, slots=True)
class ConsumerSpec:
    """Everything needed to subscribe one consumer."""

    topic: str
    subscription: str
    name: str  #: consumer name sent to the broker
    mode: str  #: AUTO_SPLIT or STICKY
    allow_out_of_order_delivery: bool
    ranges: tuple[tuple[int, int], ...]
    receiver_queue: int
    nack_delay_ms: int
    #: the client's ack timeout (``unacked_messages_timeout_ms``); 0: off
    ack_timeout_ms: int = 0
    #: the client's dead-letter policy ``(max_redeliver_count, dead-letter topic)``; None: none.  A topic of None:
    #: the client's default, per partition of a partitioned topic (``<partition>-<subscription>-DLQ``)
    dead_letter: tuple[int, str | None] | None = None
    #: ``topic`` is a partitioned topic of this many partitions (0: not partitioned); the client subscribes to
    #: every partition (the model's client needs the count, a real client asks the broker)
    partitions: int = 0

    def policy(self) -> dict[str, Any]:
        """The ``policy`` extension field of the ``open`` event."""
        return {
            "key_shared_mode": self.mode,
            "allow_out_of_order_delivery": self.allow_out_of_order_delivery,
            "sticky_ranges": [list(r) for r in self.ranges] if self.ranges else None,
        }


@dataclass(frozen=True, slots=True)
class OutgoingMessage:
    """One message to send: its sticky key, where the key goes, and the identity the driver gives it."""

    key: str
    seq: int
    uid: str
    payload: bytes
    partition_key: str | None
    ordering_key: str | None
    properties: Mapping[str, str]
    #: sent without a sequence id: the client numbers it (``publish`` with ``sequence = "auto"``)
    auto_sequence: bool = False
    #: sent with ``deliver_after`` this many ms (delayed delivery); 0: delivered at once
    deliver_after_ms: int = 0


@dataclass(frozen=True, slots=True)
class SendOutcome:
    """What the client learnt about one send: ``ok`` with a message id, ``fail``, or ``info`` (unknown)."""

    result: str
    msg_id: str | None = None
    error: str | None = None
    t0: int = 0  #: ns when send was called (on the run's clock)
    #: the client's ``last_sequence_id()`` read right after an ``ok`` receipt of a send made one at a time (None:
    #: not read, as for the harness's protocol producer, whose count is its own)
    last_seq: int | None = None


class ConsumerHandle(Protocol):
    def receive(self, timeout_ms: int) -> Delivery | None: ...
    def acknowledge(self, delivery: Delivery) -> None: ...
    def negative_acknowledge(self, delivery: Delivery) -> None: ...
    def redeliver_unacknowledged(self) -> None: ...
    def close(self) -> None: ...
    def crash(self) -> None: ...
    def is_connected(self) -> bool | None:
        """Whether the client is on a broker now (None: it cannot tell)."""


SendCallback = Callable[[OutgoingMessage, SendOutcome], None]


class ProducerHandle(Protocol):
    name: str
    #: when its creation began (the run's clock, ns), and the last sequence id the broker answered it on connect as
    #: the client reports it right after (``last_sequence_id()``: -1 when the broker knows none)
    created_t0: int
    answered_sequence_id: int

    def send(self, message: OutgoingMessage) -> SendOutcome: ...
    def send_batch(
        self,
        messages: list[OutgoingMessage],
        on_done: SendCallback,
        timeout_s: float,
        between: Callable[[], None] | None = None,
    ) -> bool:
        """Pipelined sends; ``between`` is called after each send but the last (a publish step's ``spacing_ms``)."""
        ...

    def close(self) -> None: ...
    def is_connected(self) -> bool | None:
        """Whether the client is on a broker now (None: it cannot tell)."""
