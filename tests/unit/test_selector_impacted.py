"""Snapshots and impacted ranges: Pulsar's ConsumerHashAssignmentsSnapshotTest vectors and the selectors' use."""

from __future__ import annotations

import pytest

from reference_model.errors import InvalidArgument
from reference_model.selectors import (
    AssignmentSnapshot,
    ConsumerRef,
    ImpactedRanges,
    diff_ranges,
    make_selector,
    merge_ranges,
    resolve_impacted,
)

C1 = ConsumerRef("consumer1", 1)
C2 = ConsumerRef("consumer2", 2)


def snap(*items: tuple[int, int, ConsumerRef]) -> AssignmentSnapshot:
    return AssignmentSnapshot.of(items)


def test_merge_overlapping_ranges() -> None:
    assert merge_ranges([(1, 5), (6, 10), (8, 12), (15, 20), (21, 25)]) == [(1, 12), (15, 25)]
    assert merge_ranges([(5, 9), (1, 3), (1, 3)]) == [(1, 3), (5, 9)]
    assert merge_ranges([]) == []


def test_diff_no_changes() -> None:
    assert diff_ranges(snap((1, 5, C1)), snap((1, 5, C1))) == []


def test_diff_consumer_changed() -> None:
    assert diff_ranges(snap((1, 5, C1)), snap((1, 5, C2))) == [((1, 5), C1, C2)]


def test_diff_range_added() -> None:
    assert diff_ranges(snap(), snap((1, 5, C1))) == [((1, 5), None, C1)]


def test_diff_range_removed() -> None:
    assert diff_ranges(snap((1, 5, C1)), snap()) == [((1, 5), C1, None)]


def test_diff_overlapping_ranges_records_only_the_overlap() -> None:
    diff = diff_ranges(snap((1, 5, C1)), snap((3, 7, C2)))
    assert ((3, 5), C1, C2) in diff
    assert diff == [((3, 5), C1, C2), ((3, 7), None, C2)]


def test_resolve_no_changes() -> None:
    assert resolve_impacted(snap((1, 5, C1)), snap((1, 5, C1))) == ImpactedRanges()


def test_resolve_consumer_changed() -> None:
    assert resolve_impacted(snap((1, 5, C1)), snap((1, 5, C2))) == {C1: ((1, 5),)}


def test_resolve_range_added() -> None:
    assert len(resolve_impacted(snap(), snap((1, 5, C1)))) == 0


def test_resolve_range_removed() -> None:
    assert resolve_impacted(snap((1, 5, C1)), snap()) == {C1: ((1, 5),)}


def test_resolve_overlapping_ranges() -> None:
    assert resolve_impacted(snap((1, 5, C1)), snap((3, 7, C2))) == {C1: ((3, 5),)}


def test_resolve_merges_adjacent_lost_ranges() -> None:
    before = snap((1, 5, C1), (6, 9, C1), (10, 20, C2))
    after = snap((1, 20, C2))
    assert resolve_impacted(before, after) == {C1: ((1, 9),)}
    assert before.resolve_impacted(after).contains(C1, 7)
    assert not before.resolve_impacted(after).contains(C2, 7)


def test_snapshot_validation() -> None:
    with pytest.raises(InvalidArgument, match="non-overlapping and sorted"):
        snap((1, 5, C1), (5, 9, C2))
    with pytest.raises(InvalidArgument, match="end must be >= range start"):
        snap((5, 1, C1))


def test_snapshot_lookup_and_grouping() -> None:
    s = snap((1, 5, C1), (6, 9, C2), (12, 20, C1))
    assert [s.consumer_of(x) for x in (0, 1, 5, 6, 10, 20, 21)] == [None, C1, C1, C2, None, C1, None]
    assert s.ranges_by_consumer() == {C1: [(1, 5), (12, 20)], C2: [(6, 9)]}
    assert len(s) == 3 and [a.range for a in s] == [(1, 5), (6, 9), (12, 20)]


def test_impacted_ranges_is_an_immutable_mapping_with_a_round_trip_repr() -> None:
    impacted = ImpactedRanges({C1: [(1, 5)]})
    assert impacted[C1] == ((1, 5),)
    assert eval(repr(impacted)) == impacted
    assert hash(impacted) == hash(ImpactedRanges({C1: ((1, 5),)}))
    with pytest.raises(TypeError):
        impacted[C2] = ((1, 2),)  # type: ignore[index]


@pytest.mark.parametrize("kind", ["consistent-hashing", "auto-split"])
def test_4x_selectors_report_impacted_ranges_consistent_with_their_snapshots(kind: str) -> None:
    selector = make_selector(kind, "4.0", points=20)
    consumers = [ConsumerRef(f"c{i}", i) for i in range(6)]
    for consumer in consumers:
        before = selector.snapshot()
        impacted = selector.add(consumer)
        assert impacted == resolve_impacted(before, selector.snapshot())
        assert consumer not in (impacted or {})  # a newcomer loses nothing
        for loser, lost in (impacted or {}).items():
            for start, end in lost:
                assert before.consumer_of(start) == loser
                assert selector.select(start) == consumer and selector.select(end) == consumer
    for consumer in consumers[:3]:
        impacted = selector.remove(consumer)
        assert impacted is not None and set(impacted) == {consumer}


def test_3x_and_classic_report_nothing_and_have_no_snapshot() -> None:
    legacy = make_selector("consistent-hashing", "3.3")
    assert legacy.add(C1) is None and legacy.remove(C1) is None
    with pytest.raises(InvalidArgument, match="no ConsumerHashAssignmentsSnapshot"):
        legacy.snapshot()
    classic = make_selector("consistent-hashing", "4.0", classic=True)
    assert classic.add(C1) is None
    assert classic.snapshot().ranges_by_consumer() == {C1: [(1, 2**31 - 2)]}
    with pytest.raises(InvalidArgument, match=r"needs Pulsar 4\.0"):
        make_selector("auto-split", "3.0", track_impacted=True)
