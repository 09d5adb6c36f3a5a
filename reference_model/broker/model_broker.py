"""The model as an in-process broker, with the client surface the driver uses (names follow ``pulsar-client``).

>>> broker = ModelBroker(pulsar_version="4.0")
>>> producer = broker.create_producer("t")
>>> consumer = broker.subscribe("t", "s", consumer_name="c1")
>>> msg_id = producer.send(b"hello", partition_key="k1")
>>> msg = consumer.receive(timeout_millis=100)
>>> msg.data(), msg.partition_key()
(b'hello', 'k1')
>>> consumer.acknowledge(msg)

Deterministic: the same calls (and ``seed``) give the same deliveries, byte for byte. Time is a
:class:`~reference_model.broker.clock.SimClock` that only moves in :meth:`advance`, :meth:`run_until_idle` and
blocking calls (``receive``, ``send`` with batching). ``pulsar_version`` and ``implementation`` (``"pip379"``,
``"classic"``) choose the rules; see ``docs/model.md`` for what is modelled and what is simplified.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from reference_model.broker.clock import SimClock
from reference_model.broker.config import BrokerConfig
from reference_model.broker.consumer import MIN_UNACKED_MESSAGES_TIMEOUT_MS, ModelConsumer
from reference_model.broker.errors import NotAllowedError, ProducerBusy
from reference_model.broker.housekeeping import DedupHousekeeping
from reference_model.broker.listeners import ListenerHub
from reference_model.broker.partitioned import partition_name
from reference_model.broker.producer import ModelProducer
from reference_model.broker.stats import internal_stats, topic_stats
from reference_model.broker.storage_outage import check_fail_after_ms
from reference_model.broker.subscription import ServerSubscription
from reference_model.broker.topic import ServerTopic
from reference_model.errors import InvalidArgument, did_you_mean
from reference_model.keyshared import DispatchConsumer, KeySharedPolicy, check_implementation
from reference_model.selectors import ConsumerRef
from reference_model.storage.compaction import CompactedTopic, compact, compacted_read
from reference_model.storage.entry import Entry, MessageMetadata, SingleMessage
from reference_model.storage.position import Position
from reference_model.storage.topic_log import TopicLog
from reference_model.versions import DEDUP_SNAPSHOT_AFTER_REPLAY, PulsarVersion, check_released

__all__ = ["DEFAULT_NAMESPACE", "ModelBroker", "normalise_topic"]

DEFAULT_NAMESPACE = "public/default"
_INITIAL_POSITIONS = ("Latest", "Earliest")


def normalise_topic(topic: str) -> str:
    """``"t"`` -> ``"persistent://public/default/t"``; ``"tenant/ns/t"`` -> ``"persistent://tenant/ns/t"``.

    ``non-persistent://tenant/ns/t`` names a non-persistent topic (:mod:`reference_model.keyshared.nonpersistent`).
    """
    if not isinstance(topic, str) or not topic or topic.strip() != topic:
        raise InvalidArgument(
            f"Expected a topic name like 'my-topic' or 'persistent://public/default/t' but got {topic!r}."
        )
    if "://" in topic:
        scheme, rest = topic.split("://", 1)
        if scheme not in ("persistent", "non-persistent") or len(rest.split("/")) != 3:
            raise InvalidArgument(
                f"Expected persistent://tenant/namespace/topic or non-persistent://tenant/namespace/topic but got"
                f" {topic!r}."
            )
        return topic
    parts = topic.split("/")
    if len(parts) == 1:
        return f"persistent://{DEFAULT_NAMESPACE}/{topic}"
    if len(parts) == 3:
        return f"persistent://{topic}"
    raise InvalidArgument(f"Expected 'topic' or 'tenant/namespace/topic' but got {topic!r}.")


class ModelBroker:
    """A deterministic, in-process Pulsar broker over the reference model.

    ``pulsar_version``: the release whose rules apply (``"4.0"``, ``"3.0.7"``...). ``implementation``:
    ``"pip379"`` (4.0+ default) or ``"classic"`` (3.x, or 4.x with
    ``subscriptionKeySharedUseClassicPersistentImplementation``). ``cluster``: the cluster name. ``clock``: share
    one :class:`SimClock` between several brokers (replication); a new one by default.
    """

    def __init__(
        self,
        pulsar_version: str | PulsarVersion = "4.0",
        implementation: str | None = None,
        config: BrokerConfig | None = None,
        seed: int = 0,
        cluster: str = "standalone",
        clock: SimClock | None = None,
    ) -> None:
        self.version = check_released(pulsar_version)
        self.implementation = check_implementation(implementation, self.version)
        if config is not None and not isinstance(config, BrokerConfig):
            raise InvalidArgument(f"Expected a BrokerConfig for config but got {type(config).__name__}.")
        self.config = config or BrokerConfig()
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise InvalidArgument(f"Expected an int for seed but got seed={seed!r} (type={type(seed).__name__}).")
        self.seed = seed
        if not isinstance(cluster, str) or not cluster:
            raise InvalidArgument(f"Expected a non-empty cluster name but got cluster={cluster!r}.")
        self.cluster = cluster
        self.clock = clock if clock is not None else SimClock()
        self.listeners = ListenerHub()
        self.generation = 0
        self._generated_names = 0
        self._topics: dict[str, ServerTopic] = {}
        #: partitioned topic -> its partition count (the metadata; the partitions are ordinary topics)
        self._partitioned: dict[str, int] = {}
        #: topic -> its last compaction (admin ``triggerCompaction``), read by :meth:`read_compacted`
        self._compacted: dict[str, CompactedTopic] = {}
        self._namespace_dedup: dict[str, bool | None] = {}
        self._storage_fail_after_ms: int | None = None
        self._next_ledger_id = 0
        self._next_consumer_id = 0
        self._next_producer_id = 0
        self._next_producer_name = 0
        self._consumers: list[ModelConsumer] = []
        self._producers: list[ModelProducer] = []
        self._servers: dict[int, DispatchConsumer] = {}
        #: the periodic deduplication tasks (inactive-producer purge, time-based snapshots): background timers
        self.housekeeping = DedupHousekeeping(
            self.clock,
            lambda: list(self._topics.values()),
            purge_check_interval_ms=self.config.dedup.purge_check_interval_ms,
            snapshot_frequency_ms=self.config.dedup.snapshot_frequency_ms
            if self.version.has(DEDUP_SNAPSHOT_AFTER_REPLAY) or self.config.dedup.broker_enabled
            else 0,  # before apache/pulsar#22479 the snapshot monitor ran only with brokerDeduplicationEnabled
        )
        self.housekeeping.start()

    def __repr__(self) -> str:
        return (
            f"ModelBroker(pulsar_version={str(self.version)!r}, implementation={self.implementation!r},"
            f" cluster={self.cluster!r})"
        )

    # -- time ----------------------------------------------------------------------------------------------
    def advance(self, ms: float) -> None:
        """Let ``ms`` milliseconds of simulated time pass (timers fire on the way)."""
        self.clock.advance(ms)

    def run_until_idle(self, max_ms: float | None = None) -> None:
        """Advance until no timer (re-read, negative-ack redelivery, batch flush, crash detection) is pending.

        The periodic housekeeping (deduplication purge and snapshots, :mod:`~reference_model.broker.housekeeping`)
        is not work: it fires when due on the way, but never keeps this going.
        """
        self.clock.run_until_idle(max_ms)

    # -- topics --------------------------------------------------------------------------------------------
    def _topic(self, topic: str, *, create: bool = True) -> ServerTopic:
        name = normalise_topic(topic)
        server = self._topics.get(name)
        if server is None:
            if name in self._partitioned:
                raise InvalidArgument(
                    f"{name!r} is a partitioned topic of {self._partitioned[name]} partitions on cluster"
                    f" {self.cluster!r}: produce to and subscribe to its partitions ({name}-partition-<i>), as the"
                    " clients do (reference_model.broker.partitioned)."
                )
            if not create:
                raise InvalidArgument(
                    f"Topic {name!r} does not exist on cluster {self.cluster!r}."
                    f"{did_you_mean(name, self._topics)} Known topics: {', '.join(self._topics) or 'none'}."
                )
            server = ServerTopic(self, name, self._new_ledger_id())
            self._topics[name] = server
            if self._storage_fail_after_ms is not None:
                server.storage_down(self._storage_fail_after_ms)
        return server

    def _new_ledger_id(self) -> int:
        ledger_id = self._next_ledger_id
        self._next_ledger_id += 1
        return ledger_id

    def topics(self) -> list[str]:
        return list(self._topics)

    def create_partitioned_topic(self, topic: str, partitions: int) -> list[str]:
        """Admin ``createPartitionedTopic``: record the partition count and create the partitions
        ``<topic>-partition-<i>`` (ordinary topics); their names.  An existing one with the same count is kept."""
        name = normalise_topic(topic)
        if isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1:
            raise InvalidArgument(f"Expected partitions >= 1 (int) for {name!r} but got {partitions!r}.")
        if name in self._topics:
            raise InvalidArgument(f"Topic {name!r} exists as a non-partitioned topic on cluster {self.cluster!r}.")
        known = self._partitioned.get(name)
        if known is not None and known != partitions:
            raise InvalidArgument(f"Partitioned topic {name!r} already has {known} partitions, not {partitions}.")
        self._partitioned[name] = partitions
        names = [partition_name(name, i) for i in range(partitions)]
        for each in names:
            self._topic(each)
        return names

    def partitions_of(self, topic: str) -> int:
        """The partition count of a partitioned topic (``getPartitionedTopicMetadata``); 0 for any other name."""
        return self._partitioned.get(normalise_topic(topic), 0)

    def set_trim_consumed_entries(self, enabled: bool) -> None:
        """Turn :attr:`BrokerConfig.trim_consumed_entries` on or off, for the topics that exist and later ones."""
        if not isinstance(enabled, bool):
            raise InvalidArgument(f"Expected True or False for enabled but got {enabled!r}.")
        self.config = replace(self.config, trim_consumed_entries=enabled)
        for server in self._topics.values():
            server.trims = enabled

    # -- producers -----------------------------------------------------------------------------------------
    def create_producer(
        self,
        topic: str,
        producer_name: str | None = None,
        initial_sequence_id: int | None = None,
        batching_enabled: bool = False,
        batching_type: object = "Default",
        batching_max_messages: int = 1000,
        batching_max_allowed_size_in_bytes: int = 128 * 1024,
        batching_max_publish_delay_ms: int = 10,
        send_timeout_millis: int = 30_000,
        **unsupported: Any,
    ) -> ModelProducer:
        """``client.create_producer``: names are unique per topic among connected producers (ProducerBusy)."""
        if unsupported:
            raise InvalidArgument(f"create_producer options {sorted(unsupported)} are not modelled.")
        server = self._topic(topic)
        if producer_name is None:
            name = f"{self.cluster}-0-{self._next_producer_name}"
            self._next_producer_name += 1
        else:
            if not isinstance(producer_name, str) or not producer_name:
                raise InvalidArgument(f"Expected a non-empty str for producer_name but got {producer_name!r}.")
            name = producer_name
        if name in server.connected_producers:
            raise ProducerBusy(
                f"Producer with name {name!r} is already connected to topic {server.name!r};"
                " close it first or choose another producer_name."
            )
        producer = ModelProducer(
            self,
            topic=server.name,
            producer_name=name,
            producer_id=self._next_producer_id,
            initial_sequence_id=initial_sequence_id,
            batching_enabled=batching_enabled,
            batching_type=batching_type,
            batching_max_messages=batching_max_messages,
            batching_max_allowed_size_in_bytes=batching_max_allowed_size_in_bytes,
            batching_max_publish_delay_ms=batching_max_publish_delay_ms,
            send_timeout_millis=send_timeout_millis,
        )
        self._next_producer_id += 1
        self._connect_producer(producer, server)
        self._producers.append(producer)
        return producer

    def _connect_producer(self, producer: ModelProducer, server: ServerTopic) -> None:
        server.connected_producers[producer.producer_name()] = producer.producer_id
        producer._server = server
        producer._connected(server.dedup.producer_connected(producer.producer_name()))

    def _producer_closed(self, producer: ModelProducer) -> None:
        server = self._topics.get(producer.topic())
        if server is not None and server.connected_producers.get(producer.producer_name()) == producer.producer_id:
            del server.connected_producers[producer.producer_name()]
            server.dedup.producer_disconnected(producer.producer_name(), now_ns=self.clock.now_ns())

    def _publish(self, topic: str, metadata: MessageMetadata, messages: tuple[SingleMessage, ...]) -> Entry | None:
        server = self._topics.get(topic)  # producers hold the normalised name of a topic that exists
        return (server if server is not None else self._topic(topic)).publish(metadata, messages)

    # -- consumers -----------------------------------------------------------------------------------------
    def subscribe(
        self,
        topic: str,
        subscription: str,
        consumer_type: str = "Key_Shared",
        consumer_name: str | None = None,
        key_shared_policy: KeySharedPolicy | None = None,
        receiver_queue_size: int = 1000,
        replicate_subscription_state: bool = False,
        initial_position: str = "Latest",
        negative_ack_redelivery_delay_ms: int = 60000,
        unacked_messages_timeout_ms: int | None = None,
        dead_letter: tuple[int, str] | None = None,
        **unsupported: Any,
    ) -> ModelConsumer:
        """``client.subscribe`` for a Key_Shared consumer; raises ConsumerBusy, ConsumerAssignError, NotAllowedError."""
        if unsupported:
            raise InvalidArgument(f"subscribe options {sorted(unsupported)} are not modelled.")
        type_name = getattr(consumer_type, "name", consumer_type)
        if str(type_name).replace("_", "").lower() != "keyshared":
            raise InvalidArgument(
                f"Only Key_Shared consumers are modelled, but got consumer_type={consumer_type!r}."
                " Use consumer_type='Key_Shared'."
            )
        if "Key_Shared" not in self.config.subscription_types_enabled:
            raise NotAllowedError(
                f"Subscription type Key_Shared is not enabled on this broker (subscriptionTypesEnabled="
                f"{','.join(self.config.subscription_types_enabled)})."
            )
        if not isinstance(subscription, str) or not subscription:
            raise InvalidArgument(f"Expected a non-empty subscription name but got {subscription!r}.")
        if isinstance(receiver_queue_size, bool) or not isinstance(receiver_queue_size, int) or receiver_queue_size < 0:
            raise InvalidArgument(f"receiver_queue_size must be an int >= 0 but got {receiver_queue_size!r}.")
        if initial_position not in _INITIAL_POSITIONS:
            raise InvalidArgument(
                f"Expected initial_position in {_INITIAL_POSITIONS} but got {initial_position!r}."
                f"{did_you_mean(str(initial_position), _INITIAL_POSITIONS)}"
            )
        if negative_ack_redelivery_delay_ms < 0:
            raise InvalidArgument(
                f"negative_ack_redelivery_delay_ms must be >= 0 but got {negative_ack_redelivery_delay_ms!r}."
            )
        timeout = unacked_messages_timeout_ms or 0
        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, int)
            or not (timeout == 0 or timeout >= MIN_UNACKED_MESSAGES_TIMEOUT_MS)
        ):
            raise InvalidArgument(
                f"unacked_messages_timeout_ms must be 0 / None (off) or at least {MIN_UNACKED_MESSAGES_TIMEOUT_MS}"
                f" (the client's minimum) but got {unacked_messages_timeout_ms!r}."
            )
        policy = key_shared_policy if key_shared_policy is not None else KeySharedPolicy()
        if not isinstance(policy, KeySharedPolicy):
            raise InvalidArgument(f"Expected a KeySharedPolicy but got {type(policy).__name__}.")
        if consumer_name is None:
            consumer_name = self._generate_consumer_name()
        server = self._topic(topic)
        client = ModelConsumer(
            self,
            topic=server.name,
            subscription=subscription,
            consumer_name=consumer_name,
            consumer_id=self._next_consumer_id,
            policy=policy,
            receiver_queue_size=receiver_queue_size,
            negative_ack_redelivery_delay_ms=negative_ack_redelivery_delay_ms,
            initial_position=initial_position,
            replicate_subscription_state=replicate_subscription_state,
            unacked_messages_timeout_ms=timeout,
            dead_letter=_dead_letter_policy(dead_letter),
        )
        self._next_consumer_id += 1
        self._connect_consumer(client)
        self._consumers.append(client)
        return client

    def _connect_consumer(self, client: ModelConsumer) -> None:
        server = self._topic(client.topic())
        sub = server.get_or_create_subscription(
            client.subscription_name(),
            initial_position=client.initial_position,
            replicated=client.replicate_subscription_state,
        )
        dispatch = DispatchConsumer(
            ConsumerRef(client.consumer_name(), client.consumer_id),
            max_unacked_messages=self.config.key_shared.max_unacked_per_consumer,
            sticky_ranges=client.policy.ranges_sent,
        )
        dispatch.sink = client._open_connection()
        sub.add_consumer(dispatch, client.policy)
        self._servers[client.consumer_id] = dispatch
        client._attach(dispatch, sub)

    def _generate_consumer_name(self) -> str:
        """A 5-hex-digit name like the C++ client's random ones, derived from the seed (deterministic)."""
        self._generated_names += 1
        digest = hashlib.blake2b(f"{self.seed}:{self._generated_names}".encode(), digest_size=8).hexdigest()
        return digest[:5]

    def _consumer_closed(self, client: ModelConsumer) -> None:
        server = self._servers.pop(client.consumer_id, None)
        if server is not None and client.server_subscription is not None:
            client.server_subscription.remove_consumer(server)

    def _consumer_crashed(self, client: ModelConsumer) -> None:
        server = self._servers.get(client.consumer_id)
        subscription = client.server_subscription
        generation = self.generation

        def detected() -> None:
            if self.generation == generation and self._servers.get(client.consumer_id) is server:
                del self._servers[client.consumer_id]
                if subscription is not None and server is not None:
                    subscription.remove_consumer(server)

        self.clock.call_later(self.config.crash_detection_delay_ms, detected)

    # -- stats ---------------------------------------------------------------------------------------------
    def topic_stats(self, topic: str) -> dict[str, Any]:
        """``GET .../stats`` with Apache Pulsar's JSON field names."""
        return topic_stats(self, self._topic(topic, create=False))

    def topic_internal_stats(self, topic: str) -> dict[str, Any]:
        """``GET .../internalStats``: ledgers, cursors (mark-delete, read position, ack holes)."""
        return internal_stats(self._topic(topic, create=False))

    def dedup_stats(self, topic: str) -> dict[str, Any]:
        """The topic's deduplication state (``MessageDeduplication.stats()``: maps, snapshot cursor, counters)."""
        return self._topic(topic, create=False).dedup.stats()

    # -- restart -------------------------------------------------------------------------------------------
    def restart(self) -> None:
        """A crash-restart of the broker: durable state recovered, clients reconnect in their original order.

        Kept: every topic's entries, each subscription's mark-delete position and individually acknowledged
        entries (the cursor ledger), the deduplication snapshot. Lost: dispatchers, replay queues, pending acks,
        receiver queues. Each topic continues in a new ledger; deduplication replays the entries after its
        snapshot; each subscription re-reads from its first unacknowledged entry.
        """
        self.generation += 1
        self.housekeeping.start()  # a new BrokerService: its periodic tasks start from now
        for server in self._topics.values():
            server.reload(self._new_ledger_id())
        self._servers.clear()
        for producer in self._producers:
            if producer.state == "open":
                self._connect_producer(producer, self._topics[producer.topic()])
        for client in self._consumers:
            if client.state == "open":
                client.state = "connecting"
                self._connect_consumer(client)
            elif client.state == "crashed":
                client.server = None

    # -- storage failures ----------------------------------------------------------------------------------
    @property
    def storage_fail_after_ms(self) -> int | None:
        """While the storage is down (:meth:`storage_down`), how long a write stays in flight before it fails."""
        return self._storage_fail_after_ms

    def storage_down(self, fail_after_ms: int = 0) -> None:
        """The storage (BookKeeper) stops taking writes, for every topic (and every topic created meanwhile).

        A write stays in flight; ``fail_after_ms`` after the first one of a topic every write in flight there fails
        (``addFailed``) and deduplication's pushed ids go back to the persisted ones. See
        :mod:`reference_model.broker.storage_outage`.
        """
        self._storage_fail_after_ms = check_fail_after_ms(fail_after_ms)
        for server in self._topics.values():
            server.storage_down(fail_after_ms)

    def storage_up(self) -> None:
        """The storage takes writes again: the writes still in flight complete, oldest first."""
        self._storage_fail_after_ms = None
        for server in self._topics.values():
            server.storage_up()

    # -- deduplication policies ----------------------------------------------------------------------------
    def namespace_dedup_policy(self, namespace: str) -> bool | None:
        return self._namespace_dedup.get(namespace)

    def set_namespace_deduplication(self, enabled: bool | None, namespace: str = DEFAULT_NAMESPACE) -> None:
        """``POST/DELETE /namespaces/{tenant}/{ns}/deduplication``; ``None`` removes the policy."""
        if enabled is not None and not isinstance(enabled, bool):
            raise InvalidArgument(f"Expected True, False or None for enabled but got {enabled!r}.")
        self._namespace_dedup[namespace] = enabled
        for server in self._topics.values():
            if server.namespace == namespace:
                server.apply_dedup_policy()

    def set_topic_deduplication(self, topic: str, enabled: bool | None) -> None:
        """``POST/DELETE .../{topic}/deduplicationEnabled``; ``None`` removes the topic policy."""
        if enabled is not None and not isinstance(enabled, bool):
            raise InvalidArgument(f"Expected True, False or None for enabled but got {enabled!r}.")
        server = self._topic(topic)
        server.topic_dedup_policy = enabled
        server.apply_dedup_policy()

    def expire_messages(self, topic: str, subscription: str, expire_time_s: int) -> bool:
        """``POST .../subscription/{sub}/expireMessages/{expireTimeInSeconds}``: the subscription's messages
        published more than ``expire_time_s`` ago expire (as a TTL check with that TTL); returns whether any did."""
        if isinstance(expire_time_s, bool) or not isinstance(expire_time_s, int) or expire_time_s < 0:
            raise InvalidArgument(f"Expected seconds >= 0 for expire_time_s but got {expire_time_s!r}.")
        server = self._topic(topic)
        sub = server.subscriptions.get(subscription)
        if sub is None:
            raise InvalidArgument(f"Subscription {subscription!r} does not exist on {topic!r}.")
        expired = sub.expire_messages(self.clock.now_ns() - expire_time_s * 1_000_000_000)
        self.clock.run_due()
        return expired

    def compact(self, topic: str) -> CompactedTopic:
        """Admin ``triggerCompaction``, done at once: the latest message per key up to the topic's last entry now
        (markers left out), kept for :meth:`read_compacted` (:mod:`reference_model.storage.compaction`)."""
        server = self._topic(topic, create=False)
        done = compact(server.log, server.log.last_position)
        self._compacted[server.name] = done
        return done

    def read_compacted(self, topic: str) -> list[Entry]:
        """What a new ``readCompacted`` reader from the earliest message reads: the last compaction's entries, then
        every data entry after its horizon."""
        server = self._topic(topic, create=False)
        return compacted_read(server.log, self._compacted.get(server.name))

    # -- hooks for replicated subscriptions ----------------------------------------------------------------
    def topic_log(self, topic: str) -> TopicLog:
        """The topic's log (read entries after a position; ``last_position``)."""
        return self._topic(topic).log

    def write_marker(
        self, topic: str, marker_type: int, payload: Mapping[str, object], replicate_to: list[str] | None
    ) -> Position:
        """Append a marker: occupies an entry id, counts in backlog until read, never delivered, not deduplicated."""
        if isinstance(marker_type, bool) or not isinstance(marker_type, int):
            raise InvalidArgument(f"Expected an int marker_type (PulsarMarkers.MarkerType) but got {marker_type!r}.")
        return self._topic(topic).write_marker(marker_type, payload, replicate_to).position

    def append_replicated(
        self,
        topic: str,
        metadata: MessageMetadata,
        messages: tuple[SingleMessage, ...] | list[SingleMessage],
        replicated_from: str,
        marker_payload: Mapping[str, object] | None = None,
        source_position: tuple[int, int] | None = None,
    ) -> Position:
        """Append an entry a replicator read in cluster ``replicated_from``; returns its local position.

        The entry keeps its metadata, with ``replicated_from`` set (``GeoPersistentReplicator`` sends the message
        as read, ``setReplicatedFrom(localCluster)``). Deduplication (when on) judges a message by the original
        producer name and sequence id in ``metadata`` (``isDuplicateReplV1``); from apache/pulsar#23697 (3.0.11,
        3.3.5, 4.0.3), when ``source_position`` (the entry's position in ``replicated_from``) is given, by that
        position per replicator (``isDuplicateReplV2``; the replicator's producer is
        ``pulsar.repl.<replicated_from>--><this cluster>``). A duplicate is not written and ``Position(-1, -1)``
        is returned. A marker (``metadata.marker_type`` set) is appended as it is, never deduplicated, with
        ``marker_payload`` (pass the source entry's; ``None`` writes an empty one).
        """
        if not isinstance(replicated_from, str) or not replicated_from:
            raise InvalidArgument(f"Expected a cluster name for replicated_from but got {replicated_from!r}.")
        if marker_payload is not None and not isinstance(marker_payload, Mapping):
            raise InvalidArgument(
                f"Expected a mapping (or None) for marker_payload but got {type(marker_payload).__name__}."
            )
        server = self._topic(topic)
        local = replace(metadata, replicated_from=replicated_from)
        if local.marker_type is not None:
            return server.append_marker(local, marker_payload or {}).position
        replicated = None
        if source_position is not None:
            replicated = (f"pulsar.repl.{replicated_from}-->{self.cluster}", source_position)
        entry = server.publish(local, tuple(messages), replicated=replicated)
        return Position(-1, -1) if entry is None else entry.position

    def add_listener(self, listener: object) -> None:
        """Register an object with any of ``on_entry_added``, ``on_marker_read``, ``on_mark_delete_advanced``."""
        self.listeners.add(listener)

    def subscriptions(self, topic: str) -> list[str]:
        """Names of the subscriptions of ``topic``, in creation order (``[]`` if the topic does not exist)."""
        server = self._topics.get(normalise_topic(topic))
        return [] if server is None else list(server.subscriptions)

    def subscription(self, topic: str, name: str) -> ServerSubscription | None:
        """The subscription (``replicated``, ``mark_delete_position``), or ``None`` if it does not exist."""
        server = self._topics.get(normalise_topic(topic))
        return None if server is None else server.subscriptions.get(name)

    def delete_subscription(self, topic: str, subscription: str) -> bool:
        """Delete a subscription without consumers (admin ``deleteSubscription``); False if it does not exist.

        Its cursor goes with it: a later subscribe (or a replicated update) creates it anew."""
        server = self._topics.get(normalise_topic(topic))
        sub = None if server is None else server.subscriptions.get(subscription)
        if server is None or sub is None:
            return False
        if sub.consumers:
            raise InvalidArgument(
                f"Subscription {subscription!r} on {topic!r} has connected consumers; close them before deleting it."
            )
        del server.subscriptions[subscription]
        return True

    def set_replicated_subscription_status(self, topic: str, subscription: str, enabled: bool) -> bool:
        """Switch a subscription's replicated status (admin ``replicatedSubscriptionStatus``); False if it does not
        exist.  Off, replication neither caches its snapshots nor writes or applies its cursor updates here.

        On a partitioned topic's name the switch reaches every partition (``PersistentTopicsBase``
        ``internalSetReplicatedSubscriptionStatus`` applies it to each); False if one lacks the subscription."""
        partitions = self.partitions_of(topic)
        if partitions:
            name = normalise_topic(topic)
            switched = [
                self.set_replicated_subscription_status(partition_name(name, i), subscription, enabled)
                for i in range(partitions)
            ]
            return all(switched)
        sub = self.subscription(topic, subscription)
        if sub is None:
            return False
        sub.replicated = bool(enabled)
        return True

    def acknowledge_cumulative_to(
        self, topic: str, subscription: str, position: tuple[int, int], create_if_missing: bool = True
    ) -> bool:
        """Move a subscription's mark-delete position (a remote update); create it at Earliest if missing."""
        server = self._topic(topic)
        sub = server.subscriptions.get(subscription)
        if sub is None:
            if not create_if_missing:
                return False
            sub = server.get_or_create_subscription(subscription, initial_position="Earliest", replicated=True)
        return sub.acknowledge_cumulative_to(Position(*position))

    # -- forcing interleavings (tests) ---------------------------------------------------------------------
    def _dispatcher(self, topic: str, subscription: str) -> Any:
        sub = self.subscription(topic, subscription)
        if sub is None or sub.dispatcher is None:
            raise InvalidArgument(f"Subscription {subscription!r} on {topic!r} has no dispatcher (no consumer yet).")
        return sub.dispatcher

    def hold_reads(self, topic: str, subscription: str) -> None:
        """Keep the next normal read of the subscription in flight (forces read races; see docs/model.md)."""
        self._dispatcher(topic, subscription).hold_reads()

    def complete_pending_read(self, topic: str, subscription: str) -> bool:
        """Complete the in-flight read (reads stay held); return whether there was one."""
        return bool(self._dispatcher(topic, subscription).complete_pending_read())

    def release_reads(self, topic: str, subscription: str) -> None:
        """Stop holding reads and dispatch normally."""
        self._dispatcher(topic, subscription).release_reads()

    def interleave_replay_filter(
        self, topic: str, subscription: str, action: Callable[[], None], after: tuple[int, int] | None = None
    ) -> None:
        """Run ``action`` inside the next replay-filter pass, after it judged ``after`` (default: the first
        position): forces the #23870 race (an acknowledgement during replay filtering)."""
        self._dispatcher(topic, subscription).interleave_replay_filter(
            action, None if after is None else Position(*after)
        )


def _dead_letter_policy(policy: Any) -> tuple[int, str] | None:
    """``subscribe``'s ``dead_letter``: ``(max_redeliver_count >= 1, topic)`` or None (the client's
    ``ConsumerDeadLetterPolicy``, its two fields the model follows; the client wants a count above 0)."""
    if policy is None:
        return None
    if (
        not isinstance(policy, tuple)
        or len(policy) != 2
        or isinstance(policy[0], bool)
        or not isinstance(policy[0], int)
        or policy[0] < 1
        or not isinstance(policy[1], str)
        or not policy[1]
    ):
        raise InvalidArgument(f"dead_letter must be (max_redeliver_count >= 1, topic) but got {policy!r}.")
    return policy
