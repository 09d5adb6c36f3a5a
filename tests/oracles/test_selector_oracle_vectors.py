"""The oracle (``selector_oracle``) against Apache Pulsar's own unit-test values, at every release they were read at.

The same vectors pin the model (``tests/unit/test_selector_pulsar_vectors.py``); here they pin the second
implementation, so that where the two disagree in the differential test, Pulsar's values say which one is wrong.
"""

from __future__ import annotations

import pytest
from pulsar_vectors import CH_KEY_HASH_RANGES, STICKY_GAPS
from selector_oracle import Member, Refused, era_of, oracle_selector


@pytest.mark.parametrize(("version", "vector"), [(v, vec) for vec in CH_KEY_HASH_RANGES for v in vec.read_at], ids=str)
def test_consistent_hashing_key_hash_ranges(version: str, vector: object) -> None:
    sel = oracle_selector("consistent-hashing", version, points=vector.points)  # type: ignore[attr-defined]
    members = [Member(name, i + 1) for i, name in enumerate(vector.names)]  # type: ignore[attr-defined]
    for m in members:
        sel.add(m)
    got = {m.name: ranges for m, ranges in sel.stats_ranges().items()}
    assert got == vector.expected  # type: ignore[attr-defined]


@pytest.mark.parametrize(("version", "vector"), [(v, vec) for vec in STICKY_GAPS for v in vec.read_at], ids=str)
def test_sticky_gaps(version: str, vector: object) -> None:
    sel = oracle_selector("sticky", version)
    c = Member("consumer", 1)
    sel.add(c, list(vector.ranges))  # type: ignore[attr-defined]
    assert {slot: sel.select(slot) == c for slot in vector.expected} == vector.expected  # type: ignore[attr-defined]


@pytest.mark.parametrize("version", ["2.8.4", "3.0.13", "4.0.6"])
def test_sticky_gap_selected_before_the_fix(version: str) -> None:
    """The PR description of apache/pulsar#24730: before it, slot 15000 went to the consumer of the ranges around."""
    sel = oracle_selector("sticky", version)
    c = Member("consumer", 1)
    sel.add(c, [(0, 9999), (20000, 29999), (40000, 49999)])
    assert sel.select(15000) == c
    assert not era_of(version).sticky_gap_fixed


@pytest.mark.parametrize("version", ["2.10.6", "3.0.17", "4.0.14"])
def test_auto_split_golden_vector(version: str) -> None:
    """``HashRangeAutoSplitStickyKeyConsumerSelectorTest.testGetConsumerKeyHashRanges`` (range size 64)."""
    sel = oracle_selector("auto-split", version, range_size=64)
    c = [Member(f"consumer{i}", i) for i in range(1, 5)]
    for m in c:
        sel.add(m)
    assert sel.stats_ranges() == {c[2]: [(0, 16)], c[1]: [(17, 32)], c[3]: [(33, 48)], c[0]: [(49, 64)]}
    sel.remove(c[0])
    assert sel.stats_ranges()[c[3]] == [(33, 64)]
    sel.remove(c[2])
    assert sel.stats_ranges()[c[1]] == [(0, 32)]


def test_auto_split_refuses_when_no_range_is_left() -> None:
    """``testSplitExhausted`` shape: range size 2 holds two consumers; the third is refused."""
    sel = oracle_selector("auto-split", "4.0.14", range_size=2)
    sel.add(Member("a", 1))
    sel.add(Member("b", 2))
    with pytest.raises(Refused) as refused:
        sel.add(Member("c", 3))
    assert refused.value.kind == "no-range-left"


def test_sticky_hash_range_conflict() -> None:
    """``testHashRangeConflict``: interleaving and adjacency are accepted, an overlap is refused."""
    sel = oracle_selector("sticky", "4.0.14")
    sel.add(Member("c1", 1), [(0, 99), (400, 65535)])
    sel.add(Member("c2", 2), [(100, 399)])
    with pytest.raises(Refused) as refused:
        sel.add(Member("c3", 3), [(50, 150)])
    assert refused.value.kind == "conflict"


@pytest.mark.parametrize("version", ["3.0.13", "3.0.14", "4.0.6", "4.0.7"])
def test_sticky_range_starting_before_an_existing_one_conflicts(version: str) -> None:
    sel = oracle_selector("sticky", version)
    sel.add(Member("c1", 1), [(100, 200)])
    for wide in ([(0, 300)], [(0, 100)], [(150, 160)], [(200, 65535)]):
        with pytest.raises(Refused):
            sel.add(Member("c2", 2), wide)
    sel.add(Member("c2", 2), [(0, 99), (201, 300)])


def _inside(ranges: list[tuple[int, int]], within: list[tuple[int, int]]) -> bool:
    return all(any(a <= s and e <= b for a, b in within) for s, e in ranges)


def test_should_not_swap_existing_consumers() -> None:
    """``testShouldNotSwapExistingConsumers`` (4.x, 200 points; 10 of its 100 consumers here): removing a consumer
    takes ranges from it alone; adding it back takes only ranges that move to it."""
    sel = oracle_selector("consistent-hashing", "4.0.14", points=200)
    members = [Member(f"consumer{i}", i) for i in range(10)]
    for m in members:
        sel.add(m)
    for m in members:
        before = sel.stats_ranges()
        sel.remove(m)
        assert sel.last_removed is not None and set(sel.last_removed) == {m}
        assert sel.last_removed[m] == before[m]
        sel.add(m)
        after = sel.stats_ranges()
        assert sel.last_removed is not None
        for lost in sel.last_removed.values():
            assert _inside(lost, after[m])
