"""Settings of replicated subscriptions and geo-replication in the model, with Apache Pulsar's defaults."""

from __future__ import annotations

from dataclasses import dataclass

from reference_model.errors import InvalidArgument
from reference_model.versions import REPLICATED_SNAPSHOT_RETRY_AFTER_TIMEOUT  # defined there; importable here too

__all__ = ["REPLICATED_SNAPSHOT_RETRY_AFTER_TIMEOUT", "ReplicationConfig"]


@dataclass(frozen=True, slots=True)
class ReplicationConfig:
    """Per-cluster settings (``broker.conf``) plus the model's replication delay.

    ``enabled``
        ``enableReplicatedSubscriptions`` (true). A cluster with it off runs no controller: it neither starts
        snapshots nor answers requests (``testReplicatedSubscriptionOneWay``).
    ``snapshot_frequency_ms``
        ``replicatedSubscriptionsSnapshotFrequencyMillis`` (1000).
    ``snapshot_timeout_ms``
        ``replicatedSubscriptionsSnapshotTimeoutSeconds`` (30 s).
    ``max_cached_snapshots``
        ``replicatedSubscriptionsSnapshotMaxCachedPerSubscription`` (10).
    ``replication_delay_ms``
        Model only: how long an entry takes from the source topic to the remote topic (default 0: it arrives at
        the next clock step). Per-link delays are set on :class:`~reference_model.replication.ReplicatedClusters`.
    """

    enabled: bool = True
    snapshot_frequency_ms: int = 1000
    snapshot_timeout_ms: int = 30_000
    max_cached_snapshots: int = 10
    replication_delay_ms: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.enabled, bool):
            raise InvalidArgument(
                f"Expected a bool for ReplicationConfig(enabled=...) but got enabled={self.enabled!r}"
                f" (type={type(self.enabled).__name__})."
            )
        for name, minimum in (
            ("snapshot_frequency_ms", 1),
            ("snapshot_timeout_ms", 0),
            ("max_cached_snapshots", 1),
            ("replication_delay_ms", 0),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidArgument(
                    f"Expected an int for ReplicationConfig({name}=...) but got {name}={value!r}"
                    f" (type={type(value).__name__})."
                )
            if value < minimum:
                raise InvalidArgument(f"ReplicationConfig({name}={value}) must be >= {minimum}.")
