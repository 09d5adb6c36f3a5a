"""Recorded failovers on clusters of the reference model, and the planted replication bug (test-only).

:func:`cursor_past_unacked` is a model variant that breaks PIP-33: whenever a local mark-delete moves, the
replicated-subscription layer advances the replicated cursor to the newest snapshot, as if everything read
had been acknowledged — past the messages the application still held.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pytest_keyshared.driver.model_sites import ModelSites
from pytest_keyshared.driver.replication import Failover, failover_header
from reference_model.replication import ReplicatedClusters

__all__ = [
    "VARIANT_CONFTEST",
    "across_two_regions",
    "cursor_never_replicated",
    "cursor_past_unacked",
    "switch_to_standby",
]

PAST_EVERYTHING = (2**62, 2**62)

#: The same variant as a conftest, for pytester runs of the replication cases.
VARIANT_CONFTEST = """
import pytest
from failover_runs import cursor_past_unacked

@pytest.fixture(autouse=True)
def _cursor_past_unacked():
    with cursor_past_unacked():
        yield
"""


@contextmanager
def cursor_past_unacked() -> Iterator[None]:
    """Within the block, the model's replicated cursor moves past unacknowledged messages."""
    original = ReplicatedClusters._mark_delete_advanced

    def past_everything(self: Any, cluster: str, topic: str, subscription: str, position: Any) -> None:
        original(self, cluster, topic, subscription, PAST_EVERYTHING)

    ReplicatedClusters._mark_delete_advanced = past_everything  # type: ignore[method-assign]
    try:
        yield
    finally:
        ReplicatedClusters._mark_delete_advanced = original  # type: ignore[method-assign]


@contextmanager
def cursor_never_replicated() -> Iterator[None]:
    """Within the block, remote clusters never apply a replicated subscription's cursor update (the UPDATE
    marker's cumulative acknowledgement is dropped): after a failover everything acknowledged comes again."""
    from reference_model.replication.controller import ReplicatedSubscriptionsController
    from reference_model.replication.markers import MarkerType

    original = ReplicatedSubscriptionsController.received_marker

    def dropping_updates(self: Any, position: Any, marker_type: int, payload: Any) -> Any:
        if marker_type == MarkerType.REPLICATED_SUBSCRIPTION_UPDATE:
            return None
        return original(self, position, marker_type, payload)

    ReplicatedSubscriptionsController.received_marker = dropping_updates  # type: ignore[method-assign]
    try:
        yield
    finally:
        ReplicatedSubscriptionsController.received_marker = original  # type: ignore[method-assign]


def across_two_regions(path: Path, seed: int = 5) -> Path:
    """testReplicatedSubscriptionAcrossTwoRegions as the case runs it: 3 acknowledged before a settled snapshot
    (the consumer connected), 3 more held, the failover to r2."""
    sites = ModelSites(seed=seed)
    with Failover(sites, failover_header("model", sites, seed=seed, pulsar_version="4.0"), path) as run:
        run.publish(3)
        run.advance(10)
        run.consume(lambda i: True)
        run.snapshot()
        run.publish(3)
        run.advance(10)
        run.consume(lambda i: i < 3)
        run.advance(2000)
        run.fail_over("r2")
    return path


def switch_to_standby(path: Path, seed: int = 5) -> Path:
    """testReplicatedSubscribeAndSwitchToStandbyCluster on model clusters, recorded to ``path``."""
    sites = ModelSites(seed=seed)
    with Failover(sites, failover_header("model", sites, seed=seed, pulsar_version="4.0"), path) as run:
        run.publish(20)
        run.advance(10)
        run.consume(lambda i: i < 10)
        run.advance(3000)
        run.fail_over("r2")
    return path
