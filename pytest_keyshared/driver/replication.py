"""Failover runs of a replicated subscription (PIP-33), recorded as an ordinary trace.

:class:`Failover` is the workload of the replication cases: publish in the first cluster, consume with an
acknowledgement plan, let snapshots run, cut clusters off, then move the consumer to another cluster and drain
it there.  It records what the clients observe with a :class:`~conformance.trace.TraceWriter`, like any
scenario run: ``open``, ``publish``, ``receive``, ``ack``, ``close``; the standby subscriptions' creation; a
``fault`` (touching no consumer) when a cluster is cut off or returns; a ``snapshot`` per cluster with the
subscription backlog the harness read after waiting for replication to settle (and whether it did), at
:meth:`Failover.snapshot` and before the switch; the application's ``failover``; and the consumer's
re-attachment on the other cluster (an ``open`` whose topic names that cluster).  Each cluster's
copy of the topic is written ``<topic>@<cluster>`` (docs/trace-format.md, "Failover runs").  The trace ends
with ``end`` ``drained: true`` once the consumer on the other cluster received until quiet, connected (one still
away then, with messages unacknowledged, is named in ``unreachable``, and the run is not drained).  The checkers judge
it (``skipped_after_failover``, ``replicated_cursor_ahead``, ``redelivered_after_failover``:
:mod:`conformance.checks.replication`); ``keyshared
check`` works on it.  A failover scenario (``[settings] clusters``) drives this workload step by step
(:mod:`pytest_keyshared.driver.failover_run`), so ``keyshared run`` and ``keyshared replay`` run failovers too.

It talks to the clusters through :class:`~conformance.target.ReplicationSites` only: :class:`BrokerSites` here
(real clusters through ``pulsar-client``, e.g. the ``testcontainers-geo`` target) or
:class:`~pytest_keyshared.driver.model_sites.ModelSites` (clusters of the reference model on one simulated
clock, from the model target).

:class:`BrokerSites` reads idle replication from each cluster's topic stats (admin API): every outbound
replicator is connected and has no backlog.  :meth:`BrokerSites.settle` waits for that, lets two snapshot
periods pass (a snapshot started now completes, and the subscription-update marker a moved mark-delete writes
is sent), and waits for it again.  Every wait is bounded; an expired bound becomes a note in the trace's last
event, not a hang.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.target import (
    SNAPSHOT_METRICS,
    Delivery,
    ReplicationSites,
    SiteConsumer,
    SiteProducer,
    TargetError,
    UnsupportedByTarget,
)
from conformance.trace import SubscriptionSpec, TraceHeader, TraceWriter
from pytest_keyshared.targets.admin import AdminClient
from reference_model.errors import InvalidArgument

__all__ = [
    "PRODUCER",
    "SUBSCRIPTION",
    "BrokerSites",
    "Failover",
    "SiteEndpoint",
    "failover_header",
    "probe_replication",
    "replication_idle",
]

SUBSCRIPTION = "ks-replicated-sub"
PRODUCER = "ks-p"
CONSUMER = "c1"  #: the application's consumer handle, on one cluster and then on another
#: Receive windows (``failover_timeout_ms`` each) the drain after a failover waits on for a consumer that is not
#: connected, once nothing arrives (the scenario driver's drain waits the same way, ``driver/run.py``).
AWAY_WINDOWS = 3


def failover_header(
    target: Any,
    sites: ReplicationSites,
    *,
    seed: int,
    pulsar_version: str | None = None,
    selector: Any = None,
    deduplication: bool = False,
    extra: Mapping[str, Any] | None = None,
) -> TraceHeader:
    """The header of a failover trace: the usual contract, plus the ``clusters`` that make it a failover run
    (``deduplication``: the clusters deduplicate producers' messages; ``extra``, e.g. the scenario's name)."""
    claims = getattr(target, "claims", None)
    return TraceHeader(
        target=str(getattr(target, "name", target)),
        subscription=SubscriptionSpec(name=sites.subscription),
        pulsar_version=pulsar_version or getattr(claims, "pulsar_version", None),
        deduplication=deduplication,
        selector=selector,
        seed=seed,
        extra={
            "clusters": list(sites.clusters),
            "implementation": getattr(claims, "implementation", None),
            "replicated_topic": sites.topic,
            **(extra or {}),
        },
    )


class Failover:
    """A producer and a replicated consumer in the first cluster; the consumer later moves to another one.

    Message ``n`` carries payload (and trace ``uid``) ``m<n>`` and partition key ``k<n mod keys>``.  Every wait
    is bounded by the sites' receive timeouts: the consumer keeps receiving while messages arrive and stops at
    the first receive that times out (after the failover: with the consumer connected through it, see
    :meth:`_drain`), or as soon as it has everything that was sent.  Use as a context
    manager, or call :meth:`close`: it writes the ``end`` event and closes what is still open.
    """

    def __init__(self, sites: ReplicationSites, header: TraceHeader, trace_path: Path | None) -> None:
        self.sites = sites
        self.clusters = tuple(sites.clusters)
        self.writer = TraceWriter(trace_path, header, clock=sites.now_ns)
        self.trace_path = trace_path
        self.home = self.clusters[0]
        self.sent = 0
        self.held: list[Delivery] = []
        self._received: set[str] = set()
        self._acked: set[str] = set()  #: payloads acknowledged, on any cluster
        #: the consumer, when the drain after the failover ended with it not connected and messages unacknowledged
        self.unreachable: list[str] = []
        self.notes: list[str] = []
        self.moved_to: str | None = None
        self._drained = False
        self._closed = False
        self._down: set[str] = set()  #: clusters cut off now (set_down)
        self._links_down: set[tuple[str, str]] = set()  #: replicators disconnected alone now (set_link_down)
        for name in self.clusters[1:]:  # the subscription exists, replicated, everywhere (created at Earliest)
            handle = f"standby-{name}"
            standby = sites.subscribe(name)
            self._record("open", name, consumer=handle, result="ok", subscription=sites.subscription)
            self._record("close", name, consumer=handle)
            standby.close()
        self.consumer: SiteConsumer | None = sites.subscribe(self.home)
        self._record("open", self.home, consumer=CONSUMER, result="ok", subscription=sites.subscription)
        self.producer = sites.producer(self.home)
        self._producers: dict[str, SiteProducer] = {}  #: producers in the other clusters, made on first use
        self._reads: dict[str, int] = {}  #: readers opened per cluster (each a new, uniquely named subscription)

    def _topic(self, cluster: str) -> str:
        return f"{self.sites.topic}@{cluster}"

    def _record(self, op: str, on: str, **fields: Any) -> None:
        """Record ``op`` on cluster ``on``'s copy of the topic."""
        self.writer.record(op, topic=self._topic(on), **fields)

    def publish(self, count: int, *, keys: int = 5, cluster: str | None = None) -> None:
        """Publish ``count`` messages in ``cluster`` (default: the first, where the consumer starts); message
        ``n`` of the run gets key ``k<n mod keys>``."""
        self.publish_keys([f"k{(self.sent + i) % keys}" for i in range(count)], cluster=cluster)

    def publish_keys(self, keys: Sequence[str], *, cluster: str | None = None) -> None:
        """Publish one message per key of ``keys``, in order, in ``cluster`` (default: the first).

        A message published in another cluster reaches the subscription through replication; its publish is
        recorded on that cluster's copy of the topic, by a producer named after the cluster.
        """
        on = self.home if cluster is None else cluster
        if on not in self.clusters:
            raise InvalidArgument(f"publish(cluster={cluster!r}): the clusters are {', '.join(self.clusters)}")
        producer = self.producer if on == self.home else self._producer_in(on)
        name = PRODUCER if on == self.home else f"{PRODUCER}-{on}"
        for key in keys:
            payload = f"m{self.sent}"
            t0 = self.sites.now_ns()
            msg_id = producer.send(payload, key)
            self.sent += 1
            self._record("publish", on, producer=name, key=key, msg_id=msg_id, uid=payload, result="ok", t0=t0)

    def _producer_in(self, cluster: str) -> SiteProducer:
        made = self._producers.get(cluster)
        if made is None:
            made = self._producers[cluster] = self.sites.producer(cluster)
        return made

    def _receive(self, consumer: SiteConsumer, cluster: str, timeout_ms: int) -> Delivery | None:
        got = consumer.receive(timeout_ms)
        if got is not None:
            self._record("receive", cluster, consumer=CONSUMER, key=got.key, msg_id=got.msg_id, uid=got.payload)
        return got

    def _ack(self, consumer: SiteConsumer, cluster: str, got: Delivery) -> None:
        self._record("ack", cluster, consumer=CONSUMER, key=got.key, msg_id=got.msg_id)
        consumer.acknowledge(got.token)
        self._acked.add(got.payload)

    def consume(self, ack: Callable[[int], bool]) -> None:
        """Receive what is there; acknowledge message number ``n`` iff ``ack(n)``, hold the others."""
        consumer = self._active()
        while len(self._received) < self.sent:
            got = self._receive(consumer, self.home, self.sites.consume_timeout_ms)
            if got is None:
                break
            self._received.add(got.payload)
            if ack(int(got.payload[1:])):
                self._ack(consumer, self.home, got)
            else:
                self.held.append(got)
        missing = self.sent - len(self._received)
        if missing and self.sites.consume_timeout_ms > 0:
            self.notes.append(
                f"{missing} published message(s) had not reached the consumer in {self.home}"
                f" {self.sites.consume_timeout_ms} ms after the last one that did"
            )

    def ack_held(self, ack: Callable[[int], bool]) -> None:
        consumer = self._active()
        keep = []
        for got in self.held:
            if ack(int(got.payload[1:])):
                self._ack(consumer, self.home, got)
            else:
                keep.append(got)
        self.held = keep

    def advance(self, ms: int) -> None:
        self.sites.elapse(ms)

    def set_down(self, cluster: str, down: bool = True) -> None:
        """Cut ``cluster`` off (or bring it back): a fault on the replication links that touches no consumer."""
        fault = "cluster_down" if down else "cluster_up"
        self.writer.record("fault", fault=fault, cluster=cluster, consumers=[], producers=[])
        self.sites.set_down(cluster, down)
        if down:
            self._down.add(cluster)
        else:
            self._down.discard(cluster)

    def set_link_down(self, source: str, remote: str, down: bool = True) -> None:
        """Disconnect (or reconnect) the replicator of one direction, ``source`` -> ``remote``: a ``fault``
        ``link_down`` / ``link_up`` touching no consumer; snapshots meanwhile are not ``settled``."""
        switch = getattr(self.sites, "set_link_down", None)
        if switch is None:
            raise UnsupportedByTarget("These clusters cannot disconnect the replicator of one direction.")
        fault = "link_down" if down else "link_up"
        self.writer.record("fault", fault=fault, cluster=source, remote=remote, consumers=[], producers=[])
        switch(source, remote, down)
        if down:
            self._links_down.add((source, remote))
        else:
            self._links_down.discard((source, remote))

    def compact(self, cluster: str) -> None:
        """Compact ``cluster``'s copy of the topic (admin ``triggerCompaction``, waited for), recorded as a ``fault``
        ``compaction`` touching no consumer: every message whose publish was confirmed before it is at or before
        the compaction horizon."""
        compact = getattr(self.sites, "compact", None)
        if compact is None:
            raise UnsupportedByTarget("These clusters cannot compact a topic.")
        self.writer.record("fault", fault="compaction", cluster=cluster, consumers=[], producers=[])
        compact(cluster)

    def read(self, cluster: str, compacted: bool = False) -> None:
        """Let replication settle (a ``snapshot`` per cluster), then read ``cluster``'s copy from the earliest
        message with a new reader while it has more, recorded as handle ``reader-<cluster>`` (``-<n>`` from the
        second on that cluster; ``open`` with
        ``reader: true``, its receives, ``close``); the replication check judges that it read every message
        published before, once each (``compacted``: a ``readCompacted`` reader, ``open`` with ``compacted: true``,
        judged against the last ``compaction`` there).  A reader acknowledges each message as it reads it (the clients'
        ``ReaderImpl.readNext``: its subscription is non-durable), recorded after each receive."""
        read_all = getattr(self.sites, "read_all", None)
        if read_all is None:
            raise UnsupportedByTarget("These clusters cannot open a reader.")
        self.snapshot()
        self._reads[cluster] = self._reads.get(cluster, 0) + 1
        handle = f"reader-{cluster}" if self._reads[cluster] == 1 else f"reader-{cluster}-{self._reads[cluster]}"
        flags: dict[str, Any] = {"compacted": True} if compacted else {}
        self._record("open", cluster, consumer=handle, result="ok", subscription=handle, reader=True, **flags)
        try:
            for got in read_all(cluster, handle, compacted=True) if compacted else read_all(cluster, handle):
                self._record("receive", cluster, consumer=handle, key=got.key, msg_id=got.msg_id, uid=got.payload)
                self._record("ack", cluster, consumer=handle, key=got.key, msg_id=got.msg_id)
        except Exception as exc:
            self.notes.append(f"the reader in {cluster} failed: {type(exc).__name__}: {exc}")
        self._record("close", cluster, consumer=handle)

    def set_replicator_faults(self, source: str, remote: str, *, lose_receipts: bool, repeat_window: int) -> None:
        """Faults of the replicator ``source`` -> ``remote``'s producer (receipts lost, sends repeated): a
        ``fault`` ``replicator_faults`` touching no consumer, with both settings."""
        switch = getattr(self.sites, "set_replicator_faults", None)
        if switch is None:
            raise UnsupportedByTarget("These clusters cannot inject faults into a replicator's producer.")
        self.writer.record(
            "fault",
            fault="replicator_faults",
            cluster=source,
            remote=remote,
            lose_receipts=lose_receipts,
            repeat_window=repeat_window,
            consumers=[],
            producers=[],
        )
        switch(source, remote, lose_receipts=lose_receipts, repeat_window=repeat_window)

    def delete_subscription(self, cluster: str) -> None:
        """Delete the subscription on ``cluster`` (admin ``deleteSubscription``; no consumer of it is there): a
        ``fault`` ``subscription_deleted`` touching no consumer.  A later cursor update must create it again.
        Deleting one that is not there (never created there, or deleted already) changes nothing: the admin API
        answers 404, the sites return False, and the fault is recorded all the same (it only loosens the bound)."""
        if cluster == self.home and self.consumer is not None:
            raise InvalidArgument(f"The consumer is connected in {cluster}: delete the subscription elsewhere.")
        delete = getattr(self.sites, "delete_subscription", None)
        if delete is None:
            raise UnsupportedByTarget("These clusters cannot delete a subscription.")
        self.writer.record(
            "fault",
            fault="subscription_deleted",
            cluster=cluster,
            subscription=self.sites.subscription,
            consumers=[],
            producers=[],
        )
        delete(cluster)

    def set_replicated(self, cluster: str, enabled: bool) -> None:
        """Switch the subscription's replicated status on ``cluster`` (admin ``replicatedSubscriptionStatus``),
        recorded as a ``fault`` touching no consumer: ``replicated_subscription_off`` / ``..._on``."""
        switch = getattr(self.sites, "set_replicated", None)
        if switch is None:
            raise UnsupportedByTarget("These clusters cannot switch a subscription's replicated status.")
        fault = "replicated_subscription_on" if enabled else "replicated_subscription_off"
        self.writer.record(
            "fault",
            fault=fault,
            cluster=cluster,
            subscription=self.sites.subscription,
            consumers=[],
            producers=[],
        )
        switch(cluster, enabled)

    def snapshot(self) -> None:
        """Let replication settle (bounded), then record a ``snapshot`` per cluster: the subscription's backlog
        there.  ``settled`` says that replication went idle with every cluster up, so each cluster's copy holds
        every message published before (``conformance.checks.replication`` judges only those); with it,
        ``snapshot_periods`` says how many whole snapshot periods the settle let pass between its two waits for
        idle replication (the sites' ``settle_periods``), so a snapshot started after every message published
        before it and completed (``redelivered_after_failover`` counts it as a point the cursor must pass)."""
        note = self.sites.settle()
        if note:
            self.notes.append(note)
        settled = note is None and not self._down and not self._links_down
        periods = getattr(self.sites, "settle_periods", None) if settled else None
        read_metrics = getattr(self.sites, "snapshot_metrics", None)
        for cluster in self.clusters:
            backlog = self.sites.backlog(cluster)
            if backlog is not None:
                metrics = read_metrics(cluster) if read_metrics is not None else None
                self.writer.record(
                    "snapshot",
                    subscription=self.sites.subscription,
                    cluster=cluster,
                    backlog=backlog,
                    settled=settled,
                    snapshot_periods=periods,
                    **({} if metrics is None else {"metrics": dict(metrics)}),
                )

    def fail_over(self, to: str) -> None:
        """Close the consumer (the application moves), let replication settle, resume and drain in ``to``."""
        consumer = self._active()
        self._record("close", self.home, consumer=CONSUMER)
        consumer.close()
        self.consumer = None
        self.snapshot()
        self._record("failover", self.home, subscription=self.sites.subscription, cluster=self.home, to=to)
        standby = self.sites.subscribe(to)
        self._record("open", to, consumer=CONSUMER, result="ok", subscription=self.sites.subscription)
        try:
            self._drain(standby, to)
        finally:
            self._record("close", to, consumer=CONSUMER)
            standby.close()
        self.moved_to = to

    def _drain(self, standby: SiteConsumer, to: str) -> None:
        """Receive and acknowledge in ``to`` until a receive times out with the consumer connected throughout.

        Silence proves nothing while the consumer is not connected (its client says so: ``is_connected()``, where
        the sites' consumers have it; the model's are always connected), nor in a window it was away at the start
        of (what it is owed on its return is still on its way): the drain then receives for up to
        :data:`AWAY_WINDOWS` more windows.  If the consumer is still away at the end with messages unacknowledged,
        the run is not drained and ``end`` names it in ``unreachable`` (docs/trace-format.md).
        """
        timeout_ms = self.sites.failover_timeout_ms
        windows = 0
        while True:
            connected = _connected(standby)
            got = self._receive(standby, to, timeout_ms)
            if got is not None:
                self._ack(standby, to, got)
                windows = 0
            elif (connected and _connected(standby)) or windows >= AWAY_WINDOWS:
                break
            else:
                windows += 1
        if _connected(standby) or len(self._acked) >= self.sent:
            self._drained = True
            return
        self.unreachable = [CONSUMER]
        self.notes.append(
            f"the drain in {to} could not reach consumer {CONSUMER!r} (not connected after"
            f" {AWAY_WINDOWS} more receive windows of {timeout_ms} ms, {self.sent - len(self._acked)} published"
            " messages unacknowledged): the run is not counted as drained"
        )

    def close(self) -> Path | None:
        """Write the ``end`` event, close what is still open (also after a failure half-way); the trace path."""
        if self._closed:
            return self.trace_path
        self._closed = True
        try:
            if self.consumer is not None:
                consumer, self.consumer = self.consumer, None
                self._record("close", self.home, consumer=CONSUMER)
                consumer.close()
        finally:
            self.writer.record(
                "end", drained=self._drained, notes=self.notes or None, unreachable=self.unreachable or None
            )
            self.writer.close()
            self.sites.close()
        return self.trace_path

    def __enter__(self) -> Failover:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _active(self) -> SiteConsumer:
        if self.consumer is None:
            raise RuntimeError("The consumer already failed over; build a new Failover for another run.")
        return self.consumer


