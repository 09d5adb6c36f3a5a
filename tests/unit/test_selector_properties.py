"""Properties of every selector over arbitrary membership sequences (Hypothesis)."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reference_model.errors import ConsumerAssignError
from reference_model.selectors import ConsumerRef, Selector, make_selector, merge_ranges

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NAMES = st.sampled_from(["a", "b", "c", "consumer1", "consumer11", ""])
# An op: ("add", name) or ("remove", which member, modulo their number)
OPS = st.lists(
    st.one_of(st.tuples(st.just("add"), NAMES), st.tuples(st.just("remove"), st.integers(0, 50))),
    min_size=1,
    max_size=14,
)


def apply(selector: Selector, ops: Sequence[tuple[str, object]], first_id: int = 0) -> None:
    next_id = first_id
    for op, arg in ops:
        if op == "add":
            next_id += 1
            with contextlib.suppress(ConsumerAssignError):
                selector.add(ConsumerRef(str(arg), next_id))
        elif len(selector):
            members = selector.consumers()
            selector.remove(members[int(str(arg)) % len(members)])


def table_from_ranges(ranges: dict[ConsumerRef, list[tuple[int, int]]], size: int) -> list[ConsumerRef | None]:
    """The slot -> consumer table the reported ranges describe; asserts they do not overlap."""
    table: list[ConsumerRef | None] = [None] * size
    owned = 0
    for consumer, own in ranges.items():
        for start, end in own:
            assert table[start : end + 1] == [None] * (end + 1 - start), f"{consumer} overlaps at [{start}, {end}]"
            table[start : end + 1] = [consumer] * (end + 1 - start)
            owned += end + 1 - start
    return table


@SETTINGS
@given(ops=OPS, points=st.integers(1, 30), version=st.sampled_from(["4.0", "4.0.0", "4.2"]))
def test_4x_consistent_hashing_ranges_describe_select_exactly(ops, points, version) -> None:  # type: ignore[no-untyped-def]
    selector = make_selector("consistent-hashing", version, points)
    apply(selector, ops)
    ranges = selector.ranges()
    table = table_from_ranges(ranges, 65536)
    selected = [selector.select(slot) for slot in range(65536)]
    assert selected[1:] == table[1:]
    if len(selector):
        # the whole range [1, 65535] is covered exactly once, and slot 0 wraps to the first ring point
        assert None not in table[1:]
        assert selected[0] == selected[1]
    else:
        assert set(selected) == {None}
    assert merge_ranges(r for own in ranges.values() for r in own) == ([(1, 65535)] if len(selector) else [])


@SETTINGS
@given(ops=OPS, version=st.sampled_from(["2.10", "3.0.6", "3.3", "4.0", "4.2"]), size=st.sampled_from([64, 65536]))
def test_auto_split_ranges_describe_select_exactly(ops, version, size) -> None:  # type: ignore[no-untyped-def]
    selector = make_selector("auto-split", version, range_size=size)
    apply(selector, ops)
    ranges = selector.ranges()
    table = table_from_ranges(ranges, size + 1)
    assert [selector.select(slot) for slot in range(size)] == table[:size]
    if len(selector):
        assert None not in table  # [0, size] covered: the top range ends at the range size itself
        assert all(len(own) == 1 for own in ranges.values())


@SETTINGS
@given(ops=OPS, points=st.integers(1, 20), version=st.sampled_from(["3.0.7", "3.3.2", "3.3"]))
def test_name_index_era_ranges_agree_with_select_except_the_documented_slots(ops, points, version) -> None:  # type: ignore[no-untyped-def]
    selector = make_selector("consistent-hashing", version, points)
    apply(selector, ops)
    ranges = selector.ranges()
    owner_of: dict[tuple[int, int], ConsumerRef] = {r: c for c, own in ranges.items() for r in own}
    flat = sorted(owner_of)
    assert all(a[1] < b[0] for a, b in itertools.pairwise(flat))  # no overlaps
    for (start, end), consumer in owner_of.items():
        for slot in {start, end, (start + end) // 2}:
            assert selector.select(slot) == consumer
    if flat:
        ring = selector.ring_positions()  # type: ignore[attr-defined]
        unprinted = {ring[-1] + 1, 2**31 - 1} if ring[-1] < 2**31 - 2 else set()
        gaps = {a[1] + 1 for a, b in itertools.pairwise(flat) if b[0] != a[1] + 1}
        assert flat[0][0] == 0 and gaps <= unprinted


@SETTINGS
@given(ops=OPS, points=st.integers(1, 20), version=st.sampled_from(["2.10", "3.0.2", "3.0.6", "3.3.1"]))
def test_collision_list_era_select_is_among_the_consumers_printed_for_the_slot(ops, points, version) -> None:  # type: ignore[no-untyped-def]
    selector = make_selector("consistent-hashing", version, points)
    apply(selector, ops)
    ranges = selector.ranges()
    printed = [(s, e, c) for c, own in ranges.items() for s, e in own]
    for start, end, _ in printed:
        for slot in {start, end}:
            holders = {c for s, e, c in printed if s <= slot <= e}
            assert selector.select(slot) in holders


@st.composite
def sticky_assignments(draw):  # type: ignore[no-untyped-def]
    """Up to 5 consumers with disjoint ranges of a 512-slot space (some slots left uncovered)."""
    cuts = sorted(draw(st.sets(st.integers(0, 511), min_size=2, max_size=24)))
    pieces = [(cuts[i], cuts[i + 1] - 1) for i in range(len(cuts) - 1)]
    owners = draw(st.lists(st.integers(-1, 4), min_size=len(pieces), max_size=len(pieces)))
    by_owner: dict[int, list[tuple[int, int]]] = {}
    for piece, owner in zip(pieces, owners, strict=True):
        if owner >= 0:
            by_owner.setdefault(owner, []).append(piece)
    order = draw(st.permutations(sorted(by_owner)))
    return [(ConsumerRef(f"s{o}", o + 1), by_owner[o]) for o in order]


@SETTINGS
@given(assignment=sticky_assignments(), version=st.sampled_from(["3.0.14", "3.3", "4.0", "4.2"]))
def test_fixed_sticky_selects_exactly_the_covering_consumer(assignment, version) -> None:  # type: ignore[no-untyped-def]
    selector = make_selector("sticky", version, range_size=512)
    for consumer, own in assignment:
        selector.add(consumer, own)
    table = table_from_ranges(selector.ranges(), 512)
    assert [selector.select(slot) for slot in range(512)] == table
    given_table = table_from_ranges(dict(assignment), 512)
    assert table == given_table


@SETTINGS
@given(assignment=sticky_assignments(), version=st.sampled_from(["3.0.13", "4.0.6"]))
def test_gap_bug_sticky_follows_the_floor_and_ceiling_rule(assignment, version) -> None:  # type: ignore[no-untyped-def]
    selector = make_selector("sticky", version, range_size=512)
    points: dict[int, ConsumerRef] = {}
    for consumer, own in assignment:
        selector.add(consumer, own)
        for start, end in own:
            points[start] = points[end] = consumer
    for slot in range(512):
        floor = max((p for p in points if p <= slot), default=None)
        ceiling = min((p for p in points if p >= slot), default=None)
        expected = None
        if floor is not None and ceiling is not None and points[floor] == points[ceiling]:
            expected = points[floor]
        assert selector.select(slot) == expected


@SETTINGS
@given(ops=OPS, points=st.integers(5, 40), pick=st.integers(0, 50))
def test_4x_removing_and_re_adding_a_consumer_moves_only_its_own_ranges(ops, points, pick) -> None:  # type: ignore[no-untyped-def]
    selector = make_selector("consistent-hashing", "4.0", points)
    apply(selector, ops)
    if len(selector) < 2:
        return
    consumer = selector.consumers()[pick % len(selector)]
    before = [selector.select(slot) for slot in range(1, 65536)]
    impacted = selector.remove(consumer)
    assert impacted is not None and set(impacted) == {consumer}
    middle = [selector.select(slot) for slot in range(1, 65536)]
    assert all(m == b for m, b in zip(middle, before, strict=True) if b != consumer)  # nobody else moved
    impacted = selector.add(consumer)
    assert impacted is not None
    after = [selector.select(slot) for slot in range(1, 65536)]
    assert all(a == m for a, m in zip(after, middle, strict=True) if a != consumer)  # only the newcomer gained
    # what the others lost is exactly what the re-added consumer now owns
    assert merge_ranges(r for lost in impacted.values() for r in lost) == selector.ranges()[consumer]


@pytest.mark.slow
@settings(SETTINGS, max_examples=25)
@given(ops=OPS, kind=st.sampled_from(["consistent-hashing", "auto-split"]), points=st.integers(1, 20))
def test_4x_impacted_ranges_are_exactly_the_slots_existing_consumers_lost(ops, kind, points) -> None:  # type: ignore[no-untyped-def]
    selector = make_selector(kind, "4.0", points)
    slots = range(1, 65536) if kind == "consistent-hashing" else range(0, 65537)
    next_id = 100
    for op, arg in ops:
        before = [selector.select(slot) for slot in slots]
        if op == "add":
            next_id += 1
            changed: ConsumerRef = ConsumerRef(str(arg), next_id)
            try:
                impacted = selector.add(changed)
            except ConsumerAssignError:
                continue
        elif len(selector):
            members = selector.consumers()
            changed = members[int(str(arg)) % len(members)]
            impacted = selector.remove(changed)
        else:
            continue
        assert impacted is not None
        after = [selector.select(slot) for slot in slots]
        lost: dict[ConsumerRef, list[tuple[int, int]]] = {}
        for slot, old, new in zip(slots, before, after, strict=True):
            if old is not None and old is not new:
                runs = lost.setdefault(old, [])
                if runs and runs[-1][1] == slot - 1:
                    runs[-1] = (runs[-1][0], slot)
                else:
                    runs.append((slot, slot))
        assert dict(impacted) == {c: tuple(r) for c, r in lost.items()}


@SETTINGS
@given(ops=OPS, more=OPS, kind=st.sampled_from(["consistent-hashing", "auto-split"]))
def test_copy_is_independent(ops, more, kind) -> None:  # type: ignore[no-untyped-def]
    selector = make_selector(kind, "4.0", 10)
    apply(selector, ops)
    frozen = selector.ranges()
    clone = selector.copy()
    apply(clone, more, first_id=1000)
    assert selector.ranges() == frozen
    replay = make_selector(kind, "4.0", 10)
    apply(replay, ops)
    apply(replay, more, first_id=1000)
    assert clone.ranges() == replay.ranges()
