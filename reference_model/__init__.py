"""A pure, I/O-free model of Apache Pulsar's Key_Shared dispatch, deduplication and replicated subscriptions.

Nothing here imports a network library, a clock or a random source: time, ids and names arrive as
arguments, so the same inputs give the same outputs byte for byte.
"""

from reference_model.errors import (
    ConsumerAssignError,
    InvalidArgument,
    KeySharedError,
    ModelStateError,
    UnknownVersion,
)
from reference_model.versions import DEFAULT_VERSION, PulsarVersion, parse_version

__all__ = [
    "DEFAULT_VERSION",
    "ConsumerAssignError",
    "InvalidArgument",
    "KeySharedError",
    "ModelStateError",
    "PulsarVersion",
    "UnknownVersion",
    "parse_version",
]