@dataclass(frozen=True, slots=True)
class SiteEndpoint:
    """One cluster: where clients reach it, and its admin API (None: replication progress cannot be read)."""

    name: str
    service_url: str
    admin: AdminClient | None = None


def replication_idle(stats: Mapping[str, Any], peers: Sequence[str]) -> str | None:
    """None when the topic's replicators to every peer are connected and have no backlog; else what is not.

    ``stats`` is the topic stats JSON (``GET .../stats``): ``replication`` maps each remote cluster to its
    replicator's ``replicationBacklog`` and ``connected``.
    """
    replication = stats.get("replication")
    if not isinstance(replication, Mapping):
        return "the topic stats have no 'replication' section (is the namespace replicated?)"
    for peer in peers:
        entry = replication.get(peer)
        if not isinstance(entry, Mapping):
            return f"no replicator to {peer} yet"
        if entry.get("connected") is False:
            return f"the replicator to {peer} is not connected"
        backlog = entry.get("replicationBacklog")
        if not isinstance(backlog, int) or isinstance(backlog, bool):
            return f"the replicator to {peer} reports replicationBacklog={backlog!r}"
        if backlog > 0:
            return f"{backlog} entries still to replicate to {peer}"
    return None


def _client(service_url: str, operation_timeout_s: int) -> Any:
    import pulsar

    from pytest_keyshared.driver.pulsar_client import process_client_log

    return pulsar.Client(
        service_url,
        operation_timeout_seconds=operation_timeout_s,
        connection_timeout_ms=operation_timeout_s * 1000,
        logger=pulsar.FileLogger(pulsar.LoggerLevel.Info, str(process_client_log())),
    )


