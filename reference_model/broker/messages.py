"""Message ids and received messages, with the method names of the ``pulsar`` Python client.

``ModelMessageId`` mirrors ``pulsar.MessageId`` (``ledger_id()``, ``entry_id()``, ``batch_index()``,
``partition()``): a non-batched message has batch index -1, a non-partitioned topic partition -1, and a send
dropped by deduplication answers ``(-1, -1)``. ``ModelMessage`` mirrors ``pulsar.Message``; like the C++-based
client, ``partition_key()`` and ``ordering_key()`` return ``""`` when the message has none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import total_ordering

from reference_model.storage._fast_init import fast_frozen_init
from reference_model.storage.entry import Entry
from reference_model.storage.position import Position

__all__ = ["DUPLICATE_MESSAGE_ID", "ModelMessage", "ModelMessageId"]


@total_ordering
@fast_frozen_init
@dataclass(frozen=True, slots=True)
class ModelMessageId:
    """``(ledger_id, entry_id, partition, batch_index)``, ordered as Pulsar orders message ids."""

    ledger: int
    entry: int
    partition_index: int = -1
    batch: int = -1

    def ledger_id(self) -> int:
        return self.ledger

    def entry_id(self) -> int:
        return self.entry

    def partition(self) -> int:
        return self.partition_index

    def batch_index(self) -> int:
        return self.batch

    @property
    def position(self) -> Position:
        """The entry this message lives in."""
        return Position(self.ledger, self.entry)

    def as_tuple(self) -> tuple[int, int, int, int]:
        return (self.ledger, self.entry, self.partition_index, self.batch)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, ModelMessageId):
            return NotImplemented
        return (self.ledger, self.entry, self.batch) < (other.ledger, other.entry, other.batch)

    def __str__(self) -> str:
        return f"({self.ledger},{self.entry},{self.partition_index},{self.batch})"


#: What a send dropped by deduplication returns (``completed(null, -1, -1)``).
DUPLICATE_MESSAGE_ID = ModelMessageId(-1, -1)


@fast_frozen_init
@dataclass(frozen=True, slots=True, eq=False)
class ModelMessage:
    """One received message: the ``pulsar.Message`` surface plus the entry it came from."""

    entry: Entry
    index: int
    topic: str
    redeliveries: int = 0

    def message_id(self) -> ModelMessageId:
        batch = self.index if self.entry.is_batch else -1
        return ModelMessageId(self.entry.position.ledger_id, self.entry.position.entry_id, -1, batch)

    def data(self) -> bytes:
        return self.entry.messages[self.index].payload

    def value(self) -> bytes:
        return self.data()

    def properties(self) -> Mapping[str, str]:
        return self.entry.messages[self.index].properties_dict()

    def partition_key(self) -> str:
        key = self.entry.messages[self.index].partition_key
        return "" if key is None else key

    def ordering_key(self) -> str:
        key = self.entry.messages[self.index].ordering_key
        return "" if key is None else key.decode("utf-8", "replace")

    def ordering_key_bytes(self) -> bytes | None:
        return self.entry.messages[self.index].ordering_key

    def redelivery_count(self) -> int:
        return self.redeliveries

    def producer_name(self) -> str:
        return self.entry.metadata.producer_name

    def sequence_id(self) -> int:
        return self.entry.messages[self.index].sequence_id

    def topic_name(self) -> str:
        return self.topic

    def publish_timestamp(self) -> int:
        """Milliseconds since the epoch of the simulated clock."""
        return self.entry.metadata.publish_time_ns // 1_000_000

    def event_timestamp(self) -> int:
        return self.entry.messages[self.index].event_timestamp

    @property
    def sticky_key(self) -> bytes:
        """The bytes the broker routed this message's entry by (a batch: its first message's key)."""
        return self.entry.sticky_key

    def __repr__(self) -> str:
        return (
            f"ModelMessage({self.message_id()}, key={self.partition_key() or self.ordering_key()!r},"
            f" seq={self.sequence_id()}, redeliveries={self.redeliveries})"
        )
