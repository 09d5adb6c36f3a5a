"""Replicated-subscription marker messages: types and payloads as ``PulsarMarkers.proto`` defines them.

Markers are entries the broker writes into a topic itself (producer name ``pulsar.marker``, sequence id 0,
``marker_type`` set). They take an entry id, are never delivered to consumers (dispatchers acknowledge them as
they read them), are not deduplicated, and travel between clusters with the replicators like messages, limited by
``replicate_to`` (``Markers.newReplicatedSubscriptions*`` in ``pulsar-common``):

=========================  ===================  =====================================================
marker                     ``replicate_to``     payload
=========================  ===================  =====================================================
SNAPSHOT_REQUEST (10)      all remotes          ``snapshot_id``, ``source_cluster``
SNAPSHOT_RESPONSE (11)     ``[source]``         ``snapshot_id``, ``cluster`` {cluster, message_id}
SNAPSHOT (12)              ``[local]``          ``snapshot_id``, ``local_message_id``, ``clusters`` [...]
UPDATE (13)                all remotes          ``subscription_name``, ``clusters`` [...]
=========================  ===================  =====================================================

Payloads are plain JSON-safe dicts with the proto's field names; a message id is
``{"ledger_id": L, "entry_id": E}``. The builders return ``(marker_type, payload, replicate_to)``, exactly what
the model broker's ``write_marker`` takes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from reference_model.errors import InvalidArgument

__all__ = [
    "MARKER_PRODUCER_NAME",
    "MarkerType",
    "MarkerWrite",
    "ReplicatedSnapshot",
    "message_id",
    "parse_message_id",
    "snapshot_from_payload",
    "snapshot_marker",
    "snapshot_request",
    "snapshot_response",
    "subscription_update",
]

#: Producer name of every marker entry (``Markers.newMessage``).
MARKER_PRODUCER_NAME = "pulsar.marker"

Position = tuple[int, int]


class MarkerType(IntEnum):
    """``MarkerType`` of ``PulsarMarkers.proto``; the transaction markers are listed for completeness."""

    UNKNOWN_MARKER = 0
    REPLICATED_SUBSCRIPTION_SNAPSHOT_REQUEST = 10
    REPLICATED_SUBSCRIPTION_SNAPSHOT_RESPONSE = 11
    REPLICATED_SUBSCRIPTION_SNAPSHOT = 12
    REPLICATED_SUBSCRIPTION_UPDATE = 13
    TXN_COMMITTING = 20
    TXN_COMMIT = 21
    TXN_ABORT = 22


@dataclass(frozen=True, slots=True)
class MarkerWrite:
    """A marker the broker of one cluster must write: ``broker.write_marker(topic, *this)``."""

    marker_type: MarkerType
    payload: Mapping[str, Any]
    replicate_to: tuple[str, ...] | None


def message_id(position: Position) -> dict[str, int]:
    """``MarkersMessageIdData`` for a position."""
    return {"ledger_id": int(position[0]), "entry_id": int(position[1])}


def parse_message_id(data: Mapping[str, Any]) -> Position:
    """The position a ``MarkersMessageIdData`` dict names."""
    try:
        return (int(data["ledger_id"]), int(data["entry_id"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidArgument(
            f"Expected a message id {{'ledger_id': L, 'entry_id': E}} in a marker payload but got {data!r}."
        ) from exc


def _clusters(clusters: Iterable[tuple[str, Position]]) -> list[dict[str, Any]]:
    return [{"cluster": name, "message_id": message_id(pos)} for name, pos in sorted(clusters)]


def snapshot_request(snapshot_id: str, source_cluster: str) -> MarkerWrite:
    """``newReplicatedSubscriptionsSnapshotRequest``: written in the source cluster, replicated everywhere."""
    return MarkerWrite(
        MarkerType.REPLICATED_SUBSCRIPTION_SNAPSHOT_REQUEST,
        {"snapshot_id": snapshot_id, "source_cluster": source_cluster},
        None,
    )


def snapshot_response(snapshot_id: str, reply_to_cluster: str, cluster: str, position: Position) -> MarkerWrite:
    """``newReplicatedSubscriptionsSnapshotResponse``: ``position`` is where the request landed in ``cluster``."""
    return MarkerWrite(
        MarkerType.REPLICATED_SUBSCRIPTION_SNAPSHOT_RESPONSE,
        {"snapshot_id": snapshot_id, "cluster": {"cluster": cluster, "message_id": message_id(position)}},
        (reply_to_cluster,),
    )


def snapshot_marker(
    snapshot_id: str, local_cluster: str, local_position: Position, clusters: Mapping[str, Position]
) -> MarkerWrite:
    """``newReplicatedSubscriptionsSnapshot``: kept in the local cluster (``replicate_to = [local]``).

    ``local_position`` is the position, in the local topic, of the last response that completed the snapshot;
    ``clusters`` maps each remote cluster to the position of the request in its topic (first round).
    """
    return MarkerWrite(
        MarkerType.REPLICATED_SUBSCRIPTION_SNAPSHOT,
        {
            "snapshot_id": snapshot_id,
            "local_message_id": message_id(local_position),
            "clusters": _clusters(clusters.items()),
        },
        (local_cluster,),
    )


def subscription_update(subscription: str, clusters: Sequence[tuple[str, Position]]) -> MarkerWrite:
    """``newReplicatedSubscriptionsUpdate``: move ``subscription`` in every listed cluster to its position."""
    return MarkerWrite(
        MarkerType.REPLICATED_SUBSCRIPTION_UPDATE,
        {"subscription_name": subscription, "clusters": _clusters(clusters)},
        None,
    )


@dataclass(frozen=True, slots=True)
class ReplicatedSnapshot:
    """A completed snapshot as a subscription caches it: where it lies locally, and where in each remote."""

    snapshot_id: str
    local_position: Position
    clusters: tuple[tuple[str, Position], ...]

    def position_in(self, cluster: str) -> Position | None:
        for name, pos in self.clusters:
            if name == cluster:
                return pos
        return None


def snapshot_from_payload(payload: Mapping[str, Any]) -> ReplicatedSnapshot:
    """Read a SNAPSHOT marker's payload (``Markers.parseReplicatedSubscriptionsSnapshot``)."""
    try:
        clusters = tuple(
            (str(item["cluster"]), parse_message_id(item["message_id"])) for item in payload.get("clusters", ())
        )
        return ReplicatedSnapshot(
            str(payload["snapshot_id"]), parse_message_id(payload["local_message_id"]), tuple(sorted(clusters))
        )
    except (KeyError, TypeError) as exc:
        raise InvalidArgument(
            f"Expected a snapshot marker payload with snapshot_id, local_message_id and clusters but got {payload!r}."
        ) from exc
