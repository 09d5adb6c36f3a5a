"""One consistent snapshot across clusters in the making (``ReplicatedSubscriptionsSnapshotBuilder``).

The source cluster writes a SNAPSHOT_REQUEST; each remote cluster answers with the position the request took
in its own topic. The **first** answer per cluster counts (``putIfAbsent``). With more than one remote cluster
(three clusters or more) a second round is needed: after all answered once, the same request is written again
and the builder waits for every cluster a second time, so that messages two remotes exchanged with each other
while the first round ran are covered; the positions stay those of the first round. The snapshot is complete
when the last awaited answer arrives: its position *in the local topic* becomes the snapshot's local position.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from reference_model.replication.markers import MarkerWrite, snapshot_marker, snapshot_request

__all__ = ["SnapshotBuilder", "SnapshotStep"]

Position = tuple[int, int]
_NS_PER_MS = 1_000_000


@dataclass(frozen=True, slots=True)
class SnapshotStep:
    """What a response leads to: nothing yet (``write`` is None), a second round, or the completed snapshot."""

    write: MarkerWrite | None = None
    completed: bool = False


class SnapshotBuilder:
    """Collects the responses to one snapshot request."""

    __slots__ = (
        "first_round_complete",
        "local_cluster",
        "missing",
        "needs_two_rounds",
        "remote_clusters",
        "responses",
        "snapshot_id",
        "start_ns",
        "timeout_ms",
    )

    def __init__(
        self,
        snapshot_id: str,
        local_cluster: str,
        remote_clusters: Sequence[str],
        *,
        start_ns: int,
        timeout_ms: int,
    ) -> None:
        self.snapshot_id = snapshot_id
        self.local_cluster = local_cluster
        self.remote_clusters = tuple(sorted(remote_clusters))
        self.missing = set(self.remote_clusters)
        self.responses: dict[str, Position] = {}
        self.needs_two_rounds = len(self.remote_clusters) > 1
        self.first_round_complete = False
        self.start_ns = start_ns
        self.timeout_ms = timeout_ms

    def request(self) -> MarkerWrite:
        """The request marker (the same for both rounds)."""
        return snapshot_request(self.snapshot_id, self.local_cluster)

    def received_response(self, local_position: Position, cluster: str, cluster_position: Position) -> SnapshotStep:
        """A response from ``cluster`` arrived in the local topic at ``local_position``."""
        self.responses.setdefault(cluster, cluster_position)
        self.missing.discard(cluster)
        if self.missing:
            return SnapshotStep()
        if self.needs_two_rounds and not self.first_round_complete:
            self.first_round_complete = True
            self.missing = set(self.remote_clusters)
            return SnapshotStep(self.request())
        return SnapshotStep(
            snapshot_marker(self.snapshot_id, self.local_cluster, local_position, self.responses), completed=True
        )

    def is_timed_out(self, now_ns: int) -> bool:
        """``startTime + timeout < now`` (``isTimedOut``)."""
        return self.start_ns + self.timeout_ms * _NS_PER_MS < now_ns

    def __repr__(self) -> str:
        return (
            f"SnapshotBuilder({self.snapshot_id!r}, missing={sorted(self.missing)},"
            f" round={2 if self.first_round_complete else 1}, responses={self.responses})"
        )
