"""The snapshot cache against ``ReplicatedSubscriptionSnapshotCacheTest`` (both eviction rules)."""

from __future__ import annotations

import pytest

from reference_model.errors import InvalidArgument
from reference_model.replication import (
    DistanceSnapshotCache,
    NewestSnapshotCache,
    ReplicatedSnapshot,
    entry_id_distance,
    make_snapshot_cache,
)


def snap(ledger: int, entry: int, name: str | None = None) -> ReplicatedSnapshot:
    return ReplicatedSnapshot(name or f"snapshot-{ledger}:{entry}", (ledger, entry), (("r2", (9, entry)),))


def pruning_distance(low, high) -> int:
    """The distance Pulsar's pruning tests use: ``upper.entryId - lower.entryId``."""
    return high[1] - low[1]


@pytest.mark.parametrize("cache_type", [NewestSnapshotCache, DistanceSnapshotCache])
def test_snapshot_cache(cache_type) -> None:
    """``testSnapshotCache``: newest snapshot <= position, older ones dropped with it."""
    cache = cache_type(10) if cache_type is NewestSnapshotCache else cache_type(10, lambda a, b: 0)
    assert cache.advanced_mark_delete_position((0, 0)) is None
    assert cache.advanced_mark_delete_position((100, 0)) is None
    for pos in ((1, 1), (2, 2), (5, 5), (7, 7)):
        cache.add(snap(*pos))
    assert cache.advanced_mark_delete_position((0, 0)) is None
    assert cache.advanced_mark_delete_position((1, 0)) is None
    assert cache.advanced_mark_delete_position((1, 1)).local_position == (1, 1)
    assert cache.advanced_mark_delete_position((5, 6)).local_position == (5, 5)
    assert cache.advanced_mark_delete_position((2, 2)) is None
    assert cache.advanced_mark_delete_position((5, 5)) is None
    assert [s.local_position for s in cache.snapshots()] == [(7, 7)]


def test_newest_cache_pruning_keeps_newest() -> None:
    """Pulsar <= 4.1: beyond N snapshots the oldest goes."""
    cache = NewestSnapshotCache(3)
    for i in range(1, 5):
        cache.add(snap(i, i))
    assert [s.local_position for s in cache.snapshots()] == [(2, 2), (3, 3), (4, 4)]
    assert cache.advanced_mark_delete_position((1, 5)) is None
    assert cache.advanced_mark_delete_position((2, 2)).local_position == (2, 2)


def test_newest_cache_same_position_replaces() -> None:
    cache = NewestSnapshotCache(3)
    cache.add(snap(1, 1, "a"))
    cache.add(snap(1, 1, "b"))
    assert [s.snapshot_id for s in cache.snapshots()] == ["b"]
    assert len(cache) == 1


def test_distance_cache_pruning() -> None:
    """``testSnapshotCachePruning`` (#25044): N=3, every distance 1 -> the second snapshot goes first."""
    cache = DistanceSnapshotCache(3, lambda a, b: 1)
    for i in range(1, 5):
        cache.add(snap(i, i))
    assert cache.advanced_mark_delete_position((2, 2)).local_position == (1, 1)
    assert cache.advanced_mark_delete_position((5, 5)).local_position == (4, 4)


def test_distance_cache_pruning_scenarios() -> None:
    """``testSnapshotCachePruningScenarios``: which snapshot each addition evicts."""
    cache = DistanceSnapshotCache(5, pruning_distance)

    def positions() -> list[int]:
        return [s.local_position[1] for s in cache.snapshots()]

    for entry in (1, 2, 10, 15, 25):
        cache.add(snap(1, entry))
    cache.add(snap(1, 100))
    assert positions() == [1, 10, 15, 25, 100]  # 2 pruned: head is previous to the removed one
    cache.add(snap(1, 110))
    assert positions() == [1, 15, 25, 100, 110]  # 10 pruned: an ordinary middle entry
    cache.add(snap(1, 112))
    assert positions() == [1, 15, 25, 100, 112]  # 110 pruned: the tail follows the removed one
    cache.add(snap(1, 113))
    assert positions() == [1, 15, 25, 100, 113]  # 112 pruned right after the one before the tail went
    cache.add(snap(1, 200))
    assert positions() == [1, 25, 100, 113, 200]  # 15 pruned immediately after the head
    cache.add(snap(1, 50))
    assert positions() == [50]  # before the tail: the subscription was reset, the cache is cleared


