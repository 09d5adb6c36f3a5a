"""Consistent hashing per era: Pulsar's ConsistentHashingStickyKeyConsumerSelectorTest vectors and properties."""

from __future__ import annotations

import itertools
import random

import pytest

from reference_model.hashing import make_hash, reduce_hash
from reference_model.selectors import (
    CollisionListRingSelector,
    ConsistentHashingSelector,
    ConsumerRef,
    NameIndexRingSelector,
    Selector,
    make_selector,
    merge_ranges,
    ring_key,
)

INT_MAX = 2**31 - 1


def join(selector: Selector, names: list[str]) -> list[ConsumerRef]:
    consumers = [ConsumerRef(name, i) for i, name in enumerate(names)]
    for consumer in consumers:
        selector.add(consumer)
    return consumers


def by_name(ranges: dict[ConsumerRef, list[tuple[int, int]]]) -> dict[str, list[tuple[int, int]]]:
    return {consumer.name: r for consumer, r in ranges.items()}


# -- golden vectors of testGetConsumerKeyHashRanges (3 points, consumer1..3) -----------------------------------------

GOLDEN_4_0 = {
    "consumer1": [(14359, 18366), (29991, 39817), (52980, 60442)],
    "consumer2": [(1, 6668), (39818, 52979), (60443, 63679), (65184, 65535)],
    "consumer3": [(6669, 14358), (18367, 29990), (63680, 65183)],
}
# before apache/pulsar#22053: ring key name + i
GOLDEN_BEFORE_NUL = {
    "consumer1": [(0, 330121749), (330121750, 618146114), (1797637922, 1976098885)],
    "consumer2": [(938427576, 1094135919), (1138613629, 1342907082), (1342907083, 1797637921)],
    "consumer3": [(618146115, 772640562), (772640563, 938427575), (1094135920, 1138613628)],
}
# 3.0.3 - 3.0.6: ring key name + "\0" + i; no wrap-around range in stats
GOLDEN_NUL = {
    "consumer1": [(119056335, 242013991), (722195657, 1656011842), (1707482098, 1914695766)],
    "consumer2": [(0, 90164503), (90164504, 119056334), (382436668, 722195656)],
    "consumer3": [(242013992, 242377547), (242377548, 382436667), (1656011843, 1707482097)],
}
NAMES = ["consumer1", "consumer2", "consumer3"]


@pytest.mark.parametrize("version", ["4.0", "4.0.0", "4.1", "4.2"])
def test_4x_golden_ranges(version: str) -> None:
    selector = make_selector("consistent-hashing", version, points=3)
    join(selector, NAMES)
    assert by_name(selector.ranges()) == GOLDEN_4_0
    assert selector.ranges() == selector.ranges()
    everything = sorted(r for ranges in GOLDEN_4_0.values() for r in ranges)
    assert all(b[0] == a[1] + 1 for a, b in itertools.pairwise(everything))
    assert sum(e - s + 1 for s, e in everything) == 65535


def test_4x_ring_points_of_the_golden_vector() -> None:
    selector = make_selector("consistent-hashing", "4.0", points=3)
    consumers = join(selector, NAMES)
    assert isinstance(selector, ConsistentHashingSelector)
    assert selector.ring_positions() == [6668, 14358, 18366, 29990, 39817, 52979, 60442, 63679, 65183]
    c1, c2, c3 = consumers
    assert [selector.select(p) for p in selector.ring_positions()] == [c2, c3, c1, c3, c1, c2, c1, c2, c3]
    assert selector.select(65184) == c2  # past the last point: wraps to the first point's consumer
    assert selector.select(70000) == c2


@pytest.mark.parametrize("version", ["2.10", "2.11", "3.0.0", "3.0.2", "3.1.0", "3.2.0"])
def test_golden_ranges_before_the_nul_separator(version: str) -> None:
    selector = make_selector("consistent-hashing", version, points=3)
    assert isinstance(selector, CollisionListRingSelector)
    join(selector, NAMES)
    assert by_name(selector.ranges()) == GOLDEN_BEFORE_NUL


