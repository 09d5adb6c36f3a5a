"""The values deduplication answers with: a decision per send, a status per topic, a snapshot per cursor."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType

__all__ = ["DUPLICATE_RECEIPT", "DedupDecision", "DedupSnapshot", "DedupStatus", "Position"]

#: A topic-log position ``(ledger_id, entry_id)``; tuples compare in log order.
Position = tuple[int, int]

#: The message id a producer receives for a send that deduplication dropped (``completed(null, -1, -1)``).
DUPLICATE_RECEIPT: Position = (-1, -1)


class DedupDecision(Enum):
    """What ``MessageDeduplication.isDuplicate`` answers (Pulsar's ``MessageDupStatus``).

    ``NOT_DUP``: write the entry and answer with its real message id.
    ``DUP``: already persisted; do not write, answer *success* with message id ``-1:-1``
    (:data:`DUPLICATE_RECEIPT`).
    ``UNKNOWN``: an earlier copy was accepted but is not persisted yet (the id lies between the persisted and
    the pushed id); do not write, answer ``SendError(PersistenceError)`` "Cannot determine whether the message
    is a duplicate at this time" — the Java, C++ and Python clients reconnect and resend.
    """

    NOT_DUP = "NotDup"
    DUP = "Dup"
    UNKNOWN = "Unknown"


class DedupStatus(str, Enum):
    """``MessageDeduplication.Status``; the value is what topic stats print as ``deduplicationStatus``."""

    INITIALIZED = "Initialized"  #: created with the topic; the policy was not applied yet
    DISABLED = "Disabled"
    RECOVERING = "Recovering"  #: replaying the topic; every send is NOT_DUP meanwhile
    ENABLED = "Enabled"
    REMOVING = "Removing"
    FAILED = "Failed"

    def __str__(self) -> str:
        return self.value


def _frozen(mapping: Mapping[str, int]) -> Mapping[str, int]:
    return MappingProxyType(dict(sorted(mapping.items())))


@dataclass(frozen=True, slots=True)
class DedupSnapshot:
    """The durable state of the ``pulsar.dedup`` cursor: its mark-delete position and its properties.

    ``position`` is where the snapshot was taken: recovery replays only entries *after* it. ``None`` means the
    cursor does not exist (deduplication disabled, or never enabled): recovery then starts from empty maps and
    the caller passes the entries written since the cursor should have been opened (usually none).
    ``sequence_ids`` maps producer name to its highest persisted sequence id (a ``TreeMap`` in Pulsar, so
    sorted by name here too).
    """

    position: Position | None = None
    sequence_ids: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sequence_ids", _frozen(self.sequence_ids))

    @property
    def exists(self) -> bool:
        """Whether the ``pulsar.dedup`` cursor exists."""
        return self.position is not None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DedupSnapshot):
            return NotImplemented
        return self.position == other.position and dict(self.sequence_ids) == dict(other.sequence_ids)

    def __hash__(self) -> int:
        return hash((self.position, tuple(self.sequence_ids.items())))

    def __repr__(self) -> str:
        return f"DedupSnapshot(position={self.position!r}, sequence_ids={dict(self.sequence_ids)!r})"