def test_distance_cache_sums_distances_of_evicted_entries() -> None:
    cache = DistanceSnapshotCache(3, pruning_distance)
    for entry in (0, 4, 10, 11):
        cache.add(snap(1, entry))
    # 4 (4 + 6 = 10) and 10 (6 + 1 = 7): 10 goes, 11 inherits its distance: 6 + 1.
    assert [s.local_position[1] for s in cache.snapshots()] == [0, 4, 11]
    assert cache.distances() == [0, 4, 7]
    assert cache.advanced_mark_delete_position((1, 5)).local_position == (1, 4)
    assert cache.distances() == [0]


def test_distance_cache_spreads_snapshots_over_the_backlog() -> None:
    """``testSnapshotCachePruningByKeepingEqualDistance`` in small: 2000 snapshots 7 entries apart, N=20."""
    cache = DistanceSnapshotCache(20, pruning_distance)
    for i in range(2000):
        cache.add(snap(1, 7 * i))
    kept = [s.local_position[1] for s in cache.snapshots()]
    assert len(kept) == 20 and kept[0] == 0 and kept[-1] == 7 * 1999
    average = (kept[-2] - kept[1]) // len(kept)
    assert all(d <= 2 * average for d in cache.distances()[:-1])
    # A mark-delete position anywhere in the backlog finds a snapshot within twice the average distance.
    md = kept[1] + (kept[-2] - kept[1]) // 3
    found = cache.advanced_mark_delete_position((1, md))
    assert found is not None and md - found.local_position[1] <= 2 * average


def test_ack_holes_newest_never_replicates_distance_does() -> None:
    """#25044: mark-delete stuck near the start while snapshots keep coming; then it advances a little."""
    newest, spread = NewestSnapshotCache(10), DistanceSnapshotCache(10, entry_id_distance)
    for i in range(1, 101):
        newest.add(snap(3, 10 * i))
        spread.add(snap(3, 10 * i))
    # The hole at entry 15 closes: mark-delete moves to 3:25.
    assert newest.advanced_mark_delete_position((3, 25)) is None
    found = spread.advanced_mark_delete_position((3, 25))
    assert found is not None and found.local_position == (3, 10)


@pytest.mark.parametrize(
    ("version", "kind"),
    [
        ("4.0.8", NewestSnapshotCache),
        ("4.0.9", DistanceSnapshotCache),
        ("4.0", DistanceSnapshotCache),
        ("4.1.2", NewestSnapshotCache),
        ("4.1.3", DistanceSnapshotCache),
        ("4.2.0", DistanceSnapshotCache),
        ("3.0", NewestSnapshotCache),
        ("3.3.9", NewestSnapshotCache),
    ],
)
def test_make_snapshot_cache_follows_version(version, kind) -> None:
    """#25044 shipped in 4.0.9, 4.1.3 and 4.2.0 (release notes); 3.x never got it."""
    assert isinstance(make_snapshot_cache(version), kind)


def test_entry_id_distance() -> None:
    assert entry_id_distance((1, 1), (1, 2)) == 0
    assert entry_id_distance((1, 1), (1, 10)) == 8
    assert entry_id_distance((1, 9), (2, 3)) == 4


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda: DistanceSnapshotCache(2), "max_snapshots >= 3"),
        (lambda: NewestSnapshotCache(0), "max_snapshots=0"),
        (lambda: NewestSnapshotCache("10"), "max_snapshots='10'"),
    ],
)
def test_invalid_cache_sizes(make, fragment) -> None:
    with pytest.raises(InvalidArgument) as info:
        make()
    assert fragment in str(info.value)
