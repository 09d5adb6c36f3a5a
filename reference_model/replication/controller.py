"""The snapshot protocol of one topic in one cluster (``ReplicatedSubscriptionsController``).

Pure: every method takes the facts it needs (time, what was written, which replicators are connected) and
returns what to do (a marker to write, a subscription to move). :class:`~reference_model.replication.ReplicatedClusters`
feeds it from the model brokers and carries its answers out.

Rules (``ReplicatedSubscriptionsController.startNewSnapshot`` and the marker handlers):

* every ``snapshot_frequency_ms`` (first tick when the controller starts):
  1. drop pending snapshots that timed out (``start + timeout < now``);
  2. if no snapshot ever completed and one is pending, wait: the request is repeated only after the timeout
     (apache/pulsar#23839; before it, a request went out every tick);
  3. if no data message was written since the last completed snapshot started (or none at all since the
     topic was loaded), skip (apache/pulsar#10292, #11922, #16618; markers are not data);
  4. if a replicator is disconnected, skip;
  5. otherwise write a SNAPSHOT_REQUEST and wait for every remote cluster;
* a REQUEST read from a remote is answered with a RESPONSE holding the request's local position;
* a RESPONSE read from a remote feeds its pending snapshot (late answers to dropped snapshots are ignored);
* an UPDATE read from a remote moves the local subscription named in it, if the update lists this cluster
  (cumulative ack; the subscription is created at Earliest, replicated, when missing);
* a local replicated subscription whose mark-delete passed a cached snapshot writes an UPDATE.

Snapshot ids are ``"<cluster>-<n>"`` with a counter per controller (Pulsar uses random UUIDs), so runs repeat.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reference_model.replication.config import REPLICATED_SNAPSHOT_RETRY_AFTER_TIMEOUT, ReplicationConfig
from reference_model.replication.markers import (
    MarkerType,
    MarkerWrite,
    ReplicatedSnapshot,
    parse_message_id,
    snapshot_response,
    subscription_update,
)
from reference_model.replication.snapshot_builder import SnapshotBuilder
from reference_model.versions import PulsarVersion, parse_version

__all__ = ["AcknowledgeTo", "ReplicatedSubscriptionsController"]

Position = tuple[int, int]


@dataclass(frozen=True, slots=True)
class AcknowledgeTo:
    """Move ``subscription`` of the local topic cumulatively to ``position`` (creating it when missing)."""

    subscription: str
    position: Position


class ReplicatedSubscriptionsController:
    """The replicated-subscription state of one topic in one cluster."""

    def __init__(
        self,
        cluster: str,
        topic: str,
        *,
        config: ReplicationConfig = ReplicationConfig(),  # noqa: B008  (frozen)
        version: str | PulsarVersion = "4.0",
    ) -> None:
        self.cluster = cluster
        self.topic = topic
        self.config = config
        self.version = parse_version(version)
        self.pending: dict[str, SnapshotBuilder] = {}
        self.last_completed_start_ns: int | None = None
        self.last_completed_snapshot_id: str | None = None
        self._counter = 0
        #: Counters for tests and stats: requests written (both rounds), snapshots completed, timed out.
        self.requests_written = 0
        self.snapshots_completed = 0
        self.snapshots_timed_out = 0

    # ------------------------------------------------------------------ timer

    def tick(
        self,
        now_ns: int,
        *,
        last_data_write_ns: int | None,
        remote_clusters: Sequence[str],
        all_replicators_connected: bool,
    ) -> MarkerWrite | None:
        """One run of ``startNewSnapshot``; returns the REQUEST to write, if a snapshot starts."""
        for snapshot_id in [sid for sid, b in self.pending.items() if b.is_timed_out(now_ns)]:
            del self.pending[snapshot_id]
            self.snapshots_timed_out += 1
        if (
            self.version.has(REPLICATED_SNAPSHOT_RETRY_AFTER_TIMEOUT)
            and self.last_completed_start_ns is None
            and self.pending
        ):
            return None
        if last_data_write_ns is None or (
            self.last_completed_start_ns is not None and last_data_write_ns < self.last_completed_start_ns
        ):
            return None
        if not all_replicators_connected or not remote_clusters:
            return None
        self._counter += 1
        builder = SnapshotBuilder(
            f"{self.cluster}-{self._counter}",
            self.cluster,
            remote_clusters,
            start_ns=now_ns,
            timeout_ms=self.config.snapshot_timeout_ms,
        )
        self.pending[builder.snapshot_id] = builder
        self.requests_written += 1
        return builder.request()

    # ------------------------------------------------------------------ markers read by a replicator

    def received_marker(
        self, position: Position, marker_type: int, payload: Mapping[str, Any]
    ) -> MarkerWrite | AcknowledgeTo | None:
        """A marker replicated from a remote cluster was read at ``position`` of the local topic."""
        if marker_type == MarkerType.REPLICATED_SUBSCRIPTION_SNAPSHOT_REQUEST:
            return snapshot_response(
                str(payload["snapshot_id"]), str(payload["source_cluster"]), self.cluster, position
            )
        if marker_type == MarkerType.REPLICATED_SUBSCRIPTION_SNAPSHOT_RESPONSE:
            return self._received_response(position, payload)
        if marker_type == MarkerType.REPLICATED_SUBSCRIPTION_UPDATE:
            for item in payload.get("clusters", ()):
                if item["cluster"] == self.cluster:
                    return AcknowledgeTo(str(payload["subscription_name"]), parse_message_id(item["message_id"]))
            return None
        return None

    def _received_response(self, position: Position, payload: Mapping[str, Any]) -> MarkerWrite | None:
        builder = self.pending.get(str(payload["snapshot_id"]))
        if builder is None:
            return None  # a late answer to a snapshot that timed out
        cluster = payload["cluster"]
        step = builder.received_response(position, str(cluster["cluster"]), parse_message_id(cluster["message_id"]))
        if step.completed:
            del self.pending[builder.snapshot_id]
            self.last_completed_snapshot_id = builder.snapshot_id
            self.last_completed_start_ns = builder.start_ns
            self.snapshots_completed += 1
        elif step.write is not None:
            self.requests_written += 1
        return step.write

    # ------------------------------------------------------------------ local subscriptions

    def local_subscription_updated(self, subscription: str, snapshot: ReplicatedSnapshot) -> MarkerWrite:
        """``localSubscriptionUpdated``: the UPDATE marker for a snapshot the mark-delete position passed."""
        return subscription_update(subscription, snapshot.clusters)

    def stats(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "pendingSnapshots": sorted(self.pending),
            "lastCompletedSnapshotId": self.last_completed_snapshot_id,
            "requestsWritten": self.requests_written,
            "snapshotsCompleted": self.snapshots_completed,
            "snapshotsTimedOut": self.snapshots_timed_out,
        }

    def __repr__(self) -> str:
        return (
            f"ReplicatedSubscriptionsController({self.cluster!r}, {self.topic!r}, pending={sorted(self.pending)},"
            f" completed={self.snapshots_completed})"
        )
