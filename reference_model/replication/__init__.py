"""Replicated subscriptions (PIP-33 as implemented) over several model brokers, one per cluster.

Public surface only; each name lives in the module named after the concept it models.
"""

from reference_model.replication.clusters import ReplicatedClusters
from reference_model.replication.config import REPLICATED_SNAPSHOT_RETRY_AFTER_TIMEOUT, ReplicationConfig
from reference_model.replication.controller import AcknowledgeTo, ReplicatedSubscriptionsController
from reference_model.replication.markers import (
    MARKER_PRODUCER_NAME,
    MarkerType,
    MarkerWrite,
    ReplicatedSnapshot,
    snapshot_from_payload,
)
from reference_model.replication.replicator import ReplicatorAction, ReplicatorState, classify
from reference_model.replication.snapshot_builder import SnapshotBuilder, SnapshotStep
from reference_model.replication.snapshot_cache import (
    DistanceSnapshotCache,
    NewestSnapshotCache,
    SnapshotCache,
    entry_id_distance,
    make_snapshot_cache,
)

__all__ = [
    "MARKER_PRODUCER_NAME",
    "REPLICATED_SNAPSHOT_RETRY_AFTER_TIMEOUT",
    "AcknowledgeTo",
    "DistanceSnapshotCache",
    "MarkerType",
    "MarkerWrite",
    "NewestSnapshotCache",
    "ReplicatedClusters",
    "ReplicatedSnapshot",
    "ReplicatedSubscriptionsController",
    "ReplicationConfig",
    "ReplicatorAction",
    "ReplicatorState",
    "SnapshotBuilder",
    "SnapshotCache",
    "SnapshotStep",
    "classify",
    "entry_id_distance",
    "make_snapshot_cache",
    "snapshot_from_payload",
]
