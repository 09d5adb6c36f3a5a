"""A pure, I/O-free model of Apache Pulsar's Key_Shared dispatch, deduplication and replicated subscriptions.

Nothing here imports a network library, a clock or a random source: time, ids and names arrive as
arguments, so the same inputs give the same outputs byte for byte.

The names below are imported on first use (:pep:`562`): a program that needs one part (the ``keyshared check``
command reads the selectors only) does not pay for importing every other part at start-up.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reference_model.broker import BrokerConfig, ModelBroker, ModelMessage, ModelMessageId, SimClock
    from reference_model.dedup import (
        DedupConfig,
        DedupDecision,
        DedupSnapshot,
        MessageDeduplication,
        effective_deduplication,
    )
    from reference_model.errors import (
        ConsumerAssignError,
        InvalidArgument,
        KeySharedError,
        ModelStateError,
        UnknownVersion,
    )
    from reference_model.hashing import NONE_KEY, make_hash, sticky_key
    from reference_model.keyshared import DispatcherSettings, KeySharedPolicy
    from reference_model.replication import ReplicatedClusters, ReplicationConfig
    from reference_model.selectors import ConsumerRef, ImpactedRanges, Selector, make_selector
    from reference_model.storage import Position
    from reference_model.versions import DEFAULT_VERSION, PulsarVersion, parse_version

#: Each public name and the module it lives in.
_HOME: dict[str, str] = {
    "BrokerConfig": "reference_model.broker",
    "ConsumerAssignError": "reference_model.errors",
    "ConsumerRef": "reference_model.selectors",
    "DEFAULT_VERSION": "reference_model.versions",
    "DedupConfig": "reference_model.dedup",
    "DedupDecision": "reference_model.dedup",
    "DedupSnapshot": "reference_model.dedup",
    "DispatcherSettings": "reference_model.keyshared",
    "ImpactedRanges": "reference_model.selectors",
    "InvalidArgument": "reference_model.errors",
    "KeySharedError": "reference_model.errors",
    "KeySharedPolicy": "reference_model.keyshared",
    "MessageDeduplication": "reference_model.dedup",
    "ModelBroker": "reference_model.broker",
    "ModelMessage": "reference_model.broker",
    "ModelMessageId": "reference_model.broker",
    "ModelStateError": "reference_model.errors",
    "NONE_KEY": "reference_model.hashing",
    "Position": "reference_model.storage",
    "PulsarVersion": "reference_model.versions",
    "ReplicatedClusters": "reference_model.replication",
    "ReplicationConfig": "reference_model.replication",
    "Selector": "reference_model.selectors",
    "SimClock": "reference_model.broker",
    "UnknownVersion": "reference_model.errors",
    "effective_deduplication": "reference_model.dedup",
    "make_hash": "reference_model.hashing",
    "make_selector": "reference_model.selectors",
    "parse_version": "reference_model.versions",
    "sticky_key": "reference_model.hashing",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'reference_model' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOME})


__all__ = [
    "DEFAULT_VERSION",
    "NONE_KEY",
    "BrokerConfig",
    "ConsumerAssignError",
    "ConsumerRef",
    "DedupConfig",
    "DedupDecision",
    "DedupSnapshot",
    "DispatcherSettings",
    "ImpactedRanges",
    "InvalidArgument",
    "KeySharedError",
    "KeySharedPolicy",
    "MessageDeduplication",
    "ModelBroker",
    "ModelMessage",
    "ModelMessageId",
    "ModelStateError",
    "Position",
    "PulsarVersion",
    "ReplicatedClusters",
    "ReplicationConfig",
    "Selector",
    "SimClock",
    "UnknownVersion",
    "effective_deduplication",
    "make_hash",
    "make_selector",
    "parse_version",
    "sticky_key",
]
