"""The failover driver (``conformance.replication.Failover``) on clusters of the reference model.

The same driver runs on real clusters (``BrokerSites``, in ``tests/broker/test_failover_driver.py`` against
pulsar-lite and in ``tests/docker/`` against two Apache Pulsar clusters); here its logic is exercised on the
model: the judgement is clean when the clusters keep the contract, catches a cluster that skips messages or
delivers nothing, every wait ends, and the same seed gives the same outcome.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from conformance.replication import (
    Failover,
    FailoverOutcome,
    ModelSites,
    SiteConsumer,
    SiteProducer,
    explain_failover,
    judge_failover,
)

SNAPSHOT_MS = 1000


def switch_to_standby(run: Failover) -> FailoverOutcome:
    """ReplicatorSubscriptionTest.testReplicatedSubscribeAndSwitchToStandbyCluster, as the suite's case runs it."""
    run.publish(20)
    run.advance(10)
    run.consume(lambda i: i < 10)
    run.advance(3 * SNAPSHOT_MS)
    return run.fail_over("r2")


def test_a_failover_on_model_clusters_skips_nothing_and_counts_duplicates(tmp_path: Path) -> None:
    outcome = switch_to_standby(Failover.on_model(seed=3))
    skipped, invented, duplicates = judge_failover(outcome)
    assert (skipped, invented) == ([], [])
    assert outcome.sent == [f"m{n}" for n in range(20)]
    assert outcome.acked_before == [f"m{n}" for n in range(10)]
    assert set(outcome.received_after) >= {f"m{n}" for n in range(10, 20)}
    assert duplicates == len(set(outcome.acked_before) & set(outcome.received_after))
    assert outcome.moved_to == "r2" and outcome.notes == []
    saved = json.loads(outcome.save(tmp_path / "failover.json").read_text())
    assert saved == asdict(outcome)


def test_the_same_seed_gives_the_same_outcome() -> None:
    first = asdict(switch_to_standby(Failover.on_model(seed=11)))
    assert asdict(switch_to_standby(Failover.on_model(seed=11))) == first


class _Skipping:
    """A standby consumer that never hands over one message: a cluster that broke the contract."""

    def __init__(self, inner: SiteConsumer, hide: str) -> None:
        self.inner = inner
        self.hide = hide

    def receive(self, timeout_ms: int) -> tuple[str, Any] | None:
        got = self.inner.receive(timeout_ms)
        if got is not None and got[0] == self.hide:
            self.inner.acknowledge(got[1])
            return self.inner.receive(timeout_ms)
        return got

    def acknowledge(self, token: Any) -> None:
        self.inner.acknowledge(token)

    def close(self) -> None:
        self.inner.close()


class SkippingSites(ModelSites):
    def subscribe(self, cluster: str) -> SiteConsumer:
        consumer = super().subscribe(cluster)
        return _Skipping(consumer, "m13") if cluster == "r2" else consumer


def test_a_cluster_that_skips_an_unacknowledged_message_is_caught_and_explained() -> None:
    outcome = switch_to_standby(Failover(SkippingSites(seed=3)))
    skipped, invented, _ = judge_failover(outcome)
    assert (skipped, invented) == (["m13"], [])
    text = explain_failover(outcome, skipped, invented)
    assert "failed over from r1 to r2 and lost messages" in text
    assert "However, 1 unacknowledged message(s) never arrived in r2: m13." in text


class _Silent:
    def receive(self, timeout_ms: int) -> tuple[str, Any] | None:
        return None

    def acknowledge(self, token: Any) -> None:
        raise AssertionError("nothing was received")

    def close(self) -> None:
        pass


class _Sink:
    def send(self, payload: str, key: str) -> None:
        pass


class SilentSites:
    """Clusters that accept messages and deliver none, with real-broker receive bounds."""

    clusters: tuple[str, ...] = ("r1", "r2")
    consume_timeout_ms = 50
    failover_timeout_ms = 50

    def __init__(self) -> None:
        self.closed = False
        self.elapsed = 0

    def producer(self, cluster: str) -> SiteProducer:
        return _Sink()

    def subscribe(self, cluster: str) -> SiteConsumer:
        return _Silent()

    def elapse(self, ms: int) -> None:
        self.elapsed += ms

    def settle(self) -> str | None:
        return "replication not idle 1s after the failover began: r1: 4 entries still to replicate to r2"

    def set_down(self, cluster: str, down: bool) -> None:
        pass

    def close(self) -> None:
        self.closed = True


def test_clusters_that_deliver_nothing_end_the_run_with_notes_and_a_violation() -> None:
    sites = SilentSites()
    run = Failover(sites)
    outcome = switch_to_standby(run)
    skipped, _, _ = judge_failover(outcome)
    assert skipped == outcome.sent  # nothing was acknowledged, nothing arrived after
    assert outcome.notes == [
        "20 published message(s) had not reached the consumer in r1 50 ms after the last one that did",
        "replication not idle 1s after the failover began: r1: 4 entries still to replicate to r2",
    ]
    assert "Notes: 20 published message(s)" in explain_failover(outcome, skipped, [])
    run.close()
    assert sites.closed
    with pytest.raises(RuntimeError, match="already failed over"):
        run.consume(lambda i: True)
