"""Sticky (exclusive hash range) selector: Pulsar's HashRangeExclusiveStickyKeyConsumerSelectorTest and
KeySharedSubscriptionTest.testHashRangeConflict, the apache/pulsar#24730 gap bug, and the stats of each era."""

from __future__ import annotations

import pytest

from reference_model.errors import ConsumerAssignError, InvalidArgument
from reference_model.hashing import make_hash
from reference_model.selectors import ConsumerRef, StickyRangesSelector, make_selector, validate_sticky_ranges

FIXED = ["3.0.14", "3.3.9", "4.0.7", "4.0", "4.1.1", "4.2"]
GAP_BUG = ["2.10", "3.0.13", "3.3.8", "4.0.0", "4.0.6", "4.1.0"]
ALL = FIXED + GAP_BUG


def sticky(version: str, range_size: int = 65536) -> StickyRangesSelector:
    selector = make_selector("sticky", version, range_size=range_size)
    assert isinstance(selector, StickyRangesSelector)
    return selector


@pytest.mark.parametrize("version", ALL)
def test_consumer_select_range_size_10(version: str) -> None:
    selector = sticky(version, 10)
    c1, c2 = ConsumerRef("c1", 1), ConsumerRef("c2", 2)
    selector.add(c1, [(0, 2)])
    assert [selector.select(i) for i in range(3)] == [c1] * 3
    assert selector.select(4) is None
    selector.add(c2, [(3, 9)])
    assert [selector.select(i) for i in range(3, 10)] == [c2] * 7
    assert [selector.select(i) for i in range(3)] == [c1] * 3
    selector.remove(c1)
    assert selector.select(1) is None
    selector.remove(c2)
    assert selector.select(5) is None


@pytest.mark.parametrize("version", ALL)
def test_missing_or_empty_ranges_are_refused(version: str) -> None:
    selector = sticky(version, 10)
    with pytest.raises(ConsumerAssignError, match="Must specify key shared meta for consumer"):
        selector.add(ConsumerRef("c", 1))
    with pytest.raises(ConsumerAssignError, match="Ranges for KeyShared policy must not be empty"):
        selector.add(ConsumerRef("c", 1), [])
    assert len(selector) == 0


def test_range_total_must_be_positive() -> None:
    with pytest.raises(InvalidArgument, match="range_size"):
        make_selector("sticky", "4.0", range_size=0)


@pytest.mark.parametrize("version", ALL)
def test_get_consumer_key_hash_ranges(version: str) -> None:
    selector = sticky(version, 10)
    consumers = [ConsumerRef(f"consumer{i}", i) for i in range(1, 5)]
    for consumer, r in zip(consumers, [(0, 2), (3, 7), (9, 12), (15, 20)], strict=True):
        selector.add(consumer, [r])
    assert list(selector.ranges().values()) == [[(0, 2)], [(3, 7)], [(9, 12)], [(15, 20)]]


@pytest.mark.parametrize("version", ALL)
def test_same_consumer_name_gets_its_own_ranges(version: str) -> None:
    selector = sticky(version, 10)
    consumers = [ConsumerRef("My-consumer", i) for i in range(3)]
    for consumer, r in zip(consumers, [(0, 2), (3, 7), (9, 12)], strict=True):
        selector.add(consumer, [r])
    assert [selector.ranges()[c] for c in consumers] == [[(0, 2)], [(3, 7)], [(9, 12)]]


@pytest.mark.parametrize("version", ALL)
@pytest.mark.parametrize("new", [(4, 6), (1, 3), (2, 2), (5, 5), (1, 5), (2, 6), (2, 5), (1, 6), (8, 6)])
def test_single_range_conflicts(version: str, new: tuple[int, int]) -> None:
    selector = sticky(version, 10)
    selector.add(ConsumerRef("c1", 1), [(2, 5)])
    with pytest.raises(ConsumerAssignError, match=r"Range conflict with consumer 'c1'|start > end"):
        selector.add(ConsumerRef("c2", 2), [new])
    assert len(selector) == 1
    assert selector.ranges() == {ConsumerRef("c1", 1): [(2, 5)]}


@pytest.mark.parametrize("version", ALL)
@pytest.mark.parametrize("new", [[(2, 2), (3, 3), (4, 5)], [(0, 0), (1, 2)]])
def test_multiple_range_conflicts(version: str, new: list[tuple[int, int]]) -> None:
    selector = sticky(version, 10)
    selector.add(ConsumerRef("c1", 1), [(2, 5)])
    with pytest.raises(ConsumerAssignError, match="Range conflict"):
        selector.add(ConsumerRef("c2", 2), new)


@pytest.mark.parametrize("version", ALL)
def test_hash_range_conflict_scenario(version: str) -> None:
    # KeySharedSubscriptionTest.testHashRangeConflict
    selector = sticky(version)
    c1, c2 = ConsumerRef("c1", 1), ConsumerRef("c2", 2)
    selector.add(c1, [(0, 99), (400, 65535)])
    selector.add(c2, [(100, 399)])  # interleaving between consumers is fine
    for i, rejected in enumerate([[(0, 65535)], [(1, 1)]]):
        with pytest.raises(ConsumerAssignError):
            selector.add(ConsumerRef("x", 10 + i), rejected)
    selector.remove(c1)
    for i, rejected in enumerate([[(0, 65535)], [(50, 100)], [(399, 500)]]):
        with pytest.raises(ConsumerAssignError, match="'c2'"):
            selector.add(ConsumerRef("x", 20 + i), rejected)
    c3, c4 = ConsumerRef("c3", 3), ConsumerRef("c4", 4)
    selector.add(c3, [(400, 600)])
    selector.add(c4, [(50, 99)])
    assert selector.select(450) == c3 and selector.select(99) == c4 and selector.select(100) == c2
    assert selector.select(10) is None and selector.select(601) is None


