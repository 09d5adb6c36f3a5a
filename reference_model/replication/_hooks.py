"""The hooks replication needs from a model broker, in one place.

Replication uses only the broker's documented hooks: ``topic_log``, ``write_marker``, ``append_replicated``
(with ``marker_payload``: a replicated REQUEST / RESPONSE / UPDATE is useless without its payload),
``add_listener``, ``subscription``, ``subscriptions``, ``acknowledge_cumulative_to`` and ``topics``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from reference_model.storage.entry import Entry, MessageMetadata
from reference_model.storage.position import Position
from reference_model.storage.topic_log import TopicLog

__all__ = ["ClusterBroker", "append_replicated", "subscription_names"]


class ClusterBroker(Protocol):
    """What :class:`~reference_model.replication.ReplicatedClusters` needs of one cluster's broker."""

    cluster: str
    generation: int
    clock: Any  #: the shared ``SimClock``
    version: Any  #: the broker's ``PulsarVersion``

    def topics(self) -> list[str]: ...

    def topic_log(self, topic: str) -> TopicLog: ...

    def write_marker(
        self, topic: str, marker_type: int, payload: Mapping[str, object], replicate_to: list[str] | None
    ) -> Position: ...

    def append_replicated(
        self,
        topic: str,
        metadata: MessageMetadata,
        messages: Any,
        replicated_from: str,
        marker_payload: Mapping[str, object] | None = None,
        source_position: tuple[int, int] | None = None,
    ) -> Position: ...

    def add_listener(self, listener: object) -> None: ...

    def subscription(self, topic: str, name: str) -> Any: ...

    def subscriptions(self, topic: str) -> list[str]: ...

    def acknowledge_cumulative_to(
        self, topic: str, subscription: str, position: tuple[int, int], create_if_missing: bool = True
    ) -> bool: ...


def append_replicated(broker: ClusterBroker, topic: str, entry: Entry, replicated_from: str) -> Position:
    """Append ``entry`` (read in cluster ``replicated_from``) to ``topic`` of ``broker``; its local position."""
    if entry.is_marker:
        payload = dict(entry.marker_payload) if entry.marker_payload is not None else None
        return broker.append_replicated(topic, entry.metadata, entry.messages, replicated_from, marker_payload=payload)
    position = (entry.position[0], entry.position[1])  # deduplicated by it from apache/pulsar#23697
    return broker.append_replicated(topic, entry.metadata, entry.messages, replicated_from, source_position=position)


def subscription_names(broker: ClusterBroker, topic: str) -> list[str]:
    """Names of the subscriptions of ``topic`` on ``broker`` (empty when the topic does not exist)."""
    return list(broker.subscriptions(topic))
