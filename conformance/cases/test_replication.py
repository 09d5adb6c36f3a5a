"""Replicated-subscription cases: a consumer fails over to another cluster and must not skip what it did not
acknowledge (``replication/<name>``).

They follow ``ReplicatorSubscriptionTest`` (pulsar-semantics.md §6) and run on clusters of the reference
model built with the target's version, implementation and broker settings: a model target is one cluster,
and these cases compose several (``reference_model.replication``).  A real target runs them only where it
can provide a second cluster; pulsar-lite cannot (no geo-replication), and the suite's testcontainers target
starts a single standalone, so there they skip with the reason.  Duplicates after a failover are allowed by
the contract (only the mark-delete position replicates, apache/pulsar#10054): they are counted, not failed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from conformance.cases._replication import Failover, FailoverOutcome, explain_failover, judge_failover

pytestmark = pytest.mark.keyshared_contract("replication")

SNAPSHOT_MS = 1000  #: replicatedSubscriptionsSnapshotFrequencyMillis (Pulsar's default)


def _model_clusters(target: Any, seed: int, clusters: tuple[str, ...] = ("r1", "r2"), **kw: Any) -> Failover:
    if getattr(target, "kind", None) != "model":
        caps = getattr(target, "capabilities", None)
        why = getattr(caps, "reasons", {}).get("replication") or "it offers no second cluster"
        pytest.skip(
            f"target {target.name} lacks replication: {why} (the replication cases run on clusters of the"
            " reference model; pass --keyshared-target=model)"
        )
    return Failover(
        clusters=clusters,
        pulsar_version=target.version,
        implementation=target.implementation,
        config=target.config,
        seed=seed,
        **kw,
    )


def _judge(outcome: FailoverOutcome, check: Any, artifacts: Any) -> None:
    evidence = outcome.save(artifacts / "failover.json")
    check.case.record.traces.append(str(evidence))
    skipped, invented, duplicates = judge_failover(outcome)
    print(
        f"failover {outcome.clusters[0]} -> {outcome.moved_to}: sent {len(outcome.sent)}, acknowledged before"
        f" {len(outcome.acked_before)}, received after {len(outcome.received_after)}, duplicates {duplicates}"
    )
    if skipped or invented:
        check.violation("replication", explain_failover(outcome, skipped, invented), kind="skipped_after_failover")


def _every(n: int) -> Callable[[int], bool]:
    return lambda i: i % n == 0


def test_across_two_regions(
    keyshared_target: Any, keyshared_seed: int, keyshared_check: Any, keyshared_artifacts: Any
) -> None:
    """testReplicatedSubscriptionAcrossTwoRegions: 6 messages, 3 consumed in r1, the rest in r2."""
    run = _model_clusters(keyshared_target, keyshared_seed)
    run.publish(6)
    run.advance(10)
    run.consume(lambda i: i < 3)
    run.ack_held(lambda i: False)
    run.advance(2 * SNAPSHOT_MS)
    outcome = run.fail_over("r2")
    _judge(outcome, keyshared_check, keyshared_artifacts)
    assert set(outcome.acked_before) | set(outcome.received_after) == set(outcome.sent)


def test_switch_to_standby(
    keyshared_target: Any, keyshared_seed: int, keyshared_check: Any, keyshared_artifacts: Any
) -> None:
    """testReplicatedSubscribeAndSwitchToStandbyCluster: 20 messages, half consumed in r1, switch: all received."""
    run = _model_clusters(keyshared_target, keyshared_seed)
    run.publish(20)
    run.advance(10)
    run.consume(lambda i: i < 10)
    run.advance(3 * SNAPSHOT_MS)
    _judge(run.fail_over("r2"), keyshared_check, keyshared_artifacts)


def test_ack_holes(keyshared_target: Any, keyshared_seed: int, keyshared_check: Any, keyshared_artifacts: Any) -> None:
    """Acknowledgements with holes (every other message): the mark-delete lags; r2 must still get every hole."""
    run = _model_clusters(keyshared_target, keyshared_seed)
    for _ in range(8):
        run.publish(10)
        run.advance(250)
        run.consume(_every(2))
        run.advance(250)
    run.advance(3 * SNAPSHOT_MS)
    _judge(run.fail_over("r2"), keyshared_check, keyshared_artifacts)


def test_three_clusters(
    keyshared_target: Any, keyshared_seed: int, keyshared_check: Any, keyshared_artifacts: Any
) -> None:
    """Three clusters take two snapshot rounds (ReplicatedSubscriptionsSnapshotBuilder); fail over to r3."""
    run = _model_clusters(keyshared_target, keyshared_seed, clusters=("r1", "r2", "r3"))
    for _ in range(5):
        run.publish(8)
        run.advance(300)
        run.consume(lambda i: i % 3 != 1)
        run.advance(700)
    run.advance(3 * SNAPSHOT_MS)
    _judge(run.fail_over("r3"), keyshared_check, keyshared_artifacts)


def test_remote_down_during_traffic(
    keyshared_target: Any, keyshared_seed: int, keyshared_check: Any, keyshared_artifacts: Any
) -> None:
    """r2 is cut off while r1 consumes (no snapshot can complete), then returns; the failover still skips nothing."""
    run = _model_clusters(keyshared_target, keyshared_seed)
    run.publish(10)
    run.advance(10)
    run.consume(lambda i: True)
    run.advance(2 * SNAPSHOT_MS)
    run.set_down("r2")
    for _ in range(4):
        run.publish(10)
        run.advance(400)
        run.consume(_every(3))
        run.advance(600)
    run.set_down("r2", down=False)
    run.advance(4 * SNAPSHOT_MS)
    _judge(run.fail_over("r2"), keyshared_check, keyshared_artifacts)


def test_slow_replication_link(
    keyshared_target: Any, keyshared_seed: int, keyshared_check: Any, keyshared_artifacts: Any
) -> None:
    """A replication delay of 900 ms (close to the snapshot frequency): the failover still skips nothing."""
    run = _model_clusters(keyshared_target, keyshared_seed, delays_ms={("r1", "r2"): 900, ("r2", "r1"): 900})
    for _ in range(6):
        run.publish(5)
        run.advance(200)
        run.consume(lambda i: i % 4 != 0)
        run.advance(800)
    run.ack_held(lambda i: i % 8 == 0)
    run.advance(5 * SNAPSHOT_MS)
    _judge(run.fail_over("r2"), keyshared_check, keyshared_artifacts)
