"""The hooks replication needs from a model broker, in one place, with work-arounds for the missing ones.

Replication uses only the broker's documented hooks (``topic_log``, ``write_marker``, ``append_replicated``,
``add_listener``, ``subscription``, ``acknowledge_cumulative_to``, ``topics``) plus two it lacks so far:

* ``append_replicated`` drops a marker's payload (it writes ``{}``), but a replicated REQUEST / RESPONSE /
  UPDATE is useless without it: :func:`append_replicated` passes ``marker_payload=`` when the broker accepts
  it, and otherwise appends through the topic directly.
* there is no public list of a topic's subscriptions: :func:`subscription_names` reads the topic's table.

Everything else goes through the public hooks. Requests for the broker are in the final report.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import replace
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
        self, topic: str, metadata: MessageMetadata, messages: Any, replicated_from: str
    ) -> Position: ...

    def add_listener(self, listener: object) -> None: ...

    def subscription(self, topic: str, name: str) -> Any: ...

    def acknowledge_cumulative_to(
        self, topic: str, subscription: str, position: tuple[int, int], create_if_missing: bool = True
    ) -> bool: ...


def _accepts_marker_payload(broker: ClusterBroker) -> bool:
    try:
        return "marker_payload" in inspect.signature(broker.append_replicated).parameters
    except (TypeError, ValueError):  # pragma: no cover - builtins without signatures
        return False


def append_replicated(broker: ClusterBroker, topic: str, entry: Entry, replicated_from: str) -> Position:
    """Append ``entry`` (read in cluster ``replicated_from``) to ``topic`` of ``broker``; its local position."""
    if entry.marker_payload is None or not entry.is_marker:
        return broker.append_replicated(topic, entry.metadata, entry.messages, replicated_from)
    if _accepts_marker_payload(broker):
        return broker.append_replicated(  # type: ignore[call-arg]
            topic, entry.metadata, entry.messages, replicated_from, marker_payload=dict(entry.marker_payload)
        )
    server = broker._topic(topic)  # type: ignore[attr-defined]
    metadata = replace(entry.metadata, replicated_from=replicated_from)
    appended: Entry = server._append(metadata, (), dict(entry.marker_payload))
    server._entry_added(appended)
    return appended.position


def subscription_names(broker: ClusterBroker, topic: str) -> list[str]:
    """Names of the subscriptions of ``topic`` on ``broker`` (empty when the topic does not exist)."""
    lister = getattr(broker, "subscriptions", None)
    if callable(lister):
        return list(lister(topic))
    topics = getattr(broker, "_topics", {})
    server = topics.get(topic)
    return [] if server is None else list(server.subscriptions)