@pytest.mark.parametrize("version", ["3.0.3", "3.0.6", "3.2.1", "3.3.0", "3.3.1"])
def test_golden_ranges_with_the_nul_separator(version: str) -> None:
    selector = make_selector("consistent-hashing", version, points=3)
    assert isinstance(selector, CollisionListRingSelector)
    join(selector, NAMES)
    assert by_name(selector.ranges()) == GOLDEN_NUL


def test_3_0_3_era_ring_points() -> None:
    # The 3.0.3-era test's ring points, from makeHash(name + "\0" + i)
    points = {name: sorted(make_hash(ring_key(name, i)) for i in range(3)) for name in NAMES}
    assert points == {
        "consumer1": [242013991, 1656011842, 1914695766],
        "consumer2": [90164503, 119056334, 722195656],
        "consumer3": [242377547, 382436667, 1707482097],
    }


@pytest.mark.parametrize("version", ["3.0.7", "3.0.14", "3.3.2", "3.3"])
def test_name_index_era_stats_one_range_per_point_and_the_shifted_wrap_around(version: str) -> None:
    selector = make_selector("consistent-hashing", version, points=3)
    assert isinstance(selector, NameIndexRingSelector)
    consumers = join(selector, NAMES)
    ring = sorted((make_hash(ring_key(c.name, i, 0)), c) for c in consumers for i in range(3))
    assert selector.ring_positions() == [p for p, _ in ring]
    expected: dict[ConsumerRef, list[tuple[int, int]]] = {c: [] for c in consumers}
    start = 0
    for position, owner in ring:
        expected[owner].append((start, position))
        start = position + 1
    # the era's code appends [lastPoint + 1, MAX - 1] to the first point's consumer
    expected[ring[0][1]].append((ring[-1][0] + 1, INT_MAX - 1))
    assert selector.ranges() == expected
    # ... while select gives the unprinted slot MAX to that consumer as well
    assert selector.select(ring[-1][0] + 1) == ring[0][1]
    assert selector.select(INT_MAX) == ring[0][1]


def test_consumer_select_starts_empty_then_first_consumer_takes_everything() -> None:
    for version in ("4.0", "3.0.7", "3.0.6"):
        selector = make_selector("consistent-hashing", version, points=100)
        assert selector.select_key(b"anyKey") is None
        (c1,) = join(selector, ["c1"])
        assert selector.select_key(b"anyKey") == c1


@pytest.mark.parametrize("version", ["4.0", "3.0.7", "3.0.3"])
def test_consumer_select_spreads_keys(version: str) -> None:
    # testConsumerSelect: 200 points, each consumer within 20% of an even share (Pulsar samples 1000 random
    # UUIDs per step; 10000 fixed keys keep the check deterministic and the sampling noise small)
    selector = make_selector("consistent-hashing", version, points=200)
    consumers = join(selector, ["c1", "c2", "c3", "c4"])
    total = 10000
    keys = [f"key-{i}".encode() for i in range(total)]

    def shares() -> dict[str, int]:
        counts: dict[str, int] = {}
        for key in keys:
            chosen = selector.select_key(key)
            assert chosen is not None
            counts[chosen.name] = counts.get(chosen.name, 0) + 1
        return counts

    for remaining in (consumers, consumers[1:], consumers[2:]):
        counts = shares()
        assert set(counts) == {c.name for c in remaining}
        for n in counts.values():
            assert abs(n - total / len(remaining)) <= 0.2 * total / len(remaining)
        selector.remove(remaining[0])
    assert shares() == {"c4": total}


@pytest.mark.parametrize(("version", "collide"), [("3.0.2", True), ("3.0.3", False), ("3.0.7", False), ("4.0", False)])
def test_consumer_names_ending_with_a_number(version: str, collide: bool) -> None:
    # apache/pulsar#22050: "consumer1" + "11" == "consumer11" + "1" before the NUL separator
    selector = make_selector("consistent-hashing", version, points=12)
    join(selector, ["consumer1", "consumer11"])
    ranges = list(selector.ranges().values())
    shared = set(ranges[0]) & set(ranges[1])
    assert bool(shared) == collide