@pytest.mark.parametrize("version", FIXED)
def test_gaps_between_one_consumers_ranges_select_nobody(version: str) -> None:
    # apache/pulsar#24730 testConsumerSelectWithMultipRanges
    selector = sticky(version)
    c = ConsumerRef("c", 1)
    selector.add(c, [(0, 9999), (20000, 29999), (40000, 49999)])
    assert selector.gap_fixed
    assert selector.select(15000) is None and selector.select(35000) is None and selector.select(50000) is None
    assert selector.select(9999) == c and selector.select(20000) == c and selector.select(49999) == c


@pytest.mark.parametrize("version", GAP_BUG)
def test_before_the_fix_gaps_went_to_the_consumer(version: str) -> None:
    selector = sticky(version)
    c = ConsumerRef("c", 1)
    selector.add(c, [(0, 9999), (20000, 29999), (40000, 49999)])
    assert not selector.gap_fixed
    assert selector.select(15000) == c and selector.select(35000) == c
    assert selector.select(50000) is None  # beyond the last point
    other = ConsumerRef("other", 2)
    selector.add(other, [(12000, 12000)])  # a point of someone else in the gap breaks the run
    assert selector.select(11000) is None and selector.select(12000) == other and selector.select(15000) is None


def test_before_the_fix_single_slot_ranges_confuse_the_stats_pairing() -> None:
    selector = sticky("3.0.13")
    a, b = ConsumerRef("a", 1), ConsumerRef("b", 2)
    selector.add(a, [(5, 5)])
    selector.add(b, [(10, 20)])
    assert selector.ranges() == {a: [], b: []}  # points 5, 10, 20 pair as (5, 10): different owners
    assert selector.select(5) == a and selector.select(15) == b
    fixed = sticky("3.0.14")
    fixed.add(a, [(5, 5)])
    fixed.add(b, [(10, 20)])
    assert fixed.ranges() == {a: [(5, 5)], b: [(10, 20)]}


def test_stats_merge_adjacent_ranges_in_4x_only() -> None:
    c = ConsumerRef("c", 1)
    for version, expected in [("3.3", [(0, 99), (100, 199)]), ("4.0", [(0, 199)]), ("3.0.13", [(0, 99), (100, 199)])]:
        selector = sticky(version)
        selector.add(c, [(100, 199), (0, 99)])
        assert selector.ranges() == {c: expected}, version
        assert selector.ranges_of(c) == [(100, 199), (0, 99)]


@pytest.mark.parametrize("version", FIXED)
def test_own_ranges_must_not_overlap_and_messages_name_them(version: str) -> None:
    selector = sticky(version)
    with pytest.raises(ConsumerAssignError, match=r"Consumer's own ranges conflict: \[0,10\] overlaps with \[5,20\]"):
        selector.add(ConsumerRef("c", 1), [(5, 20), (0, 10)])
    with pytest.raises(ConsumerAssignError, match=r"Fixed hash range start > end for range: \[9,3\]"):
        selector.add(ConsumerRef("c", 1), [(9, 3)])


def test_own_overlap_is_refused_before_the_fix_too() -> None:
    with pytest.raises(ConsumerAssignError, match="own ranges conflict"):
        sticky("3.0.13").add(ConsumerRef("c", 1), [(0, 10), (5, 20)])


def key_with_low_bits_zero() -> bytes:
    i = 0
    while make_hash(f"k{i}".encode()) % 65536:
        i += 1
    return f"k{i}".encode()


def test_4x_slot_zero_becomes_one() -> None:
    key = key_with_low_bits_zero()
    zero, one = ConsumerRef("zero", 1), ConsumerRef("one", 2)
    modern = sticky("4.0")
    modern.add(zero, [(0, 0)])
    modern.add(one, [(1, 1)])
    assert modern.slot_of(key) == 1
    assert modern.select_key(key) == one  # a consumer owning only [0, 0] never gets a key
    legacy = sticky("3.3")
    legacy.add(zero, [(0, 0)])
    legacy.add(one, [(1, 1)])
    assert legacy.select_key(key) == zero


def test_sticky_never_reports_impacted_ranges() -> None:
    selector = sticky("4.0")
    assert selector.add(ConsumerRef("c", 1), [(0, 10)]) is None
    with pytest.raises(InvalidArgument, match="STICKY mode never drains"):
        make_selector("sticky", "4.0", track_impacted=True)


@pytest.mark.parametrize(
    ("ranges", "message"),
    [
        ([], "must not be empty"),
        ([(5, 1)], "start > end"),
        ([(0, 65536)], r"ranges must be \[0, 65535\]"),
        ([(-1, 3)], "outside the hash range"),
        ([(0, 10), (10, 20)], "overlap"),
    ],
)
def test_client_side_validation(ranges: list[tuple[int, int]], message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        validate_sticky_ranges(ranges)


@pytest.mark.parametrize("bad", ["0-10", [(0, "1")], [(0, 1, 2)], [(True, 3)], 5])
def test_malformed_ranges_are_named(bad: object) -> None:
    with pytest.raises(InvalidArgument, match="ranges"):
        sticky("4.0").add(ConsumerRef("c", 1), bad)  # type: ignore[arg-type]


def test_ranges_argument_is_refused_by_other_selectors() -> None:
    with pytest.raises(InvalidArgument, match="only the sticky selector takes ranges"):
        make_selector("auto-split").add(ConsumerRef("c", 1), [(0, 1)])
