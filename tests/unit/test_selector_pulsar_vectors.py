"""Pulsar's unit-test expectations (``pulsar_vectors``) run through the model's public API at every release read."""

from __future__ import annotations

import pytest
from pulsar_vectors import (
    CH_KEY_HASH_RANGES,
    SNAPSHOT_CACHE,
    STICKY_GAPS,
    ConsistentHashingVector,
    SnapshotCacheVector,
    StickyGapVector,
)

from reference_model.replication import ReplicatedSnapshot, make_snapshot_cache
from reference_model.selectors import ConsumerRef, make_selector


def _cases(vectors, attr: str = "read_at"):  # type: ignore[no-untyped-def]
    return [
        pytest.param(vector, release, id=f"{vector.test.split('.')[-1]}@{release}")
        for vector in vectors
        for release in getattr(vector, attr)
    ]


@pytest.mark.parametrize(("vector", "release"), _cases(CH_KEY_HASH_RANGES))
def test_consistent_hashing_key_hash_ranges(vector: ConsistentHashingVector, release: str) -> None:
    selector = make_selector("consistent-hashing", release, points=vector.points)
    for index, name in enumerate(vector.names):
        selector.add(ConsumerRef(name, index))
    assert {c.name: r for c, r in selector.ranges().items()} == vector.expected


@pytest.mark.parametrize(("vector", "release"), _cases(SNAPSHOT_CACHE))
def test_snapshot_cache_pruning(vector: SnapshotCacheVector, release: str) -> None:
    cache = make_snapshot_cache(release, vector.max_snapshots)
    for i in vector.added:
        cache.add(ReplicatedSnapshot(f"snapshot-{i}", (i, i), (("r2", (9, i)),)))
    for position, expected in vector.lookups:
        found = cache.advanced_mark_delete_position(position)
        assert (found.snapshot_id if found is not None else None) == expected, (position, release)


@pytest.mark.parametrize(("vector", "release"), _cases(STICKY_GAPS))
def test_sticky_selector_leaves_the_gaps_between_ranges(vector: StickyGapVector, release: str) -> None:
    selector = make_selector("sticky", release)
    consumer = ConsumerRef("consumer1", 0)
    selector.add(consumer, list(vector.ranges))
    assert {slot: selector.select(slot) == consumer for slot in vector.expected} == vector.expected


def test_before_24730_the_gaps_went_to_the_lone_consumer() -> None:
    """The bug the vector pins: releases before the fix (3.0.13, 3.3.8, 4.0.6, 4.1.0) select slot 15000."""
    (vector,) = STICKY_GAPS
    for release in ("3.0.13", "3.3.8", "4.0.6", "4.1.0"):
        selector = make_selector("sticky", release)
        consumer = ConsumerRef("consumer1", 0)
        selector.add(consumer, list(vector.ranges))
        assert selector.select(15000) == consumer, release


def test_every_era_of_the_ring_is_covered_by_a_vector() -> None:
    read = {release for vector in CH_KEY_HASH_RANGES for release in vector.read_at}
    assert {"3.0.6", "3.0.7", "3.0.14", "3.3.1", "3.3.2", "3.3.9", "4.0.0"} <= read