@pytest.mark.parametrize("version", ["2.10", "3.0.3", "3.0.7", "4.0"])
def test_removing_every_consumer_empties_the_stats_and_removing_twice_is_harmless(version: str) -> None:
    selector = make_selector("consistent-hashing", version, points=12)
    consumers = join(selector, [f"consumer{i}" for i in range(1, 100)])
    assert all(selector.ranges()[c] for c in consumers)
    for consumer in consumers:
        selector.remove(consumer)
    assert selector.ranges() == {}
    assert selector.select(12345) is None
    for consumer in consumers:
        selector.remove(consumer)
    assert len(selector) == 0


def validation_points(selector: Selector, count: int = 200) -> list[int]:
    low, high = selector.key_hash_range
    size = high - low + 1
    return [i * (size // (count + 1)) for i in range(count)]


@pytest.mark.parametrize("version", ["4.0", "3.0.7"])
def test_selected_consumer_does_not_change_when_another_is_removed(version: str) -> None:
    selector = make_selector("consistent-hashing", version, points=100, track_impacted=False)
    consumers = join(selector, ["consumer"] * 100)
    points = validation_points(selector)
    before = [selector.select(p) for p in points]
    removed: set[ConsumerRef] = set()
    for consumer in consumers:
        selector.remove(consumer)
        removed.add(consumer)
        for point, expected in zip(points, before, strict=True):
            if expected not in removed:
                assert selector.select(point) == expected


@pytest.mark.parametrize("version", ["4.0", "3.0.7"])
def test_selected_consumer_changes_only_to_the_added_one(version: str) -> None:
    selector = make_selector("consistent-hashing", version, points=100, track_impacted=False)
    join(selector, ["consumer"] * 50)
    points = validation_points(selector)
    before = [selector.select(p) for p in points]
    for i in range(50, 100):
        added = ConsumerRef("consumer", i)
        selector.add(added)
        for point, expected in zip(points, before, strict=True):
            assert selector.select(point) in (expected, added)
        before = [selector.select(p) for p in points]


def test_4x_ranges_of_others_survive_removals() -> None:
    # testShouldNotChangeSelectedConsumerWhenConsumerIsRemovedCheckHashRanges
    selector = make_selector("consistent-hashing", "4.0", points=100)
    consumers = join(selector, ["consumer"] * 25)
    expected = selector.ranges()
    for removed in consumers:
        selector.remove(removed)
        for consumer, ranges in expected.items():
            if consumer == removed:
                continue
            for start, end in ranges:
                assert selector.select(start) == consumer
                assert selector.select(end) == consumer
        expected = selector.ranges()


def test_the_collision_list_era_moves_keys_between_existing_consumers() -> None:
    # apache/pulsar#23315: same-name consumers share every point; select takes list[h % len(list)], so a third
    # consumer joining moves keys between the first two.
    selector = make_selector("consistent-hashing", "3.0.6", points=100)
    first, second = join(selector, ["consumer", "consumer"])
    keys = [f"key-{i}".encode() for i in range(500)]
    before = {key: selector.select_key(key) for key in keys}
    third = ConsumerRef("consumer", 99)
    selector.add(third)
    moved_between_old = [k for k in keys if selector.select_key(k) not in (before[k], third)]
    assert moved_between_old
    assert {before[k] for k in moved_between_old} == {first, second}
    # and their stats print identical ranges (apache/pulsar#16654)
    ranges = selector.ranges()
    assert ranges[first] == ranges[second] == ranges[third]


def test_4x_minimal_mapping_changes_when_consumers_leave_and_rejoin() -> None:
    selector = make_selector("consistent-hashing", "4.0", points=100)
    consumers = join(selector, ["consumer"] * 10)
    before = selector.snapshot()
    selector.remove(consumers[0])
    selector.remove(consumers[5])
    selector.add(consumers[0])
    selector.add(consumers[5])
    from reference_model.selectors import diff_ranges

    changed = sum(e - s + 1 for (s, e), _, _ in diff_ranges(before, selector.snapshot()))
    assert changed < 65535 // 100


@pytest.mark.slow
def test_4x_removing_and_re_adding_moves_only_that_consumers_ranges() -> None:
    # testShouldNotSwapExistingConsumers: 100 consumers, 200 points
    selector = make_selector("consistent-hashing", "4.0", points=200)
    consumers = join(selector, [f"consumer{i}" for i in range(100)])
    for consumer in consumers[::5]:  # Pulsar walks all 100; every 5th keeps this unit test fast
        impacted = selector.remove(consumer)
        assert impacted is not None and set(impacted) == {consumer}
        after_removal = selector.snapshot()
        impacted = selector.add(consumer)
        assert impacted is not None
        added = selector.snapshot().ranges_by_consumer()[consumer]
        before_ranges = after_removal.ranges_by_consumer()
        for loser, lost in impacted.items():
            owned = before_ranges[loser]
            assert all(any(s <= ls and le <= e for s, e in owned) for ls, le in lost)
            assert all(any(s <= ls and le <= e for s, e in added) for ls, le in lost)
        assert merge_ranges(r for lost in impacted.values() for r in lost) == added


def test_4x_consumers_reconnecting_in_the_original_order_get_the_same_keys() -> None:
    selector = make_selector("consistent-hashing", "4.0", points=100)
    consumers = join(selector, ["consumer"] * 50)
    points = [min(p, 65535 - 1) for p in validation_points(selector)]
    before = [selector.select(p) for p in points]
    for consumer in random.Random(7).sample(consumers, len(consumers)):
        selector.remove(consumer)
    for consumer in consumers:
        selector.add(consumer)
    assert [selector.select(p) for p in points] == before


def test_4x_same_name_consumers_are_spread_evenly() -> None:
    # testConsumersGetSufficientlyAccuratelyEvenlyMapped
    selector = make_selector("consistent-hashing", "4.0", points=200)
    consumers = join(selector, ["consumer"] * 20)
    counts: dict[ConsumerRef, int] = {}
    for i in range(10000):
        chosen = selector.select_key(f"key {i}".encode())
        assert chosen is not None
        counts[chosen] = counts.get(chosen, 0) + 1
    assert set(counts) == set(consumers)
    assert all(abs(n - 500) <= 100 for n in counts.values())
    for consumer in consumers:
        selector.remove(consumer)
    assert selector.ranges() == {}


def test_name_index_is_reused_so_a_rejoining_consumer_gets_its_points_back() -> None:
    selector = make_selector("consistent-hashing", "4.0", points=10)
    a, _b = join(selector, ["x", "x"])
    assert isinstance(selector, ConsistentHashingSelector)
    points_a = {reduce_hash(make_hash(ring_key("x", i, 0)), (1, 65535)) for i in range(10)}
    points_b = {reduce_hash(make_hash(ring_key("x", i, 1)), (1, 65535)) for i in range(10)}
    assert set(selector.ring_positions()) == points_a | points_b
    selector.remove(a)
    assert set(selector.ring_positions()) == points_b
    c = ConsumerRef("x", 7)
    selector.add(c)  # takes the free index 0, so a's old points
    assert set(selector.ring_positions()) == points_a | points_b
    assert {p for p in points_a if selector.select(p) == c} == points_a - points_b


def colliding_pair(points: int = 100) -> tuple[str, str, int]:
    """Two consumer names whose 4.0 rings share a position (found by search, deterministic)."""
    seen: dict[int, str] = {}
    for i in range(1000):
        name = f"c{i}"
        for p in range(points):
            position = reduce_hash(make_hash(ring_key(name, p, 0)), (1, 65535))
            if position in seen and seen[position] != name:
                return seen[position], name, position
        for p in range(points):
            seen.setdefault(reduce_hash(make_hash(ring_key(name, p, 0)), (1, 65535)), name)
    raise AssertionError("no collision found")


def test_4x_collision_first_wins_and_the_colliding_consumer_takes_over() -> None:
    first_name, second_name, position = colliding_pair()
    selector = make_selector("consistent-hashing", "4.0", points=100)
    first, second = ConsumerRef(first_name, 1), ConsumerRef(second_name, 2)
    selector.add(first)
    impacted = selector.add(second)
    assert selector.select(position) == first
    assert impacted is not None and not impacted.contains(first, position)
    impacted = selector.remove(first)
    assert selector.select(position) == second
    assert impacted is not None and set(impacted) == {first}


class _SmallRing(NameIndexRingSelector):
    """The 3.0.7-era rules on a tiny ring, to make collisions certain."""

    def _position(self, consumer: ConsumerRef, name_index: int, point: int) -> int:
        return {"a": [10, 20], "b": [20, 30]}[consumer.name][point]


def test_name_index_era_later_add_replaces_and_removal_deletes_the_point() -> None:
    selector = _SmallRing(make_selector("consistent-hashing", "3.0.7").version, 2)
    a, b = ConsumerRef("a", 1), ConsumerRef("b", 2)
    selector.add(a)
    selector.add(b)
    assert selector.select(20) == b  # replaced
    selector.remove(b)
    assert selector.ring_positions() == [10]  # point 20 is gone, a does not get it back
    assert selector.select(20) == a  # only because it wraps to a's point 10


class _TinyListRing(CollisionListRingSelector):
    def _position(self, consumer: ConsumerRef, point: int) -> int:
        return 100


def test_collision_list_sorted_by_name_and_selected_by_hash_modulo_size() -> None:
    selector = _TinyListRing(make_selector("consistent-hashing", "3.0.0").version, 1, False)
    b, a = ConsumerRef("b", 1), ConsumerRef("a", 2)
    selector.add(b)
    selector.add(a)
    assert [selector.select(h) for h in (0, 1, 2, 3)] == [a, b, a, b]
    assert selector.ranges() == {b: [(0, 100)], a: [(0, 100)]}


def test_4x_classic_dispatcher_ring_uses_the_31_bit_range() -> None:
    selector = make_selector("consistent-hashing", "4.0", points=3, classic=True)
    assert selector.key_hash_range == (1, 2**31 - 2)
    assert not selector.tracks_impacted
    consumers = join(selector, NAMES)
    ranges = selector.ranges()
    flat = sorted(r for rs in ranges.values() for r in rs)
    assert flat[0][0] == 1 and flat[-1][1] == 2**31 - 2
    assert sum(e - s + 1 for s, e in flat) == 2**31 - 2
    for consumer, own in ranges.items():
        for s, e in own:
            assert selector.select(s) == consumer and selector.select(e) == consumer
    assert selector.add(ConsumerRef("consumer4", 9)) is None
    assert consumers[0] in selector


# -- 2.8 / 2.9: removal by name before #13991, stats keyed by name before #12212 --------------------------------------
@pytest.mark.parametrize(("version", "by_name"), [("2.8.4", True), ("2.9.2", True), ("2.9.3", False)])
def test_before_2_9_3_a_leaving_consumer_takes_its_namesakes_off_the_ring(version: str, by_name: bool) -> None:
    """apache/pulsar#10750 / #13991 (release/2.9.3 only): ``removeConsumer`` ran
    ``v.removeIf(c -> c.consumerName().equals(consumer.consumerName()))`` on each of the leaver's points, so the
    other consumers of that name stay connected but own no point: every key goes to the remaining other name."""
    selector = make_selector("consistent-hashing", version=version)
    a, b, other = join(selector, ["name", "name", "other"])
    selector.remove(a)
    owners = {selector.select(slot) for slot in range(0, 2**31 - 1, 2**31 // 4096)}
    if by_name:
        assert owners == {other}
        assert selector.ranges()[b] == []
    else:
        assert owners == {b, other}
        assert selector.ranges()[b]


@pytest.mark.parametrize(("version", "keyed_by_name"), [("2.8.1", True), ("2.8.2", False), ("2.9.0", False)])
def test_before_2_8_2_stats_ranges_are_keyed_by_name(version: str, keyed_by_name: bool) -> None:
    """apache/pulsar#12212 (release/2.8.2): ``getConsumerKeyHashRanges`` returned ranges per consumer *name*, so
    two consumers named alike each showed the ranges of both (the PR's example: the same ``keyHashRanges`` on two
    consumers of one name); a consumer of another name is unaffected."""
    for kind in ("consistent-hashing", "auto-split"):
        selector = make_selector(kind, version=version)
        a, b, other = join(selector, ["name", "name", "other"])
        own = make_selector(kind, version="2.10")
        join(own, ["name", "name", "other"])
        separate = {c.consumer_id: r for c, r in own.ranges().items()}
        ranges = selector.ranges()
        assert ranges[other] == separate[other.consumer_id]
        if keyed_by_name:
            both = sorted(separate[a.consumer_id] + separate[b.consumer_id])
            assert ranges[a] == ranges[b] == both
        else:
            assert (ranges[a], ranges[b]) == (separate[a.consumer_id], separate[b.consumer_id])