def _subscribe(client: Any, topic: str, subscription: str, receiver_queue: int = 1000) -> Any:
    import pulsar

    return client.subscribe(
        topic,
        subscription,
        consumer_type=pulsar.ConsumerType.KeyShared,
        initial_position=pulsar.InitialPosition.Earliest,
        replicate_subscription_state_enabled=True,
        receiver_queue_size=receiver_queue,
    )


def _connected(consumer: SiteConsumer) -> bool:
    """Whether ``consumer``'s client says it is connected (a consumer that cannot tell counts as away); one
    without ``is_connected`` (the model's) has no connection to lose."""
    ask = getattr(consumer, "is_connected", None)
    if ask is None:
        return True
    try:
        return ask() is True
    except Exception:
        return False


def _format_id(mid: Any) -> str:
    return f"{mid.ledger_id()}:{mid.entry_id()}:{mid.partition()}:{mid.batch_index()}"


class _Consumer:
    def __init__(self, consumer: Any) -> None:
        self._consumer = consumer

    def receive(self, timeout_ms: int) -> Delivery | None:
        import pulsar

        try:
            message = self._consumer.receive(timeout_millis=max(1, timeout_ms))
        except pulsar.Timeout:
            return None
        key = message.partition_key() or None
        return Delivery(message.data().decode("utf-8", "replace"), key, _format_id(message.message_id()), message)

    def acknowledge(self, token: Any) -> None:
        self._consumer.acknowledge(token)

    def is_connected(self) -> bool:
        return bool(self._consumer.is_connected())

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._consumer.close()


