"""An entry of a topic: the metadata the broker reads, and the messages a client unpacks from it.

Follows ``org.apache.pulsar.common.api.proto.MessageMetadata`` (entry level, what the broker reads) and
``SingleMessageMetadata`` (per message inside a batch, which the broker never reads). The broker routes,
deduplicates and tracks *entries*: a batch is one entry, routed by the keys of its first message
(``Commands.initBatchMessageMetadata`` copies them), acknowledged and redelivered as a whole.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from reference_model.storage._fast_init import fast_frozen_init
from reference_model.storage.position import Position

__all__ = ["Entry", "MessageMetadata", "SingleMessage"]


@fast_frozen_init
@dataclass(frozen=True, slots=True)
class MessageMetadata:
    """Entry-level metadata as the broker sees it (``MessageMetadata``).

    ``num_messages_in_batch`` is ``None`` for a non-batched message. ``highest_sequence_id`` is -1 when the
    field is absent (the C++ and Python clients never set it). ``marker_type`` is set only on marker entries
    (``PulsarMarkers.MarkerType``: 10..13 replicated-subscription markers), written by the broker itself.
    """

    producer_name: str
    sequence_id: int
    publish_time_ns: int = 0
    partition_key: str | None = None
    partition_key_b64_encoded: bool = False
    ordering_key: bytes | None = None
    num_messages_in_batch: int | None = None
    highest_sequence_id: int = -1
    marker_type: int | None = None
    replicate_to: tuple[str, ...] | None = None
    replicated_from: str | None = None
    #: ``deliverAtTime`` (delayed delivery, PIP-26) on the broker's clock, in ns; 0: absent (deliver at once)
    deliver_at_ns: int = 0


@fast_frozen_init
@dataclass(frozen=True, slots=True)
class SingleMessage:
    """One message as the application sees it: payload, properties, keys and its own sequence id."""

    payload: bytes
    sequence_id: int
    partition_key: str | None = None
    ordering_key: bytes | None = None
    properties: tuple[tuple[str, str], ...] = ()
    event_timestamp: int = 0

    def properties_dict(self) -> dict[str, str]:
        return dict(self.properties)


@fast_frozen_init
@dataclass(frozen=True, slots=True, eq=False)
class Entry:
    """One ledger entry: a non-batched message, a whole batch, or a marker.

    ``sticky_key`` is the byte string the Key_Shared dispatcher hashes, resolved once at append time with the
    broker's version rules (``EntryAndMetadata.getStickyKey``, cached there too). Identity is the position.
    """

    position: Position
    metadata: MessageMetadata
    messages: tuple[SingleMessage, ...]
    sticky_key: bytes
    marker_payload: Mapping[str, object] | None = field(default=None)
    #: messages in the entry: what the broker charges against a consumer's permits (derived, not an argument)
    batch_size: int = field(init=False, compare=False)

    def __post_init__(self) -> None:
        _set_batch_size(self, len(self.messages))

    @property
    def is_batch(self) -> bool:
        return self.metadata.num_messages_in_batch is not None

    @property
    def is_marker(self) -> bool:
        return self.metadata.marker_type is not None

    def __repr__(self) -> str:
        kind = "marker" if self.is_marker else f"{self.batch_size} msg"
        return f"Entry({self.position}, {self.metadata.producer_name}#{self.metadata.sequence_id}, {kind})"


_set_batch_size = Entry.__dict__["batch_size"].__set__  # the slot's descriptor: see ``_fast_init``
