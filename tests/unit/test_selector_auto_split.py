"""Hash-range auto-split: Pulsar's HashRangeAutoSplitStickyKeyConsumerSelectorTest vectors and rules."""

from __future__ import annotations

import pytest

from reference_model.errors import ConsumerAssignError, InvalidArgument
from reference_model.hashing import make_hash
from reference_model.selectors import AutoSplitSelector, ConsumerRef, Selector, make_selector

VERSIONS = ["2.10", "3.0", "3.3", "4.0", "4.2"]


def join(selector: Selector, names: list[str]) -> list[ConsumerRef]:
    consumers = [ConsumerRef(name, i) for i, name in enumerate(names, start=1)]
    for consumer in consumers:
        selector.add(consumer)
    return consumers


@pytest.mark.parametrize("version", VERSIONS)
def test_golden_ranges_range_size_64(version: str) -> None:
    selector = make_selector("auto-split", version, range_size=2 << 5)
    c1, c2, c3, c4 = join(selector, ["consumer1", "consumer2", "consumer3", "consumer4"])
    assert selector.ranges() == {c1: [(49, 64)], c2: [(17, 32)], c3: [(0, 16)], c4: [(33, 48)]}
    selector.remove(c1)  # the top owner leaves: its lower neighbour moves up to the top bound
    assert selector.ranges() == {c2: [(17, 32)], c3: [(0, 16)], c4: [(33, 64)]}
    selector.remove(c3)  # a lower owner leaves: the next higher bound absorbs its range
    assert selector.ranges() == {c2: [(0, 32)], c4: [(33, 64)]}


def test_default_range_ends_at_65536_and_halves() -> None:
    selector = make_selector("auto-split", "4.0")
    c1, c2, c3 = join(selector, ["c1", "c2", "c3"])
    # the newcomer takes the lower half; the first range measures one less than its width, so the tie between
    # [0, 32768] and [32769, 65536] goes to the lowest range by the strict comparison
    assert selector.ranges() == {c1: [(32769, 65536)], c2: [(16385, 32768)], c3: [(0, 16384)]}


def test_same_name_consumers_get_distinct_ranges() -> None:
    selector = make_selector("auto-split", "4.0", range_size=64)
    consumers = join(selector, ["My-consumer"] * 3)
    ranges = selector.ranges()
    assert all(len(ranges[c]) == 1 for c in consumers)
    assert len({tuple(ranges[c]) for c in consumers}) == 3


@pytest.mark.parametrize("version", VERSIONS)
def test_selection_matches_published_ranges_across_membership_changes(version: str) -> None:
    selector = make_selector("auto-split", version, range_size=64)
    consumers = [ConsumerRef("", i) for i in range(8)]

    def check() -> None:
        ranges = selector.ranges()
        for slot in range(64):
            owners: list[ConsumerRef | None] = [c for c, rs in ranges.items() if any(s <= slot <= e for s, e in rs)]
            assert [selector.select(slot)] == (owners or [None])

    for consumer in consumers:
        selector.add(consumer)
        check()
    for consumer in consumers:
        selector.remove(consumer)
        check()
    assert selector.select(0) is None


def test_no_more_range_to_split() -> None:
    selector = make_selector("auto-split", "4.0", range_size=2)
    a, b = join(selector, ["a", "b"])
    assert selector.ranges() == {a: [(2, 2)], b: [(0, 1)]}
    with pytest.raises(ConsumerAssignError, match="No more range can assigned to new consumer, assigned consumers 2"):
        selector.add(ConsumerRef("c", 3))
    assert selector.consumers() == [a, b]  # unchanged


def test_many_consumers_exhaust_the_default_range_only_past_65536() -> None:
    selector = make_selector("auto-split", "4.0", range_size=16, track_impacted=False)
    join(selector, [f"c{i}" for i in range(16)])
    with pytest.raises(ConsumerAssignError):
        selector.add(ConsumerRef("one-too-many", 99))
    total = sum(e - s + 1 for rs in selector.ranges().values() for s, e in rs)
    assert total == 17  # [0, 16]: the top bound is the range size itself


def test_4x_slot_remaps_zero_and_3x_reduces_inside_select() -> None:
    modern = make_selector("auto-split", "4.0")
    legacy = make_selector("auto-split", "3.0")
    assert modern.slot_of_hash(65536 * 5) == 1
    assert legacy.slot_of_hash(65536 * 5) == 65536 * 5  # 3.x dispatchers keep the full hash
    join(modern, ["a", "b"])
    _a, b = join(legacy, ["a", "b"])
    assert legacy.select(65536 * 5) == legacy.select(0) == b
    for key in (b"a", b"key-0", b"anyKey"):
        assert legacy.select_key(key) == legacy.select(make_hash(key) % 65536)


def test_4x_returns_what_the_old_owner_lost() -> None:
    selector = make_selector("auto-split", "4.0", range_size=64)
    a = ConsumerRef("a", 1)
    b = ConsumerRef("b", 2)
    assert selector.add(a) == {}
    assert dict(selector.add(b) or {}) == {a: ((0, 32),)}
    assert dict(selector.remove(a) or {}) == {a: ((33, 64),)}
    assert make_selector("auto-split", "3.0").add(a) is None


@pytest.mark.parametrize("range_size", [0, 1, 3, 100, -4])
def test_range_size_must_be_a_power_of_two(range_size: int) -> None:
    with pytest.raises(InvalidArgument, match="range_size"):
        make_selector("auto-split", "4.0", range_size=range_size)


def test_select_beyond_the_range_is_refused() -> None:
    selector = make_selector("auto-split", "4.0", range_size=64)
    join(selector, ["a"])
    assert isinstance(selector, AutoSplitSelector)
    with pytest.raises(InvalidArgument, match="beyond the auto-split hash range"):
        selector.select(65)
