"""Replicated-subscription cases: a consumer fails over to another cluster and must not skip what it did not
acknowledge (``replication/<name>``).

They follow ``ReplicatorSubscriptionTest`` (pulsar-semantics.md §6).  The same driver
(:class:`~conformance.replication.Failover`) runs them on two kinds of clusters:

* a model target (``model``, ``model:classic``, ...) is one cluster; the cases compose several of them,
  built with the target's version, implementation and broker settings (``reference_model.replication``);
* a target that declares the ``replication`` capability and offers ``replication_sites(...)`` provides real
  clusters: ``testcontainers-geo`` starts two Apache Pulsar standalones (``r1``, ``r2``) with a replicated
  namespace.  A case that needs more clusters than the target has, or a delayed replication link, skips there
  with the reason.

Elsewhere (pulsar-lite, a single broker by URL, one standalone) they skip with the reason.  Duplicates after a
failover are allowed by the contract (only the mark-delete position replicates, apache/pulsar#10054): they are
counted, not failed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from conformance.replication import Failover, FailoverOutcome, explain_failover, judge_failover

pytestmark = pytest.mark.keyshared_contract("replication")

SNAPSHOT_MS = 1000  #: replicatedSubscriptionsSnapshotFrequencyMillis (Pulsar's default)


@contextlib.contextmanager
def _clusters(
    target: Any, seed: int, case: str, clusters: tuple[str, ...] = ("r1", "r2"), **kw: Any
) -> Iterator[Failover]:
    """The failover driver on the target's clusters (model or real); closed whatever happens."""
    if getattr(target, "kind", None) == "model":
        run = Failover.on_model(
            clusters=clusters,
            pulsar_version=target.version,
            implementation=target.implementation,
            config=target.config,
            seed=seed,
            **kw,
        )
    else:
        caps = getattr(target, "capabilities", None)
        offer = getattr(target, "replication_sites", None)
        if not getattr(caps, "replication", False) or not callable(offer):
            why = getattr(caps, "reasons", {}).get("replication") or "it offers no second cluster"
            pytest.skip(
                f"target {target.name} lacks replication: {why} (the replication cases run on clusters of the"
                " reference model, --keyshared-target=model, or on two Apache Pulsar clusters,"
                " --keyshared-target=testcontainers-geo)"
            )
        available = tuple(getattr(target, "cluster_names", ()))
        if not set(clusters) <= set(available):
            pytest.skip(
                f"target {target.name} has clusters {', '.join(available)}; this case needs {', '.join(clusters)}"
            )
        if kw.get("delays_ms"):
            pytest.skip(f"target {target.name} cannot delay its replication link (the model can)")
        run = Failover(offer(case=case, seed=seed, clusters=clusters))
    try:
        yield run
    finally:
        run.close()


def _judge(outcome: FailoverOutcome, check: Any, artifacts: Any, target: Any = None) -> None:
    evidence = outcome.save(artifacts / "failover.json")
    check.case.record.traces.append(str(evidence))
    save_logs = getattr(target, "save_cluster_logs", None)
    if callable(save_logs):  # real clusters: both brokers' logs beside the outcome
        save_logs(artifacts)
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
    with _clusters(keyshared_target, keyshared_seed, "across-two-regions") as run:
        run.publish(6)
        run.advance(10)
        run.consume(lambda i: i < 3)
        run.ack_held(lambda i: False)
        run.advance(2 * SNAPSHOT_MS)
        outcome = run.fail_over("r2")
    _judge(outcome, keyshared_check, keyshared_artifacts, keyshared_target)
    assert set(outcome.acked_before) | set(outcome.received_after) == set(outcome.sent)


def test_switch_to_standby(
    keyshared_target: Any, keyshared_seed: int, keyshared_check: Any, keyshared_artifacts: Any
) -> None:
    """testReplicatedSubscribeAndSwitchToStandbyCluster: 20 messages, half consumed in r1, switch: all received."""
    with _clusters(keyshared_target, keyshared_seed, "switch-to-standby") as run:
        run.publish(20)
        run.advance(10)
        run.consume(lambda i: i < 10)
        run.advance(3 * SNAPSHOT_MS)
        outcome = run.fail_over("r2")
    _judge(outcome, keyshared_check, keyshared_artifacts, keyshared_target)