class _Producer:
    def __init__(self, producer: Any) -> None:
        self._producer = producer

    def send(self, payload: str, key: str) -> str:
        return _format_id(self._producer.send(payload.encode(), partition_key=key))


class BrokerSites:
    """Clusters reached through ``pulsar-client``, one client per cluster, on one topic of their own.

    ``consume_timeout_ms`` bounds each receive in the first cluster, ``failover_timeout_ms`` each receive
    after the failover (messages may still be on their way there: keep it above the replication lag).
    """

    def __init__(
        self,
        endpoints: Sequence[SiteEndpoint],
        *,
        topic: str,
        subscription: str = SUBSCRIPTION,
        operation_timeout_s: int = 10,
        snapshot_ms: int = 1000,
        settle_timeout_s: float = 30.0,
        set_down: Callable[[str, bool], None] | None = None,
        poll_s: float = 0.2,
        consume_timeout_ms: int = 1500,
        failover_timeout_ms: int = 5000,
        partitions: int = 0,
    ) -> None:
        if len(endpoints) < 2:
            raise TargetError(f"A failover needs two clusters or more, got {[e.name for e in endpoints]}.")
        self.endpoints = {e.name: e for e in endpoints}
        self.clusters = tuple(self.endpoints)
        self.topic = topic
        self.subscription = subscription
        self.operation_timeout_s = operation_timeout_s
        self.snapshot_ms = snapshot_ms
        self.settle_timeout_s = settle_timeout_s
        self.poll_s = poll_s
        self.consume_timeout_ms = consume_timeout_ms
        self.failover_timeout_ms = failover_timeout_ms
        self._set_down = set_down
        self._clients: dict[str, Any] = {}
        self._open: list[Any] = []
        #: 0: ``topic`` is one non-partitioned topic; N: a partitioned topic of N partitions, created through
        #: every cluster's admin API (clusters with their own configuration store each need its metadata)
        self.partitions = partitions
        if partitions:
            for endpoint in endpoints:
                if endpoint.admin is None:
                    raise UnsupportedByTarget(
                        f"{endpoint.name} has no admin API: a partitioned topic cannot be created there."
                    )
                endpoint.admin.create_partitioned_topic(topic, partitions)

    def _stats(self, admin: AdminClient) -> dict[str, Any]:
        """The topic's stats (of a partitioned topic: its partitioned stats, summed over the partitions)."""
        return admin.partitioned_stats(self.topic) if self.partitions else admin.topic_stats(self.topic)

    def _client_for(self, cluster: str) -> Any:
        if cluster not in self.endpoints:
            raise TargetError(f"No cluster {cluster!r} here; clusters: {', '.join(self.clusters)}.")
        client = self._clients.get(cluster)
        if client is None:
            client = _client(self.endpoints[cluster].service_url, self.operation_timeout_s)
            self._clients[cluster] = client
        return client

    def producer(self, cluster: str) -> _Producer:
        routed: dict[str, Any] = {}
        if self.partitions:  # as testReplicatedSubscriptionRestApi2's; a keyed message goes by its key's hash
            import pulsar

            routed["message_routing_mode"] = pulsar.PartitionsRoutingMode.UseSinglePartition
        producer = self._client_for(cluster).create_producer(
            self.topic, producer_name=PRODUCER, send_timeout_millis=self.operation_timeout_s * 1000, **routed
        )
        self._open.append(producer)
        return _Producer(producer)

    def subscribe(self, cluster: str) -> _Consumer:
        consumer = _subscribe(self._client_for(cluster), self.topic, self.subscription, self.receiver_queue)
        self._open.append(consumer)
        return _Consumer(consumer)

    def elapse(self, ms: int) -> None:
        time.sleep(ms / 1000)

    def now_ns(self) -> int:
        return time.monotonic_ns()

    def backlog(self, cluster: str) -> int | None:
        """The subscription's ``msgBacklog`` on ``cluster`` from its topic stats; None when it cannot be read."""
        admin = self.endpoints[cluster].admin if cluster in self.endpoints else None
        if admin is None:
            return None
        try:
            stats = self._stats(admin)
        except TargetError:
            return None
        sub = (stats.get("subscriptions") or {}).get(self.subscription)
        backlog = sub.get("msgBacklog") if isinstance(sub, Mapping) else None
        return backlog if isinstance(backlog, int) and not isinstance(backlog, bool) else None

    def snapshot_metrics(self, cluster: str) -> dict[str, int] | None:
        """The cluster's replicated-subscription snapshot counters (:data:`~conformance.target.SNAPSHOT_METRICS`)
        from its broker's Prometheus ``/metrics`` (a counter may carry the ``_total`` suffix; label sets are summed);
        None when the page cannot be read or shows neither."""
        admin = self.endpoints[cluster].admin if cluster in self.endpoints else None
        if admin is None:
            return None
        try:
            page = admin.request("GET", "/metrics/")
        except TargetError:
            return None
        return parse_snapshot_metrics(page) if isinstance(page, str) else None

    def idle_problem(self) -> str | None:
        """None when every cluster's replicators of the topic are idle; else the first thing still moving."""
        for name, endpoint in self.endpoints.items():
            if endpoint.admin is None:
                return f"{name} has no admin API"
            try:
                stats = self._stats(endpoint.admin)
            except TargetError as exc:
                return f"{name}: {exc}"
            problem = replication_idle(stats, [p for p in self.clusters if p != name])
            if problem is not None:
                return f"{name}: {problem}"
        return None

    def _wait_idle(self, deadline: float) -> str | None:
        while True:
            problem = self.idle_problem()
            if problem is None:
                return None
            if time.monotonic() >= deadline:
                return problem
            time.sleep(self.poll_s)

    #: Snapshot periods :meth:`settle` waits between its two waits for idle replication.
    settle_periods = 2
    #: the consumers' ``receiver_queue_size`` (a failover scenario's ``[settings] receiver_queue``)
    receiver_queue = 1000

    def settle(self) -> str | None:
        """Idle replication, two snapshot periods, idle again; a note when the bound expired (never a hang)."""
        if any(e.admin is None for e in self.endpoints.values()):
            time.sleep(self.settle_periods * self.snapshot_ms / 1000)
            return "replication progress cannot be read without the admin API; waited two snapshot periods"
        deadline = time.monotonic() + self.settle_timeout_s
        problem = self._wait_idle(deadline)
        time.sleep(self.settle_periods * self.snapshot_ms / 1000)
        problem = self._wait_idle(deadline) or problem
        if problem is not None:
            return f"replication not idle {self.settle_timeout_s:g}s after the failover began: {problem}"
        return None

    def read_all(self, cluster: str, name: str, compacted: bool = False) -> list[Delivery]:
        """A reader (``subscription_role_prefix`` ``name``) from the earliest message on ``cluster``, read while
        ``has_message_available()`` says more is there, each ``read_next`` bounded by ``failover_timeout_ms``
        (Pulsar's test asserts none times out); ``compacted``: ``is_read_compacted`` (``readCompacted``)."""
        import pulsar

        reader = self._client_for(cluster).create_reader(
            self.topic, pulsar.MessageId.earliest, subscription_role_prefix=name, is_read_compacted=compacted
        )
        got: list[Delivery] = []
        try:
            while reader.has_message_available():
                message = reader.read_next(timeout_millis=self.failover_timeout_ms)
                got.append(
                    Delivery(
                        message.data().decode("utf-8", "replace"),
                        message.partition_key() or None,
                        _format_id(message.message_id()),
                        None,
                    )
                )
        finally:
            with contextlib.suppress(Exception):
                reader.close()
        return got

    def delete_subscription(self, cluster: str) -> bool:
        """``DELETE .../subscription/{sub}`` on ``cluster``; False if it was not there (404)."""
        admin = self.endpoints[cluster].admin
        if admin is None:
            raise UnsupportedByTarget(f"{cluster} has no admin API: the subscription cannot be deleted.")
        return admin.delete_subscription(self.topic, self.subscription)

    def compact(self, cluster: str) -> None:
        """``PUT .../compaction`` on ``cluster``, waited for until it succeeds (bounded)."""
        admin = self.endpoints[cluster].admin
        if admin is None:
            raise UnsupportedByTarget(f"{cluster} has no admin API: the topic cannot be compacted.")
        admin.compact(self.topic)

    def set_replicated(self, cluster: str, enabled: bool) -> None:
        """``POST .../subscription/{sub}/replicatedSubscriptionStatus`` with ``true`` / ``false`` on ``cluster``."""
        admin = self.endpoints[cluster].admin
        if admin is None:
            raise UnsupportedByTarget(f"{cluster} has no admin API: the replicated status cannot be switched.")
        admin.set_replicated_subscription_status(self.topic, self.subscription, enabled)

    def set_down(self, cluster: str, down: bool) -> None:
        if self._set_down is None:
            raise UnsupportedByTarget("These clusters cannot be cut off (no set_down given).")
        self._set_down(cluster, down)

    def close(self) -> None:
        for handle in reversed(self._open):
            with contextlib.suppress(Exception):
                handle.close()
        self._open.clear()
        for client in self._clients.values():
            with contextlib.suppress(Exception):
                client.close()
        self._clients.clear()


