"""A pure, I/O-free model of Apache Pulsar's Key_Shared dispatch, deduplication and replicated subscriptions.

Nothing here imports a network library, a clock or a random source: time, ids and names arrive as
arguments, so the same inputs give the same outputs byte for byte.
"""

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
