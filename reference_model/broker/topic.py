"""A persistent topic on the model broker: its log, subscriptions, producers and deduplication state.

Follows ``PersistentTopic``: the publish path is producer -> deduplication decision (when in effect) -> append
to the log -> ``recordMessagePersisted`` -> every subscription's dispatcher reads. The sticky key of an entry is
resolved once at append, with the broker version's rules (``Commands.resolveStickyKey`` in 4.0, which falls back
to ``producerName-sequenceId`` for key-less messages; ``peekStickyKey`` in 3.x).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from reference_model.broker.errors import BrokerPersistenceError
from reference_model.broker.subscription import ServerSubscription
from reference_model.dedup import DedupDecision, MessageDeduplication, effective_deduplication
from reference_model.hashing import sticky_key
from reference_model.storage.cursor import ManagedCursor
from reference_model.storage.entry import Entry, MessageMetadata, SingleMessage
from reference_model.storage.position import Position
from reference_model.storage.topic_log import TopicLog

if TYPE_CHECKING:
    from reference_model.broker.model_broker import ModelBroker

__all__ = ["MARKER_PRODUCER_NAME", "ServerTopic"]

#: Producer name of marker entries (``Markers.newMessageMetadata``).
MARKER_PRODUCER_NAME = "pulsar.marker"


class ServerTopic:
    """One persistent topic. ``connected_producers`` maps producer name to producer id."""

    def __init__(self, broker: ModelBroker, name: str, ledger_id: int) -> None:
        self.broker = broker
        self.name = name
        self.log = TopicLog(name, ledger_id)
        self.subscriptions: dict[str, ServerSubscription] = {}
        self.connected_producers: dict[str, int] = {}
        self.topic_dedup_policy: bool | None = None
        self.dedup = MessageDeduplication(broker.config.dedup)
        self.msg_in_counter = 0
        self.bytes_in_counter = 0
        self.apply_dedup_policy()

    # -- deduplication -------------------------------------------------------------------------------------
    @property
    def namespace(self) -> str:
        body = self.name.split("://", 1)[-1]
        return "/".join(body.split("/")[:2])

    def dedup_effective(self) -> bool:
        return effective_deduplication(
            topic_policy=self.topic_dedup_policy,
            namespace_policy=self.broker.namespace_dedup_policy(self.namespace),
            broker_enabled=self.broker.config.dedup.broker_enabled,
            topic=self.name,
        )

    def apply_dedup_policy(self) -> None:
        """``checkStatus`` after a policy change: enable (fresh cursor at the end) or disable."""
        self.dedup.set_enabled(
            self.dedup_effective(), now_ns=self.broker.clock.now_ns(), cursor_position=self.log.last_position
        )

    # -- subscriptions -------------------------------------------------------------------------------------
    def get_or_create_subscription(self, name: str, *, initial_position: str, replicated: bool) -> ServerSubscription:
        sub = self.subscriptions.get(name)
        if sub is None:
            start = self.log.earliest if initial_position == "Earliest" else self.log.latest
            sub = ServerSubscription(self, name, ManagedCursor(self.log, name, start), replicated=replicated)
            self.subscriptions[name] = sub
        elif replicated and not sub.replicated:
            sub.replicated = True
        return sub

    # -- writing -------------------------------------------------------------------------------------------
    def _sticky_key(self, metadata: MessageMetadata) -> bytes:
        return sticky_key(
            metadata.ordering_key,
            metadata.partition_key,
            metadata.partition_key_b64_encoded,
            metadata.producer_name,
            metadata.sequence_id,
            self.broker.version,
        )

    def publish(
        self,
        metadata: MessageMetadata,
        messages: tuple[SingleMessage, ...],
        *,
        dedup_name: str | None = None,
    ) -> Entry | None:
        """Write one entry unless deduplication drops it; ``None`` means "duplicate" (receipt ``-1:-1``).

        Raises :class:`BrokerPersistenceError` when deduplication cannot decide yet (``Unknown``).
        """
        name = metadata.producer_name if dedup_name is None else dedup_name
        decision = self.dedup.is_duplicate(name, metadata.sequence_id, metadata.highest_sequence_id)
        if decision is DedupDecision.DUP:
            return None
        if decision is DedupDecision.UNKNOWN:
            raise BrokerPersistenceError(
                f"[{self.name}][{name}] Cannot determine whether the message is a duplicate at this time"
                f" (sequence id {metadata.sequence_id})."
            )
        entry = self._append(metadata, messages, None)
        self.dedup.on_persisted(
            name,
            metadata.sequence_id,
            metadata.highest_sequence_id,
            entry.position,
            now_ns=self.broker.clock.now_ns(),
        )
        self._entry_added(entry)
        return entry

    def write_marker(
        self, marker_type: int, payload: Mapping[str, object], replicate_to: list[str] | tuple[str, ...] | None
    ) -> Entry:
        """Append a marker entry (``Markers``): never delivered, excluded from deduplication."""
        metadata = MessageMetadata(
            producer_name=MARKER_PRODUCER_NAME,
            sequence_id=0,
            publish_time_ns=self.broker.clock.now_ns(),
            marker_type=marker_type,
            replicate_to=tuple(replicate_to) if replicate_to is not None else None,
        )
        entry = self._append(metadata, (), dict(payload))
        self._entry_added(entry)
        return entry

    def _append(
        self,
        metadata: MessageMetadata,
        messages: tuple[SingleMessage, ...],
        marker_payload: Mapping[str, object] | None,
    ) -> Entry:
        key = b"" if metadata.marker_type is not None else self._sticky_key(metadata)
        entry = self.log.append(metadata, messages, key, marker_payload)
        self.msg_in_counter += len(messages)
        self.bytes_in_counter += sum(len(m.payload) for m in messages)
        return entry

    def _entry_added(self, entry: Entry) -> None:
        self.broker.listeners.entry_added(self.name, entry)
        for sub in list(self.subscriptions.values()):
            sub.dispatch()

    # -- restart -------------------------------------------------------------------------------------------
    def reload(self, new_ledger_id: int) -> None:
        """Load the topic again after a broker restart: a new ledger, recovered dedup, cursors rewound."""
        snapshot = self.dedup.snapshot()
        self.log.roll_ledger(new_ledger_id)
        self.connected_producers.clear()
        self.dedup = MessageDeduplication(self.broker.config.dedup)
        if self.dedup_effective():
            start = snapshot.position if snapshot.exists and snapshot.position is not None else None
            after = self.log.entries_after(Position(*start)) if start is not None and start[0] >= 0 else list(self.log)
            self.dedup.recover(
                snapshot,
                [
                    (e.position, e.metadata.producer_name, e.metadata.sequence_id, e.metadata.highest_sequence_id)
                    for e in after
                    if not e.is_marker
                ],
            )
        else:
            self.dedup.set_enabled(False, now_ns=self.broker.clock.now_ns())
        for sub in self.subscriptions.values():
            sub.unload()

    def __repr__(self) -> str:
        return f"ServerTopic({self.name!r}, entries={len(self.log)}, subscriptions={list(self.subscriptions)})"
