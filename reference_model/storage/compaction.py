"""Topic compaction, as far as a compacted reader sees it: the latest message per key up to a horizon.

Follows Pulsar's two-phase compactor (``TwoPhaseCompactor``): phase one reads the topic up to its last entry at
the time compaction was triggered (the *horizon*) and notes, per key, the position of the latest message; phase
two writes those messages, in position order, to the compacted ledger.  Markers (replicated-subscription
snapshots and updates) are skipped: they carry no key and are never data (``Markers.isServerOnlyMarker``;
``ReplicatedSubscriptionTest.testReplicatedSubscriptionWithCompaction``).  A consumer with ``readCompacted``
reads the compacted ledger and then the topic after the horizon (``CompactedTopicImpl``), so it gets the latest
value of each key as of the horizon plus every message published since.

Pure: it reads entries and returns entries.  Not modelled: an empty payload deleting its key (tombstones), a
batch compacted per message (an entry counts by its entry-level key here), and messages without a key (the
failover workload always sets one).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from reference_model.storage.entry import Entry
from reference_model.storage.position import Position

__all__ = ["CompactedTopic", "compact", "compacted_read"]


@dataclass(frozen=True, slots=True)
class CompactedTopic:
    """The outcome of one compaction: its horizon (None: the topic was empty) and the compacted ledger's
    entries, the latest data entry of each key at or before the horizon, in position order."""

    horizon: Position | None
    latest: tuple[Entry, ...]


def compact(entries: Iterable[Entry], horizon: Position | None) -> CompactedTopic:
    """Compact ``entries`` up to ``horizon`` (inclusive): per key, the entry at the highest position; markers and
    entries without a key are left out."""
    by_key: dict[str, Entry] = {}
    if horizon is not None:
        for entry in entries:
            if entry.position > horizon:
                break
            key = entry.metadata.partition_key
            if entry.is_marker or key is None:
                continue
            by_key[key] = entry  # a later entry of the key supersedes the earlier one
    return CompactedTopic(horizon, tuple(sorted(by_key.values(), key=lambda e: e.position)))


def compacted_read(entries: Iterable[Entry], compacted: CompactedTopic | None) -> list[Entry]:
    """What a ``readCompacted`` reader from the earliest message reads: the compacted ledger, then every data entry
    after its horizon (all data entries when the topic was never compacted)."""
    horizon = compacted.horizon if compacted is not None else None
    head = list(compacted.latest) if compacted is not None else []
    tail = [e for e in entries if not e.is_marker and (horizon is None or e.position > horizon)]
    return head + tail
