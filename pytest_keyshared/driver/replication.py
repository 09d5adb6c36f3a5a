"""Real clusters for the failover driver: producers and replicated consumers through ``pulsar-client``.

:class:`BrokerSites` gives :class:`conformance.replication.Failover` what it needs from a set of
clusters (the ``ReplicationSites`` shape): a producer in a cluster, a Key_Shared consumer of the replicated
subscription in a cluster (``replicate_subscription_state_enabled=True``, Earliest), time passing, and a
bounded wait until replication is idle.  The driver's logic is the same one that runs on clusters of the
reference model; only the I/O is here.

Idle replication is read from each cluster's topic stats (admin API): every outbound replicator is
connected and has no backlog.  :meth:`BrokerSites.settle` waits for that, lets two snapshot periods pass (a
snapshot started now completes, and the subscription-update marker a moved mark-delete writes is sent), and
waits for it again.  Every wait is bounded; an expired bound becomes a note in the failover's outcome, not a
hang.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_keyshared.targets.admin import AdminClient
from pytest_keyshared.targets.base import TargetError, UnsupportedByTarget

__all__ = ["BrokerSites", "SiteEndpoint", "probe_replication", "replication_idle"]

SUBSCRIPTION = "ks-replicated-sub"
PRODUCER = "ks-p"


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


def _subscribe(client: Any, topic: str, subscription: str) -> Any:
    import pulsar

    return client.subscribe(
        topic,
        subscription,
        consumer_type=pulsar.ConsumerType.KeyShared,
        initial_position=pulsar.InitialPosition.Earliest,
        replicate_subscription_state_enabled=True,
        receiver_queue_size=1000,
    )


class _Consumer:
    def __init__(self, consumer: Any) -> None:
        self._consumer = consumer

    def receive(self, timeout_ms: int) -> tuple[str, Any] | None:
        import pulsar

        try:
            message = self._consumer.receive(timeout_millis=max(1, timeout_ms))
        except pulsar.Timeout:
            return None
        return message.data().decode("utf-8", "replace"), message

    def acknowledge(self, token: Any) -> None:
        self._consumer.acknowledge(token)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._consumer.close()


class _Producer:
    def __init__(self, producer: Any) -> None:
        self._producer = producer

    def send(self, payload: str, key: str) -> None:
        self._producer.send(payload.encode(), partition_key=key)


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

    def _client_for(self, cluster: str) -> Any:
        if cluster not in self.endpoints:
            raise TargetError(f"No cluster {cluster!r} here; clusters: {', '.join(self.clusters)}.")
        client = self._clients.get(cluster)
        if client is None:
            client = _client(self.endpoints[cluster].service_url, self.operation_timeout_s)
            self._clients[cluster] = client
        return client

    def producer(self, cluster: str) -> _Producer:
        producer = self._client_for(cluster).create_producer(
            self.topic, producer_name=PRODUCER, send_timeout_millis=self.operation_timeout_s * 1000
        )
        self._open.append(producer)
        return _Producer(producer)

    def subscribe(self, cluster: str) -> _Consumer:
        consumer = _subscribe(self._client_for(cluster), self.topic, self.subscription)
        self._open.append(consumer)
        return _Consumer(consumer)

    def elapse(self, ms: int) -> None:
        time.sleep(ms / 1000)

    def idle_problem(self) -> str | None:
        """None when every cluster's replicators of the topic are idle; else the first thing still moving."""
        for name, endpoint in self.endpoints.items():
            if endpoint.admin is None:
                return f"{name} has no admin API"
            try:
                stats = endpoint.admin.topic_stats(self.topic)
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

    def settle(self) -> str | None:
        """Idle replication, two snapshot periods, idle again; a note when the bound expired (never a hang)."""
        if any(e.admin is None for e in self.endpoints.values()):
            time.sleep(2 * self.snapshot_ms / 1000)
            return "replication progress cannot be read without the admin API; waited two snapshot periods"
        deadline = time.monotonic() + self.settle_timeout_s
        problem = self._wait_idle(deadline)
        time.sleep(2 * self.snapshot_ms / 1000)
        problem = self._wait_idle(deadline) or problem
        if problem is not None:
            return f"replication not idle {self.settle_timeout_s:g}s after the failover began: {problem}"
        return None

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