def parse_snapshot_metrics(page: str) -> dict[str, int] | None:
    """:data:`~conformance.target.SNAPSHOT_METRICS` summed over their label sets in a Prometheus text page (a
    counter's ``_total`` sample counts as the counter); None when the page has neither."""
    totals: dict[str, float] = {}
    for line in page.splitlines():
        if not line or line.startswith("#"):
            continue
        name, _, rest = line.partition("{") if "{" in line.split(" ", 1)[0] else line.partition(" ")
        if name.endswith("_total"):
            name = name[: -len("_total")]
        if name not in SNAPSHOT_METRICS:
            continue
        value = rest.rpartition("}")[2] if "}" in rest else rest
        try:
            totals[name] = totals.get(name, 0.0) + float(value.split()[0])
        except (ValueError, IndexError):
            continue
    if not totals:
        return None
    return {name: int(totals.get(name, 0.0)) for name in SNAPSHOT_METRICS}


def probe_replication(
    clusters: Sequence[tuple[str, str]], *, topic: str, timeout_s: float, operation_timeout_s: int = 10
) -> None:
    """Prove replication flows: a message published in the first cluster arrives in every other one.

    ``clusters`` is ``[(name, service_url), ...]``.  Each other cluster subscribes first (Earliest), then the
    first publishes; every receive is bounded by what is left of ``timeout_s``.  :class:`TargetError` names the
    cluster that did not get it.
    """
    import pulsar

    first, *others = clusters
    clients: list[Any] = []
    try:
        consumers = []
        for name, url in others:
            client = _client(url, operation_timeout_s)
            clients.append(client)
            consumers.append(
                (name, client.subscribe(topic, "ks-probe", initial_position=pulsar.InitialPosition.Earliest))
            )
        client = _client(first[1], operation_timeout_s)
        clients.append(client)
        payload = f"probe from {first[0]}".encode()
        client.create_producer(topic).send(payload)
        deadline = time.monotonic() + timeout_s
        for name, consumer in consumers:
            while True:
                left_ms = int((deadline - time.monotonic()) * 1000)
                if left_ms <= 0:
                    raise TargetError(
                        f"Replication {first[0]} -> {name} does not work: a message published in {first[0]} on"
                        f" {topic} did not arrive in {name} within {timeout_s:g}s (see the brokers' logs)."
                    )
                try:
                    message = consumer.receive(timeout_millis=min(left_ms, 1000))
                except pulsar.Timeout:
                    continue
                if message.data() == payload:
                    break
    except TargetError:
        raise
    except Exception as exc:
        raise TargetError(f"Replication probe on {topic} failed: {type(exc).__name__}: {exc}") from None
    finally:
        for client in clients:
            with contextlib.suppress(Exception):
                client.close()
