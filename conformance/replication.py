"""Replicated subscriptions (PIP-33): fail a consumer over from one cluster to another and judge what it sees.

The contract (``replication``): a consumer that moves to another cluster resumes the replicated subscription
*without skipping* anything it did not acknowledge; it may see duplicates, because only the mark-delete
position is replicated, in snapshots, never individual acknowledgements (apache/pulsar#10054).

:class:`Failover` is the driver: publish in the first cluster, consume with an acknowledgement plan, let
snapshots run, cut clusters off, then resume in another cluster, and write down what happened in a
:class:`FailoverOutcome`.  It talks to the clusters through :class:`ReplicationSites` only, so the same driver
runs on clusters of the reference model (:class:`ModelSites`: model brokers on one simulated clock, composed by
``reference_model.replication``) and on real brokers (a target that offers ``replication_sites(...)``, such as
the ``testcontainers-geo`` target: two Apache Pulsar clusters reached through ``pulsar-client``).
:func:`judge_failover` is the pure judgement, and :func:`explain_failover` the Elle-style text.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

__all__ = [
    "Failover",
    "FailoverOutcome",
    "ModelSites",
    "ReplicationSites",
    "SiteConsumer",
    "SiteProducer",
    "explain_failover",
    "judge_failover",
]

TOPIC = "persistent://public/default/ks-replicated"
SUBSCRIPTION = "ks-replicated-sub"
PRODUCER = "ks-p"


@dataclass
class FailoverOutcome:
    """What the consumer saw: sent in the first cluster, acknowledged there, received after failing over.

    ``notes`` says what did not go to plan on the way (a bounded wait that expired, say); they do not change
    the judgement, which needs only the three lists.
    """

    clusters: list[str]
    sent: list[str] = field(default_factory=list)
    acked_before: list[str] = field(default_factory=list)
    received_after: list[str] = field(default_factory=list)
    moved_to: str = ""
    notes: list[str] = field(default_factory=list)

    def save(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(self), indent=1) + "\n", encoding="utf-8")
        return path


def judge_failover(outcome: FailoverOutcome) -> tuple[list[str], list[str], int]:
    """``(skipped, invented, duplicates)``.

    ``skipped``: sent, never acknowledged before the failover, and not received after it (a broken
    contract).  ``invented``: received after the failover but never sent (broken too).  ``duplicates``:
    messages acknowledged before the failover and received again after it (allowed; reported).
    """
    acked = set(outcome.acked_before)
    received = set(outcome.received_after)
    sent = set(outcome.sent)
    skipped = [m for m in outcome.sent if m not in acked and m not in received]
    invented = sorted(received - sent)
    duplicates = len(acked & received)
    return skipped, invented, duplicates


def explain_failover(outcome: FailoverOutcome, skipped: Sequence[str], invented: Sequence[str]) -> str:
    lines = [
        f"replication: the consumer failed over from {outcome.clusters[0]} to {outcome.moved_to} and lost messages",
        "Let:",
        f"  S = the {len(outcome.sent)} messages published in {outcome.clusters[0]}",
        f"  A = the {len(outcome.acked_before)} of them acknowledged in {outcome.clusters[0]} before the failover",
        f"  R = the {len(outcome.received_after)} messages received in {outcome.moved_to} after it",
        "Then:",
        "  - every message of S not in A must be in R (only acknowledged messages may be skipped).",
    ]
    if skipped:
        shown = ", ".join(skipped[:8]) + (f", ... ({len(skipped) - 8} more)" if len(skipped) > 8 else "")
        lines.append(
            f"  - However, {len(skipped)} unacknowledged message(s) never arrived in {outcome.moved_to}: {shown}."
        )
    if invented:
        lines.append(
            f"  - And {len(invented)} message(s) arrived that were never published: {', '.join(invented[:8])}."
        )
    if outcome.notes:
        lines.append("Notes: " + "; ".join(outcome.notes))
    return "\n".join(lines)


# --- what the driver needs from a set of clusters ------------------------------------------------------------


class SiteProducer(Protocol):
    def send(self, payload: str, key: str) -> None:
        """Publish ``payload`` (its identity) with partition key ``key``; raise if the broker refused it."""


class SiteConsumer(Protocol):
    def receive(self, timeout_ms: int) -> tuple[str, Any] | None:
        """``(payload, token)`` of the next message, or None when none arrived within ``timeout_ms``."""

    def acknowledge(self, token: Any) -> None: ...

    def close(self) -> None: ...


class ReplicationSites(Protocol):
    """Clusters with a replicated namespace, as the failover driver uses them.

    ``consume_timeout_ms`` bounds each receive while consuming in the first cluster, ``failover_timeout_ms``
    each receive after the failover (the consumer stops at the first receive that times out).  ``elapse``
    lets time pass (the model advances its clock; real brokers sleep); ``settle`` waits, bounded, until
    replication between the clusters is idle and returns a note when its bound expired.
    """

    clusters: tuple[str, ...]
    consume_timeout_ms: int
    failover_timeout_ms: int

    def producer(self, cluster: str) -> SiteProducer: ...

    def subscribe(self, cluster: str) -> SiteConsumer:
        """A Key_Shared consumer of the replicated subscription (``replicateSubscriptionState``, Earliest)."""

    def elapse(self, ms: int) -> None: ...

    def settle(self) -> str | None: ...

    def set_down(self, cluster: str, down: bool) -> None: ...

    def close(self) -> None: ...


# --- the driver -----------------------------------------------------------------------------------------------


class Failover:
    """A producer and a replicated consumer in the first cluster; the consumer later moves to another one.

    Message ``n`` carries payload ``m<n>`` and partition key ``k<n mod keys>``.  Every wait is bounded by the
    sites' receive timeouts: the consumer keeps receiving while messages arrive and stops at the first receive
    that times out, or as soon as it has everything that was sent.
    """

    def __init__(self, sites: ReplicationSites) -> None:
        self.sites = sites
        clusters = tuple(sites.clusters)
        self.outcome = FailoverOutcome(clusters=list(clusters))
        for name in clusters[1:]:  # the subscription exists, replicated, everywhere (created at Earliest)
            sites.subscribe(name).close()
        self.consumer: SiteConsumer | None = sites.subscribe(clusters[0])
        self.producer = sites.producer(clusters[0])
        self._producers: dict[str, SiteProducer] = {}  #: producers in the other clusters, made on first use
        self.held: list[tuple[str, Any]] = []
        self._received: set[str] = set()

    @classmethod
    def on_model(
        cls,
        *,
        clusters: Sequence[str] = ("r1", "r2"),
        pulsar_version: Any = "4.0",
        implementation: str | None = None,
        config: Any = None,
        seed: int = 0,
        delays_ms: dict[tuple[str, str], int] | None = None,
    ) -> Failover:
        """Clusters of model brokers on one clock (see :class:`ModelSites`)."""
        sites = ModelSites(
            clusters=clusters,
            pulsar_version=pulsar_version,
            implementation=implementation,
            config=config,
            seed=seed,
            delays_ms=delays_ms,
        )
        return cls(sites)

    def publish(self, count: int, *, keys: int = 5, cluster: str | None = None) -> None:
        """Publish ``count`` messages in ``cluster`` (default: the first, where the consumer starts)."""
        producer = self.producer
        if cluster is not None and cluster != self.outcome.clusters[0]:
            producer = self._producers.get(cluster) or self._producers.setdefault(cluster, self.sites.producer(cluster))
        for _ in range(count):
            number = len(self.outcome.sent)
            payload = f"m{number}"
            producer.send(payload, f"k{number % keys}")
            self.outcome.sent.append(payload)

    def consume(self, ack: Callable[[int], bool]) -> None:
        """Receive what is there; acknowledge message number ``n`` iff ``ack(n)``, hold the others."""
        consumer = self._active()
        while len(self._received) < len(self.outcome.sent):
            got = consumer.receive(self.sites.consume_timeout_ms)
            if got is None:
                break
            payload, token = got
            self._received.add(payload)
            if ack(int(payload[1:])):
                consumer.acknowledge(token)
                self.outcome.acked_before.append(payload)
            else:
                self.held.append((payload, token))
        missing = len(self.outcome.sent) - len(self._received)
        if missing and self.sites.consume_timeout_ms > 0:
            self.outcome.notes.append(
                f"{missing} published message(s) had not reached the consumer in {self.outcome.clusters[0]}"
                f" {self.sites.consume_timeout_ms} ms after the last one that did"
            )

    def ack_held(self, ack: Callable[[int], bool]) -> None:
        consumer = self._active()
        keep = []
        for payload, token in self.held:
            if ack(int(payload[1:])):
                consumer.acknowledge(token)
                self.outcome.acked_before.append(payload)
            else:
                keep.append((payload, token))
        self.held = keep

    def advance(self, ms: int) -> None:
        self.sites.elapse(ms)

    def set_down(self, cluster: str, down: bool = True) -> None:
        self.sites.set_down(cluster, down)

    def fail_over(self, to: str) -> FailoverOutcome:
        """Close the consumer (the application moves), let replication settle, resume in ``to``."""
        self._active().close()
        self.consumer = None
        note = self.sites.settle()
        if note:
            self.outcome.notes.append(note)
        standby = self.sites.subscribe(to)
        try:
            while (got := standby.receive(self.sites.failover_timeout_ms)) is not None:
                payload, token = got
                self.outcome.received_after.append(payload)
                standby.acknowledge(token)
        finally:
            standby.close()
        self.outcome.moved_to = to
        return self.outcome

    def close(self) -> None:
        """Close what is still open (also after a failure half-way)."""
        if self.consumer is not None:
            consumer, self.consumer = self.consumer, None
            consumer.close()
        self.sites.close()

    def _active(self) -> SiteConsumer:
        if self.consumer is None:
            raise RuntimeError("The consumer already failed over; build a new Failover for another run.")
        return self.consumer


# --- clusters of the reference model --------------------------------------------------------------------------


class _ModelConsumer:
    def __init__(self, consumer: Any) -> None:
        self._consumer = consumer

    def receive(self, timeout_ms: int) -> tuple[str, Any] | None:
        message = self._consumer.receive(timeout_ms)
        return None if message is None else (message.data().decode(), message)

    def acknowledge(self, token: Any) -> None:
        self._consumer.acknowledge(token)

    def close(self) -> None:
        self._consumer.close()


class _ModelProducer:
    def __init__(self, producer: Any) -> None:
        self._producer = producer

    def send(self, payload: str, key: str) -> None:
        self._producer.send(payload.encode(), partition_key=key)


class ModelSites:
    """Model brokers, one per cluster, on one simulated clock (``reference_model.replication``).

    Consuming in the first cluster receives with timeout 0 (what the model has dispatched at this instant);
    after the failover each receive may wait 200 simulated ms.  ``settle`` runs the replication layer until
    it is idle.
    """

    consume_timeout_ms = 0
    failover_timeout_ms = 200

    def __init__(
        self,
        *,
        clusters: Sequence[str] = ("r1", "r2"),
        pulsar_version: Any = "4.0",
        implementation: str | None = None,
        config: Any = None,
        seed: int = 0,
        delays_ms: dict[tuple[str, str], int] | None = None,
    ) -> None:
        from reference_model.broker import ModelBroker
        from reference_model.broker.clock import SimClock
        from reference_model.replication import ReplicatedClusters

        self.clusters = tuple(clusters)
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
        self.layer = ReplicatedClusters(list(self.brokers.values()), delays_ms=delays_ms)

    def producer(self, cluster: str) -> SiteProducer:
        return _ModelProducer(self.brokers[cluster].create_producer(TOPIC, producer_name=PRODUCER))

    def subscribe(self, cluster: str) -> SiteConsumer:
        consumer = self.brokers[cluster].subscribe(
            TOPIC, SUBSCRIPTION, replicate_subscription_state=True, initial_position="Earliest"
        )
        return _ModelConsumer(consumer)

    def elapse(self, ms: int) -> None:
        self.layer.advance(ms)

    def settle(self) -> str | None:
        self.layer.run_until_idle()
        return None

    def set_down(self, cluster: str, down: bool) -> None:
        self.layer.set_down(cluster, down)

    def close(self) -> None:
        """Nothing to release: the model lives in memory."""
