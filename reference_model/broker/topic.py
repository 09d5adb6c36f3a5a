"""A persistent topic on the model broker: its log, subscriptions, producers and deduplication state.

Follows ``PersistentTopic``: the publish path is producer -> deduplication decision (when in effect) -> append
to the log -> ``recordMessagePersisted`` -> every subscription's dispatcher reads. The sticky key of an entry is
resolved once at append, with the broker version's rules (``Commands.resolveStickyKey`` in 4.0, which falls back
to ``producerName-sequenceId`` for key-less messages; ``peekStickyKey`` in 3.x).

A ``non-persistent://`` topic (``NonPersistentTopic``) keeps the same log only so that each entry has a position
the model's clients can name; nothing reads it back: each entry goes straight to every subscription's
non-persistent dispatcher (``publishMessage`` -> ``sendMessages``), and deduplication never applies.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from reference_model.broker.errors import BrokerPersistenceError
from reference_model.broker.storage_outage import PendingWrite, StorageOutage, WritePending
from reference_model.broker.subscription import ServerSubscription
from reference_model.dedup import DedupDecision, MessageDeduplication, effective_deduplication
from reference_model.dedup.deduplication import check_int
from reference_model.hashing import sticky_key
from reference_model.keyshared.nonpersistent import NonPersistentDispatcher
from reference_model.storage.cursor import ManagedCursor
from reference_model.storage.entry import Entry, MessageMetadata, SingleMessage
from reference_model.storage.position import Position
from reference_model.storage.topic_log import TopicLog

if TYPE_CHECKING:
    from reference_model.broker.model_broker import ModelBroker

__all__ = ["MARKER_PRODUCER_NAME", "ServerTopic"]

#: Producer name of marker entries (``Markers.newMessageMetadata``).
MARKER_PRODUCER_NAME = "pulsar.marker"
#: Bound of the partition key -> sticky key cache (cleared when full).
_KEY_CACHE_SIZE = 1 << 16
#: Fewest entries a trim drops at once (with ``trim_consumed_entries``): re-indexing what is kept is paid per batch.
_TRIM_BATCH = 4096


class ServerTopic:
    """One persistent topic. ``connected_producers`` maps producer name to producer id."""

    def __init__(self, broker: ModelBroker, name: str, ledger_id: int) -> None:
        self.broker = broker
        self.name = name
        self.log = TopicLog(name, ledger_id)
        #: ``False`` for a ``non-persistent://`` topic: entries are handed to the dispatchers, never read back
        self.persistent = not name.startswith("non-persistent://")
        self.subscriptions: dict[str, ServerSubscription] = {}
        self.connected_producers: dict[str, int] = {}
        self.topic_dedup_policy: bool | None = None
        self.dedup = MessageDeduplication(broker.config.dedup, broker.version)
        self.msg_in_counter = 0
        self.bytes_in_counter = 0
        self._partition_keys: dict[str, bytes] = {}
        #: ``dedup.enabled``, refreshed after every change of the deduplication status (only this class makes
        #: one: policy changes and reloads); read on every publish
        self._dedup_on = False
        #: ``config.trim_consumed_entries``: forget entries every cursor has marked deleted (:meth:`trim_consumed`)
        self.trims = broker.config.trim_consumed_entries
        #: the fewest entries a trim forgets (``config.trim_batch``, else :data:`_TRIM_BATCH`)
        self.trim_batch = broker.config.trim_batch or _TRIM_BATCH
        #: the storage failure in progress (``None`` while the storage takes writes; :meth:`storage_down`)
        self.outage: StorageOutage | None = None
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
            version=self.broker.version,
        )

    def apply_dedup_policy(self) -> None:
        """``checkStatus`` after a policy change: enable (fresh cursor at the end) or disable."""
        self.dedup.set_enabled(
            self.dedup_effective(), now_ns=self.broker.clock.now_ns(), cursor_position=self.log.last_position
        )
        self._dedup_on = self.dedup.enabled

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
        partition_key = metadata.partition_key
        if metadata.ordering_key is None and type(partition_key) is str and not metadata.partition_key_b64_encoded:
            # the key is the partition key's bytes, whatever the producer and sequence id: resolved once per key
            key = self._partition_keys.get(partition_key)
            if key is None:
                if len(self._partition_keys) >= _KEY_CACHE_SIZE:
                    self._partition_keys.clear()
                key = self._partition_keys[partition_key] = sticky_key(None, partition_key, version=self.broker.version)
            return key
        return sticky_key(
            metadata.ordering_key,
            partition_key,
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
        replicated: tuple[str, tuple[int, int]] | None = None,
    ) -> Entry | None:
        """Write one entry unless deduplication drops it; ``None`` means "duplicate" (receipt ``-1:-1``).

        ``replicated`` is ``(replicator producer name, source position)`` for a message a replicator sends: from
        apache/pulsar#23697 deduplication judges it by that position, before by the original producer name and id.
        Raises :class:`BrokerPersistenceError` when deduplication cannot decide yet (``Unknown``).
        """
        if self.outage is not None:
            return self._publish_while_down(metadata, messages, dedup_name, replicated)
        if not self._dedup_on:
            # deduplication off: every send is NOT_DUP and nothing is recorded (``isDuplicate`` and
            # ``recordMessagePersisted`` return at once), so this, the common path, skips both calls; the ids
            # are still checked as ``is_duplicate`` checks them, so bad input fails the same either way
            if metadata.sequence_id.__class__ is not int or metadata.highest_sequence_id.__class__ is not int:
                check_int("sequence_id", metadata.sequence_id)
                check_int("highest_sequence_id", metadata.highest_sequence_id)
            entry = self._append(metadata, messages, None)
            self._entry_added(entry)
            return entry
        decided = self._decide(metadata, dedup_name, replicated)
        if decided is None:
            return None
        return self._persist(metadata, messages, decided[0], decided[1])

    def _decide(
        self, metadata: MessageMetadata, dedup_name: str | None, replicated: tuple[str, tuple[int, int]] | None
    ) -> tuple[str, tuple[str, tuple[int, int]] | None] | None:
        """Deduplication's decision on a send (it is on): ``None`` for ``Dup``, else ``(name, source)`` to write
        with (the id is pushed now); ``Unknown`` raises :class:`BrokerPersistenceError`."""
        dedup = self.dedup
        name = metadata.producer_name if dedup_name is None else dedup_name
        source = replicated if replicated is not None and dedup.replicated_by_source_position else None
        if source is not None:
            decision = dedup.is_duplicate_replicated(source[0], source[1])
        else:
            decision = dedup.is_duplicate(name, metadata.sequence_id, metadata.highest_sequence_id)
        if decision is DedupDecision.DUP:
            return None
        if decision is DedupDecision.UNKNOWN:
            raise BrokerPersistenceError(
                f"[{self.name}][{name}] Cannot determine whether the message is a duplicate at this time"
                f" (sequence id {metadata.sequence_id})."
            )
        return name, source

    def _persist(
        self,
        metadata: MessageMetadata,
        messages: tuple[SingleMessage, ...],
        name: str,
        source: tuple[str, tuple[int, int]] | None,
    ) -> Entry:
        """Append a send deduplication let through, record it as persisted (``addComplete``), dispatch it."""
        entry = self._append(metadata, messages, None)
        if self._dedup_on:
            dedup = self.dedup
            if source is not None:
                dedup.on_persisted_replicated(source[0], source[1], entry.position, now_ns=self.broker.clock.now_ns())
            else:
                dedup.on_persisted(
                    name,
                    metadata.sequence_id,
                    metadata.highest_sequence_id,
                    entry.position,
                    now_ns=self.broker.clock.now_ns(),
                )
        self._entry_added(entry)
        return entry

    # -- storage failures ----------------------------------------------------------------------------------
    def storage_down(self, fail_after_ms: int) -> None:
        """The topic's storage stops taking writes: each write stays in flight, and fails ``fail_after_ms`` after
        the first one (see :mod:`reference_model.broker.storage_outage`). A no-op while already down."""
        if self.outage is None:
            self.outage = StorageOutage(self.broker.clock, fail_after_ms, self._write_failed)

    def storage_up(self) -> None:
        """The storage is back: the writes still in flight complete, oldest first."""
        outage, self.outage = self.outage, None
        if outage is None:
            return
        for write in outage.end():
            entry = self._persist(write.metadata, write.messages, write.dedup_name, write.source)
            write.settle(None, entry)

    def _write_failed(self) -> None:
        """``addFailed`` for every write in flight, then ``resetHighestSequenceIdPushed`` (none is left)."""
        if self._dedup_on:
            self.dedup.on_write_failed()

    def _publish_while_down(
        self,
        metadata: MessageMetadata,
        messages: tuple[SingleMessage, ...],
        dedup_name: str | None,
        replicated: tuple[str, tuple[int, int]] | None,
    ) -> Entry | None:
        """A send while the storage is down: judged as usual (a duplicate of a stored id is still ``-1:-1``, one of
        an id in flight ``Unknown``), then in flight: raises :class:`WritePending` for the caller to listen on."""
        outage = self.outage
        assert outage is not None
        name = metadata.producer_name if dedup_name is None else dedup_name
        source: tuple[str, tuple[int, int]] | None = None
        if self._dedup_on:
            decided = self._decide(metadata, dedup_name, replicated)
            if decided is None:
                return None
            name, source = decided
        else:
            check_int("sequence_id", metadata.sequence_id)
            check_int("highest_sequence_id", metadata.highest_sequence_id)
        write = PendingWrite(metadata, messages, name, source)
        outage.add(write)
        raise WritePending(write)

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
        return self.append_marker(metadata, payload)

    def append_marker(self, metadata: MessageMetadata, payload: Mapping[str, object]) -> Entry:
        """Append a marker entry with the given metadata (a local one, or one a replicator read elsewhere)."""
        entry = self._append(metadata, (), dict(payload))
        self._entry_added(entry)
        return entry

    def _append(
        self,
        metadata: MessageMetadata,
        messages: tuple[SingleMessage, ...],
        marker_payload: Mapping[str, object] | None,
    ) -> Entry:
        if metadata.marker_type is not None:
            key = b""
        else:
            partition_key = metadata.partition_key  # the cache of ``_sticky_key``, looked up here first
            cached = self._partition_keys.get(partition_key) if type(partition_key) is str else None
            if cached is not None and metadata.ordering_key is None and not metadata.partition_key_b64_encoded:
                key = cached
            else:
                key = self._sticky_key(metadata)
        entry = self.log.append(metadata, messages, key, marker_payload)
        self.msg_in_counter += len(messages)
        size = 0
        for message in messages:
            size += len(message.payload)
        self.bytes_in_counter += size
        return entry

    def _entry_added(self, entry: Entry) -> None:
        listeners = self.broker.listeners
        if listeners._listeners:
            listeners.entry_added(self.name, entry)
        subscriptions = self.subscriptions
        if subscriptions and not self.persistent:
            for sub in tuple(subscriptions.values()):
                np_dispatcher = sub.dispatcher
                if isinstance(np_dispatcher, NonPersistentDispatcher):
                    np_dispatcher.send_messages([entry])
            return
        if subscriptions:
            for sub in tuple(subscriptions.values()):
                dispatcher = sub.dispatcher  # ``sub.dispatch()``, inlined: this runs for every entry published
                if dispatcher is not None and dispatcher.consumers:
                    dispatcher.entries_added()

    # -- trimming ------------------------------------------------------------------------------------------
    def trim_floor(self) -> Position | None:
        """The highest position every reader of the log is done with, or ``None`` if there is none yet.

        The readers are the subscriptions' cursors (below its mark-delete position a cursor never reads again:
        replays and redeliveries are of unacknowledged entries) and, while deduplication is on, the
        ``pulsar.dedup`` cursor: a reload replays the entries after its snapshot, or every entry when it has
        none. A topic without subscriptions keeps everything (a subscription created at ``Earliest`` reads it).
        """
        if not self.subscriptions:
            return None
        floor = min(sub.cursor.mark_delete_position for sub in self.subscriptions.values())
        if self._dedup_on or self.dedup_effective():
            snapshot = self.dedup.snapshot()
            if not snapshot.exists or snapshot.position is None:
                return None
            if snapshot.position < floor:
                floor = Position(*snapshot.position)
        return floor

    def trim_consumed(self) -> int:
        """Forget the entries at or below :meth:`trim_floor` (in batches, see ``TopicLog.trim_through``).

        Runs when a mark-delete position advances; the common case (too few entries below the slowest
        subscription to make a batch) is told by one lookup, before the deduplication cursor is asked.
        """
        subscriptions = self.subscriptions
        if not subscriptions:
            return 0
        slowest = min(sub.cursor.mark_delete_position for sub in subscriptions.values())
        log = self.log
        if log.index_after(slowest) < self.trim_batch:
            return 0
        floor = self.trim_floor()
        if floor is None:
            return 0
        return log.trim_through(floor, min_batch=self.trim_batch)

    # -- restart -------------------------------------------------------------------------------------------
    def reload(self, new_ledger_id: int) -> None:
        """Load the topic again after a broker restart: a new ledger, recovered dedup, cursors rewound."""
        if self.outage is not None:
            self.outage.fail_all()  # the old broker's writes in flight die with it; the storage stays down
        snapshot = self.dedup.snapshot()
        self.log.roll_ledger(new_ledger_id)
        self.connected_producers.clear()
        self.dedup = MessageDeduplication(self.broker.config.dedup, self.broker.version)
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
                now_ns=self.broker.clock.now_ns(),
            )
        else:
            self.dedup.set_enabled(False, now_ns=self.broker.clock.now_ns())
        self._dedup_on = self.dedup.enabled
        for sub in self.subscriptions.values():
            sub.unload()

    def __repr__(self) -> str:
        return f"ServerTopic({self.name!r}, entries={len(self.log)}, subscriptions={list(self.subscriptions)})"
