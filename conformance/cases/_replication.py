"""Replicated subscriptions (PIP-33): fail a consumer over from one cluster to another and judge what it sees.

The contract (``replication``): a consumer that moves to another cluster resumes the replicated subscription
*without skipping* anything it did not acknowledge; it may see duplicates, because only the mark-delete
position is replicated, in snapshots, never individual acknowledgements (apache/pulsar#10054).

:class:`Failover` drives clusters of the reference model (``reference_model.replication``) through the
client surface of :class:`~reference_model.broker.ModelBroker`: publish in the first cluster, consume with
an acknowledgement plan, let snapshots run, cut clusters off, then resume in another cluster.
:func:`judge_failover` is the pure judgement, and :func:`explain_failover` the Elle-style text.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Failover", "FailoverOutcome", "explain_failover", "judge_failover"]

TOPIC = "persistent://public/default/ks-replicated"
SUBSCRIPTION = "ks-replicated-sub"


@dataclass
class FailoverOutcome:
    """What the consumer saw: sent in the first cluster, acknowledged there, received after failing over."""

    clusters: list[str]
    sent: list[str] = field(default_factory=list)
    acked_before: list[str] = field(default_factory=list)
    received_after: list[str] = field(default_factory=list)
    moved_to: str = ""

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
    return "\n".join(lines)


class Failover:
    """Clusters of model brokers on one clock, a producer and a replicated consumer in the first cluster."""

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
        self.outcome = FailoverOutcome(clusters=list(clusters))
        for name in clusters[1:]:  # the subscription exists, replicated, everywhere (created at Earliest)
            self.brokers[name].subscribe(
                TOPIC, SUBSCRIPTION, replicate_subscription_state=True, initial_position="Earliest"
            ).close()
        first = self.brokers[clusters[0]]
        self.consumer = first.subscribe(
            TOPIC, SUBSCRIPTION, replicate_subscription_state=True, initial_position="Earliest"
        )
        self.producer = first.create_producer(TOPIC, producer_name="ks-p")
        self.held: list[Any] = []

    def publish(self, count: int, *, keys: int = 5) -> None:
        for _ in range(count):
            payload = f"m{len(self.outcome.sent)}"
            self.producer.send(payload.encode(), partition_key=f"k{len(self.outcome.sent) % keys}")
            self.outcome.sent.append(payload)

    def consume(self, ack: Callable[[int], bool]) -> None:
        """Receive what is there; acknowledge message number ``n`` iff ``ack(n)``, hold the others."""
        while (message := self.consumer.receive(0)) is not None:
            payload = message.data().decode()
            if ack(int(payload[1:])):
                self.consumer.acknowledge(message)
                self.outcome.acked_before.append(payload)
            else:
                self.held.append(message)

    def ack_held(self, ack: Callable[[int], bool]) -> None:
        keep = []
        for message in self.held:
            payload = message.data().decode()
            if ack(int(payload[1:])):
                self.consumer.acknowledge(message)
                self.outcome.acked_before.append(payload)
            else:
                keep.append(message)
        self.held = keep

    def advance(self, ms: int) -> None:
        self.layer.advance(ms)

    def set_down(self, cluster: str, down: bool = True) -> None:
        self.layer.set_down(cluster, down)

    def fail_over(self, to: str, *, receive_timeout_ms: int = 200) -> FailoverOutcome:
        """Close the consumer (the application moves), let replication settle, resume in ``to``."""
        self.consumer.close()
        self.layer.run_until_idle()
        standby = self.brokers[to].subscribe(TOPIC, SUBSCRIPTION, replicate_subscription_state=True)
        while (message := standby.receive(receive_timeout_ms)) is not None:
            self.outcome.received_after.append(message.data().decode())
            standby.acknowledge(message)
        self.outcome.moved_to = to
        return self.outcome