def test_ack_holes(keyshared_target: Any, keyshared_seed: int, keyshared_check: Any, keyshared_artifacts: Any) -> None:
    """Acknowledgements with holes (every other message): the mark-delete lags; r2 must still get every hole."""
    with _clusters(keyshared_target, keyshared_seed, "ack-holes") as run:
        for _ in range(8):
            run.publish(10)
            run.advance(250)
            run.consume(_every(2))
            run.advance(250)
        run.advance(3 * SNAPSHOT_MS)
        outcome = run.fail_over("r2")
    _judge(outcome, keyshared_check, keyshared_artifacts, keyshared_target)


def test_three_clusters(
    keyshared_target: Any, keyshared_seed: int, keyshared_check: Any, keyshared_artifacts: Any
) -> None:
    """Three clusters take two snapshot rounds (ReplicatedSubscriptionsSnapshotBuilder); fail over to r3."""
    with _clusters(keyshared_target, keyshared_seed, "three-clusters", clusters=("r1", "r2", "r3")) as run:
        for _ in range(5):
            run.publish(8)
            run.advance(300)
            run.consume(lambda i: i % 3 != 1)
            run.advance(700)
        run.advance(3 * SNAPSHOT_MS)
        outcome = run.fail_over("r3")
    _judge(outcome, keyshared_check, keyshared_artifacts, keyshared_target)


def test_remote_down_during_traffic(
    keyshared_target: Any, keyshared_seed: int, keyshared_check: Any, keyshared_artifacts: Any
) -> None:
    """r2 is cut off while r1 consumes (no snapshot can complete), then returns; the failover still skips nothing."""
    with _clusters(keyshared_target, keyshared_seed, "remote-down-during-traffic") as run:
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
        outcome = run.fail_over("r2")
    _judge(outcome, keyshared_check, keyshared_artifacts, keyshared_target)


def test_slow_replication_link(
    keyshared_target: Any, keyshared_seed: int, keyshared_check: Any, keyshared_artifacts: Any
) -> None:
    """A replication delay of 900 ms (close to the snapshot frequency): the failover still skips nothing."""
    delays = {("r1", "r2"): 900, ("r2", "r1"): 900}
    with _clusters(keyshared_target, keyshared_seed, "slow-replication-link", delays_ms=delays) as run:
        for _ in range(6):
            run.publish(5)
            run.advance(200)
            run.consume(lambda i: i % 4 != 0)
            run.advance(800)
        run.ack_held(lambda i: i % 8 == 0)
        run.advance(5 * SNAPSHOT_MS)
        outcome = run.fail_over("r2")
    _judge(outcome, keyshared_check, keyshared_artifacts, keyshared_target)


def test_three_clusters_two_producers(
    keyshared_target: Any, keyshared_seed: int, keyshared_check: Any, keyshared_artifacts: Any
) -> None:
    """Producers in r1 and r3, the consumer in r1 acknowledging everything; r3's link to r1 is slow (1500 ms) and
    r1's snapshot requests reach r2 late (900 ms).  r2's answer then covers r3 messages r1 has not seen yet, so
    a snapshot is sound only after the second round (ReplicatedSubscriptionsSnapshotBuilder: two rounds with
    more than one remote cluster) and only with every cluster's answer.  A snapshot completed after one round,
    or from the last cluster's answer only, moves r2's cursor past r3 messages the consumer never got: the
    failover to r2 skips them."""
    delays = {("r1", "r2"): 900, ("r3", "r1"): 1500}
    clusters = ("r1", "r2", "r3")
    with _clusters(keyshared_target, keyshared_seed, "three-clusters-two-producers", clusters, delays_ms=delays) as run:
        for _ in range(8):
            run.publish(4, cluster="r1")
            run.publish(4, cluster="r3")
            run.advance(250)
            run.consume(lambda i: True)
            run.advance(250)
        run.advance(600)
        run.consume(lambda i: True)
        outcome = run.fail_over("r2")
    _judge(outcome, keyshared_check, keyshared_artifacts, keyshared_target)
