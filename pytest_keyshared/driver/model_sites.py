"""Clusters of the reference model for the failover workload (:class:`~conformance.target.ReplicationSites`).

One model broker per cluster, all on one simulated clock, composed by ``reference_model.replication``
(``ReplicatedClusters``: replicators, snapshot markers, replicated cursors).  The model target builds them
with its own version, implementation and broker settings (``ModelTarget.replication_sites``), so the
replication cases run on the model like on any target with clusters; the trace's clock is the simulated one,
so a seed gives the same trace byte for byte.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from conformance.target import SNAPSHOT_METRICS, Delivery, SiteConsumer, SiteProducer, UnsupportedByTarget

__all__ = ["SUBSCRIPTION", "TOPIC", "ModelSites"]

TOPIC = "persistent://public/default/ks-replicated"
SUBSCRIPTION = "ks-replicated-sub"
PRODUCER = "ks-p"


def _msg_id(mid: Any) -> str:
    return f"{mid.ledger_id()}:{mid.entry_id()}:{mid.partition()}:{mid.batch_index()}"


class _ModelConsumer:
    def __init__(self, consumer: Any) -> None:
        self._consumer = consumer

    def receive(self, timeout_ms: int) -> Delivery | None:
        message = self._consumer.receive(timeout_ms)
        if message is None:
            return None
        return Delivery(
            message.data().decode(), message.partition_key() or None, _msg_id(message.message_id()), message
        )

    def acknowledge(self, token: Any) -> None:
        self._consumer.acknowledge(token)

    def close(self) -> None:
        self._consumer.close()


class _ModelProducer:
    def __init__(self, producer: Any) -> None:
        self._producer = producer

    def send(self, payload: str, key: str) -> str:
        return _msg_id(self._producer.send(payload.encode(), partition_key=key))


class ModelSites:
    """Model brokers, one per cluster, on one simulated clock (``reference_model.replication``).

    Consuming in the first cluster receives with timeout 0 (what the model has dispatched at this instant);
    after the failover each receive may wait 200 simulated ms.  ``settle`` runs the replication layer until
    it is idle.
    """

    consume_timeout_ms = 0
    failover_timeout_ms = 200
    #: the consumers' ``receiver_queue_size`` (a failover scenario's ``[settings] receiver_queue``)
    receiver_queue = 1000

    def __init__(
        self,
        *,
        clusters: Sequence[str] = ("r1", "r2"),
        pulsar_version: Any = "4.0",
        implementation: str | None = None,
        config: Any = None,
        seed: int = 0,
        delays_ms: Mapping[tuple[str, str], int] | None = None,
        topic: str = TOPIC,
        subscription: str = SUBSCRIPTION,
        partitions: int = 0,
    ) -> None:
        from reference_model.broker import ModelBroker
        from reference_model.broker.clock import SimClock
        from reference_model.replication import ReplicatedClusters

        self.clusters = tuple(clusters)
        self.topic = topic
        self.subscription = subscription
        self.clock = SimClock()
        self.brokers = {
            name: ModelBroker(
                pulsar_version=pulsar_version,
                implementation=implementation,
                config=config,
                seed=seed + index,
                cluster=name,
                clock=self.clock,
            )
            for index, name in enumerate(clusters)
        }
        #: 0: one non-partitioned topic; N: a partitioned topic of N partitions in every cluster (its metadata
        #: lives in the configuration store Pulsar's clusters share), its producers routing ``SinglePartition``
        #: (as ``testReplicatedSubscriptionRestApi2``'s; the workload's messages carry keys, which route by
        #: their hash whatever the mode)
        self.partitions = partitions
        self._seed = seed
        self._producers_made = 0
        if partitions:
            for broker in self.brokers.values():
                broker.create_partitioned_topic(topic, partitions)
        self.layer = ReplicatedClusters(list(self.brokers.values()), delays_ms=dict(delays_ms or {}))

    def now_ns(self) -> int:
        return int(self.clock.now_ns())

    def _names(self) -> list[str]:
        """The topics behind :attr:`topic`: its partitions, or itself."""
        from reference_model.broker.partitioned import partition_name

        return [partition_name(self.topic, i) for i in range(self.partitions)] if self.partitions else [self.topic]

    def producer(self, cluster: str) -> SiteProducer:
        broker = self.brokers[cluster]
        if not self.partitions:
            return _ModelProducer(broker.create_producer(self.topic, producer_name=PRODUCER))
        import random

        from reference_model.broker.partitioned import PartitionedProducer, Router

        self._producers_made += 1  # each producer draws its own single / round-robin start, from the seed
        rng = random.Random(f"{self._seed}:{cluster}:{self._producers_made}")
        router = Router(self.partitions, "single", rng)
        return _ModelProducer(PartitionedProducer(broker, self.topic, self.partitions, router, producer_name=PRODUCER))

    def subscribe(self, cluster: str) -> SiteConsumer:
        broker = self.brokers[cluster]
        consumers = [
            broker.subscribe(
                name,
                self.subscription,
                replicate_subscription_state=True,
                initial_position="Earliest",
                receiver_queue_size=self.receiver_queue,
            )
            for name in self._names()
        ]
        if not self.partitions:
            return _ModelConsumer(consumers[0])
        from reference_model.broker.partitioned import PartitionedConsumer

        return _ModelConsumer(PartitionedConsumer(broker, consumers))

    def read_all(self, cluster: str, name: str, compacted: bool = False) -> list[Delivery]:
        """A new reader of ``cluster``'s copy from the earliest message, read while it has more (``receive(0)``
        on the simulated clock: everything stored is dispatched at once).  ``compacted``: a ``readCompacted``
        reader, which reads the last compaction's entries and then the topic after its horizon."""
        if self.partitions:
            return self._read_partitions(cluster, name, compacted)
        if compacted:
            return [
                Delivery(
                    entry.messages[0].payload.decode(),
                    entry.metadata.partition_key,
                    f"{entry.position.ledger_id}:{entry.position.entry_id}:-1:-1",
                    None,
                )
                for entry in self.brokers[cluster].read_compacted(self.topic)
            ]
        consumer = self.brokers[cluster].subscribe(self.topic, name, initial_position="Earliest")
        got = []
        while (message := consumer.receive(0)) is not None:
            consumer.acknowledge(message)  # as a reader does (ReaderImpl.readNext)
            got.append(
                Delivery(message.data().decode(), message.partition_key() or None, _msg_id(message.message_id()), None)
            )
        consumer.close()  # the model keeps the subscription (a reader's is non-durable in Pulsar); nothing reads it
        return got

    def _read_partitions(self, cluster: str, name: str, compacted: bool) -> list[Delivery]:
        """A reader of a partitioned topic: each partition's messages, partition after partition."""
        if compacted:
            raise UnsupportedByTarget("The model's readCompacted reader reads non-partitioned topics only.")
        got = []
        for index, topic in enumerate(self._names()):
            consumer = self.brokers[cluster].subscribe(topic, name, initial_position="Earliest")
            while (message := consumer.receive(0)) is not None:
                consumer.acknowledge(message)
                mid = message.message_id()
                got.append(
                    Delivery(
                        message.data().decode(),
                        message.partition_key() or None,
                        f"{mid.ledger_id()}:{mid.entry_id()}:{index}:{mid.batch_index()}",
                        None,
                    )
                )
            consumer.close()
        return got

    def elapse(self, ms: int) -> None:
        self.layer.advance(ms)

    #: Snapshot periods :meth:`settle` lets pass between its two waits for idle replication (as
    #: :class:`~pytest_keyshared.driver.replication.BrokerSites` waits on real clusters).
    settle_periods = 2

    def settle(self) -> str | None:
        """Idle replication, :attr:`settle_periods` snapshot periods, idle again (the simulated clock: no bound
        can expire)."""
        self.layer.run_until_idle()
        self.layer.advance(self.settle_periods * self.snapshot_ms)
        self.layer.run_until_idle()
        return None

    @property
    def snapshot_ms(self) -> int:
        """The longest snapshot frequency of the clusters (``replicatedSubscriptionsSnapshotFrequencyMillis``)."""
        return max(self.layer.config(c).snapshot_frequency_ms for c in self.clusters)

    def backlog(self, cluster: str) -> int | None:
        """The subscription's ``msgBacklog`` (of a partitioned topic: summed over its partitions, as the
        partitioned stats sum them)."""
        total = 0
        for topic in self._names():
            stats = self.brokers[cluster].topic_stats(topic)
            sub = (stats.get("subscriptions") or {}).get(self.subscription)
            backlog = sub.get("msgBacklog") if isinstance(sub, Mapping) else None
            if not isinstance(backlog, int) or isinstance(backlog, bool):
                return None
            total += backlog
        return total

    def snapshot_metrics(self, cluster: str) -> dict[str, int]:
        """The cluster's snapshot counters as a Pulsar broker's ``/metrics`` shows them (broker-wide: summed over
        the topic's controllers there, each partition's), from the model's controllers (``snapshotsCompleted``,
        ``snapshotsTimedOut``); a cluster whose controller does not run counts nothing."""
        completed = timed_out = 0
        for topic in self._names():
            controller = self.layer.controller(cluster, topic)
            if controller is not None:
                completed += controller.snapshots_completed
                timed_out += controller.snapshots_timed_out
        return dict(zip(SNAPSHOT_METRICS, (completed, timed_out), strict=True))

    def set_down(self, cluster: str, down: bool) -> None:
        self.layer.set_down(cluster, down)

    def set_link_down(self, source: str, remote: str, down: bool) -> None:
        """Disconnect (or reconnect) the replicator ``source`` -> ``remote`` alone."""
        self.layer.set_link_down(source, remote, down)

    def set_replicator_faults(self, source: str, remote: str, *, lose_receipts: bool, repeat_window: int) -> None:
        """Faults of the replicator ``source`` -> ``remote``'s producer: receipts lost, sends repeated."""
        self.layer.set_replicator_faults(source, remote, lose_receipts=lose_receipts, repeat_window=repeat_window)

    def delete_subscription(self, cluster: str) -> bool:
        """Delete the subscription on ``cluster`` (admin ``deleteSubscription``; it has no consumer there); False
        if no topic of it had the subscription (never created there by a cursor update, or deleted already)."""
        deleted = [self.brokers[cluster].delete_subscription(topic, self.subscription) for topic in self._names()]
        return any(deleted)

    def compact(self, cluster: str) -> None:
        """Compact ``cluster``'s copy of the topic now (admin ``triggerCompaction``, done at once in the model)."""
        for topic in self._names():
            self.brokers[cluster].compact(topic)

    def set_replicated(self, cluster: str, enabled: bool) -> None:
        """Switch the subscription's replicated status on ``cluster`` (the admin API's
        ``replicatedSubscriptionStatus``), through the topic's name: a partitioned one's reaches its partitions
        in the model broker, as Pulsar's admin API applies it to each."""
        self.brokers[cluster].set_replicated_subscription_status(self.topic, self.subscription, enabled)

    def close(self) -> None:
        """Nothing to release: the model lives in memory."""
