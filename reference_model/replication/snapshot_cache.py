"""The per-subscription cache of replicated-subscription snapshots (``ReplicatedSubscriptionSnapshotCache``).

A replicated subscription caches every SNAPSHOT marker its dispatcher reads. When its mark-delete position
advances, the cache hands out the newest snapshot at or below it (dropping it and everything older), and the
controller writes an UPDATE marker with that snapshot's remote positions. Two eviction rules exist:

* **newest N** (up to Pulsar 4.1): a ``TreeMap`` by position; beyond N entries the *oldest* is dropped. With
  ack holes (Shared / Key_Shared subscriptions acking individually) the mark-delete position can stay below
  the oldest cached snapshot for ever, so the subscription is never replicated (the problem apache/pulsar#25044
  fixes).
* **by distance** (apache/pulsar#25044, 4.2): a list in position order; beyond N entries the entry with the
  smallest distance to its two neighbours (the entries between them in the topic) is dropped, never the first
  or the last, so the cache keeps snapshots spread over the whole backlog. A snapshot at or below the newest
  cached one means the subscription was reset: the cache is cleared first. N must be at least 3.

``make_snapshot_cache`` picks the rule for a Pulsar version
(:data:`~reference_model.versions.REPLICATED_SNAPSHOT_CACHE_BY_DISTANCE`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from reference_model.errors import InvalidArgument
from reference_model.replication.markers import ReplicatedSnapshot
from reference_model.versions import REPLICATED_SNAPSHOT_CACHE_BY_DISTANCE, PulsarVersion, parse_version

__all__ = [
    "DistanceFunction",
    "DistanceSnapshotCache",
    "NewestSnapshotCache",
    "SnapshotCache",
    "entry_id_distance",
    "make_snapshot_cache",
]

Position = tuple[int, int]
#: ``distance(low, high)``: how far apart two positions are, for ``Range.open(low, high)`` (entries between).
DistanceFunction = Callable[[Position, Position], int]


def entry_id_distance(low: Position, high: Position) -> int:
    """Entries strictly between two positions of one ledger (``high.entry - low.entry - 1``, at least 0)."""
    if low[0] != high[0]:
        return max(0, high[1]) + 1
    return max(0, high[1] - low[1] - 1)


class SnapshotCache(Protocol):
    """What a subscription needs from its snapshot cache."""

    def add(self, snapshot: ReplicatedSnapshot) -> None: ...

    def advanced_mark_delete_position(self, position: Position) -> ReplicatedSnapshot | None: ...

    def snapshots(self) -> list[ReplicatedSnapshot]: ...

    def __len__(self) -> int: ...


def _check_max(max_snapshots: object, minimum: int) -> int:
    if isinstance(max_snapshots, bool) or not isinstance(max_snapshots, int) or max_snapshots < minimum:
        raise InvalidArgument(
            f"Expected max_snapshots >= {minimum} (replicatedSubscriptionsSnapshotMaxCachedPerSubscription) but got"
            f" max_snapshots={max_snapshots!r}."
        )
    return max_snapshots


class NewestSnapshotCache:
    """Keep the newest ``max_snapshots`` snapshots (Pulsar up to 4.1: a ``TreeMap``, oldest evicted)."""

    __slots__ = ("_by_position", "max_snapshots")

    def __init__(self, max_snapshots: int = 10) -> None:
        self.max_snapshots = _check_max(max_snapshots, 1)
        self._by_position: dict[Position, ReplicatedSnapshot] = {}

    def add(self, snapshot: ReplicatedSnapshot) -> None:
        self._by_position[snapshot.local_position] = snapshot  # TreeMap.put: same position replaces
        self._by_position = dict(sorted(self._by_position.items()))
        while len(self._by_position) > self.max_snapshots:
            del self._by_position[next(iter(self._by_position))]

    def advanced_mark_delete_position(self, position: Position) -> ReplicatedSnapshot | None:
        found: ReplicatedSnapshot | None = None
        for pos in list(self._by_position):
            if pos > position:
                break
            found = self._by_position.pop(pos)
        return found

    def snapshots(self) -> list[ReplicatedSnapshot]:
        return list(self._by_position.values())

    def __len__(self) -> int:
        return len(self._by_position)

    def __repr__(self) -> str:
        return f"NewestSnapshotCache(max_snapshots={self.max_snapshots}, positions={list(self._by_position)})"


class _Entry:
    __slots__ = ("distance_to_previous", "snapshot")

    def __init__(self, snapshot: ReplicatedSnapshot, distance_to_previous: int) -> None:
        self.snapshot = snapshot
        self.distance_to_previous = distance_to_previous


class DistanceSnapshotCache:
    """Keep ``max_snapshots`` snapshots spread by distance (apache/pulsar#25044).

    ``distance(low, high)`` is the broker's ``ManagedLedger.getNumberOfEntries(Range.open(low, high))``. As in
    Pulsar, an entry's distance to its predecessor is computed once; when an entry is evicted its successor's
    distance becomes the *sum* of the two (not recomputed), and the first entry's distance is 0.
    """

    __slots__ = ("_distance", "_entries", "max_snapshots")

    def __init__(self, max_snapshots: int = 10, distance: DistanceFunction = entry_id_distance) -> None:
        self.max_snapshots = _check_max(max_snapshots, 3)
        self._distance = distance
        self._entries: list[_Entry] = []

    def add(self, snapshot: ReplicatedSnapshot) -> None:
        entries = self._entries
        if entries and snapshot.local_position <= entries[-1].snapshot.local_position:
            entries.clear()  # the subscription was reset to an earlier position
        if entries:
            previous = entries[-1].snapshot.local_position
            entries.append(_Entry(snapshot, self._distance(previous, snapshot.local_position)))
        else:
            entries.append(_Entry(snapshot, 0))
        if len(entries) > self.max_snapshots:
            self._evict_closest()

    def _evict_closest(self) -> None:
        entries = self._entries

        def total(i: int) -> tuple[int, Position]:
            return (
                entries[i].distance_to_previous + entries[i + 1].distance_to_previous,
                entries[i].snapshot.local_position,
            )

        victim = min(range(1, len(entries) - 1), key=total)
        entries[victim + 1].distance_to_previous += entries[victim].distance_to_previous
        del entries[victim]

    def advanced_mark_delete_position(self, position: Position) -> ReplicatedSnapshot | None:
        entries = self._entries
        taken = 0
        while taken < len(entries) and entries[taken].snapshot.local_position <= position:
            taken += 1
        if taken == 0:
            return None
        found = entries[taken - 1].snapshot
        del entries[:taken]
        if entries:
            entries[0].distance_to_previous = 0
        return found

    def snapshots(self) -> list[ReplicatedSnapshot]:
        return [entry.snapshot for entry in self._entries]

    def distances(self) -> list[int]:
        """Each cached snapshot's distance to its predecessor (0 for the first), as Pulsar keeps them."""
        return [entry.distance_to_previous for entry in self._entries]

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        positions = [entry.snapshot.local_position for entry in self._entries]
        return f"DistanceSnapshotCache(max_snapshots={self.max_snapshots}, positions={positions})"


def make_snapshot_cache(
    version: str | PulsarVersion = "4.0",
    max_snapshots: int = 10,
    distance: DistanceFunction = entry_id_distance,
) -> SnapshotCache:
    """The cache a subscription of Pulsar ``version`` uses: by distance from 4.2 (#25044), newest N before."""
    if parse_version(version).has(REPLICATED_SNAPSHOT_CACHE_BY_DISTANCE):
        return DistanceSnapshotCache(max_snapshots, distance)
    return NewestSnapshotCache(max_snapshots)
