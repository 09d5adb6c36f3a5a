"""Replicated-subscription cases: a consumer fails over to another cluster and must not skip what it did not
acknowledge (``replication/<name>``).

They follow ``ReplicatorSubscriptionTest`` (pulsar-semantics.md §6).  Each case drives the failover workload
(``keyshared_failover``) on the target's clusters and judges the trace it records with the ordinary checker,
like any other run: the replication check (``skipped_after_failover``) and every delivery check on each
cluster's copy of the topic.  The trace can be checked again (``keyshared check``), on either engine.

Clusters come from the target (``replication`` capability): a model target (``model``, ``model:classic``,
...) composes model brokers with its own version and settings (``reference_model.replication``);
``testcontainers-geo`` starts two Apache Pulsar standalones (``r1``, ``r2``) with a replicated namespace.  A case
that needs more clusters than the target has, or a delayed replication link, skips there with the reason;
elsewhere (pulsar-lite, a single broker by URL, one standalone) the cases skip with the reason.  Duplicates
after a failover are allowed by the contract (only the mark-delete position replicates, apache/pulsar#10054):
they are noted, not failed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

pytestmark = pytest.mark.keyshared_contract("replication")

SNAPSHOT_MS = 1000  #: replicatedSubscriptionsSnapshotFrequencyMillis (Pulsar's default)


def _every(n: int) -> Callable[[int], bool]:
    return lambda i: i % n == 0


def test_across_two_regions(keyshared_failover: Any, keyshared_check: Any) -> None:
    """testReplicatedSubscriptionAcrossTwoRegions: 6 messages, 3 consumed in r1, the rest in r2."""
    with keyshared_failover("across-two-regions") as run:
        run.publish(6)
        run.advance(10)
        run.consume(lambda i: i < 3)
        run.ack_held(lambda i: False)
        run.advance(2 * SNAPSHOT_MS)
        run.fail_over("r2")
    keyshared_check(run)


def test_switch_to_standby(keyshared_failover: Any, keyshared_check: Any) -> None:
    """testReplicatedSubscribeAndSwitchToStandbyCluster: 20 messages, half consumed in r1, switch: all received."""
    with keyshared_failover("switch-to-standby") as run:
        run.publish(20)
        run.advance(10)
        run.consume(lambda i: i < 10)
        run.advance(3 * SNAPSHOT_MS)
        run.fail_over("r2")
    keyshared_check(run)


def test_ack_holes(keyshared_failover: Any, keyshared_check: Any) -> None:
    """Acknowledgements with holes (every other message): the mark-delete lags; r2 must still get every hole."""
    with keyshared_failover("ack-holes") as run:
        for _ in range(8):
            run.publish(10)
            run.advance(250)
            run.consume(_every(2))
            run.advance(250)
        run.advance(3 * SNAPSHOT_MS)
        run.fail_over("r2")
    keyshared_check(run)


def test_three_clusters(keyshared_failover: Any, keyshared_check: Any) -> None:
    """Three clusters take two snapshot rounds (ReplicatedSubscriptionsSnapshotBuilder); fail over to r3."""
    with keyshared_failover("three-clusters", clusters=("r1", "r2", "r3")) as run:
        for _ in range(5):
            run.publish(8)
            run.advance(300)
            run.consume(lambda i: i % 3 != 1)
            run.advance(700)
        run.advance(3 * SNAPSHOT_MS)
        run.fail_over("r3")
    keyshared_check(run)


def test_remote_down_during_traffic(keyshared_failover: Any, keyshared_check: Any) -> None:
    """r2 is cut off while r1 consumes (no snapshot can complete), then returns; the failover still skips nothing."""
    with keyshared_failover("remote-down-during-traffic") as run:
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
        run.fail_over("r2")
    keyshared_check(run)


def test_slow_replication_link(keyshared_failover: Any, keyshared_check: Any) -> None:
    """A replication delay of 900 ms (close to the snapshot frequency): the failover still skips nothing."""
    delays = {("r1", "r2"): 900, ("r2", "r1"): 900}
    with keyshared_failover("slow-replication-link", delays_ms=delays) as run:
        for _ in range(6):
            run.publish(5)
            run.advance(200)
            run.consume(lambda i: i % 4 != 0)
            run.advance(800)
        run.ack_held(lambda i: i % 8 == 0)
        run.advance(5 * SNAPSHOT_MS)
        run.fail_over("r2")
    keyshared_check(run)


def test_three_clusters_two_producers(keyshared_failover: Any, keyshared_check: Any) -> None:
    """Producers in r1 and r3, the consumer in r1 acknowledging everything; r3's link to r1 is slow (1500 ms) and
    r1's snapshot requests reach r2 late (900 ms).  r2's answer then covers r3 messages r1 has not seen yet, so
    a snapshot is sound only after the second round (ReplicatedSubscriptionsSnapshotBuilder: two rounds with
    more than one remote cluster) and only with every cluster's answer.  A snapshot completed after one round,
    or from the last cluster's answer only, moves r2's cursor past r3 messages the consumer never got: the
    failover to r2 skips them."""
    delays = {("r1", "r2"): 900, ("r3", "r1"): 1500}
    with keyshared_failover("three-clusters-two-producers", clusters=("r1", "r2", "r3"), delays_ms=delays) as run:
        for _ in range(8):
            run.publish(4, cluster="r1")
            run.publish(4, cluster="r3")
            run.advance(250)
            run.consume(lambda i: True)
            run.advance(250)
        run.advance(600)
        run.consume(lambda i: True)
        run.fail_over("r2")
    keyshared_check(run)


def test_same_producer_name_in_two_clusters(keyshared_failover: Any, keyshared_check: Any) -> None:
    """Deduplication on in every cluster, and producers of the same name (the driver's ``ks-p``) publishing in r1
    and in r3; the consumer in r1 takes everything, then fails over to r2.  A replicated message must be judged
    by where it came from (apache/pulsar#23697, 3.0.11 / 3.3.5 / 4.0.3: its position in the source cluster, per
    replicator), not by its original producer name and sequence id: those collide with the other cluster's
    producer of the same name, so messages of one cluster are dropped in another as duplicates, or a producer's
    later sends are answered -1:-1 without being stored (undelivered, lost_write)."""
    clusters = ("r1", "r2", "r3")
    with keyshared_failover("same-producer-name-in-two-clusters", clusters=clusters, deduplication=True) as run:
        for _ in range(4):
            run.publish(5, cluster="r1")
            run.publish(5, cluster="r3")
            run.advance(250)
            run.consume(lambda i: True)
            run.advance(250)
        run.advance(2 * SNAPSHOT_MS)
        run.consume(lambda i: True)
        run.fail_over("r2")
    keyshared_check(run)
