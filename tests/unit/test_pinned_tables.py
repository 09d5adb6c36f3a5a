"""The pinned key tables of ``conformance/cases/scenarios/pinned/`` are what Pulsar's documented rules give.

Recomputed here from Murmur3 (``mmh3``) and the rules as pulsar-semantics.md §1-2 states them, with no
``reference_model`` code, so a bug in the model's selectors cannot move both the table and its check:

* consistent hashing (4.0): ring points ``name\\0index\\0i`` for ``i < points``, the index the smallest free one
  for the name; position and key slot ``(murmur3 & 0x7fffffff) % 65535 + 1``; first point wins a collision;
  a slot belongs to the first point at or after it, wrapping to the first point;
* auto-split: the first consumer owns ``[0, 65536]``; a joiner splits the first of the largest ranges
  ``(p, k]`` at ``k - ((k - p) >> 1)`` and takes the lower part; a leaver's range goes to the next higher
  one (the top one's to the next lower); key slot ``murmur3 % 65536`` (0 -> 1);
* sticky: a consumer whose ranges overlap an accepted one's is refused; a slot (as for auto-split) belongs
  to the accepted consumer whose range holds it, to nobody in a gap.

The ring rule is also checked against the golden ranges of ``ConsistentHashingStickyKeyConsumerSelectorTest``.
"""

from __future__ import annotations

import bisect
from pathlib import Path

import mmh3
import pytest

from conformance.cases._support import NO_OWNER, pinned_cases, pinned_mismatches
from conformance.scenarios.model import Close, Open, Publish
from conformance.trace.builder import TraceBuilder

CASES = {case.scenario.name: case for case in pinned_cases("pinned")}


def _hash(text: str) -> int:
    return int(mmh3.hash(text.encode("utf-8"), 0, signed=False)) & 0x7FFFFFFF


def _ring_slot(text: str) -> int:
    return _hash(text) % 65535 + 1


def _range_slot(text: str) -> int:
    slot = _hash(text) % 65536
    return 1 if slot == 0 else slot


def _ring(members: list[tuple[str, str]], points: int) -> tuple[list[int], dict[int, str]]:
    used: dict[str, set[int]] = {}
    owner: dict[int, str] = {}
    for handle, name in members:
        index = 0
        while index in used.setdefault(name, set()):
            index += 1
        used[name].add(index)
        for i in range(points):
            owner.setdefault(_ring_slot(f"{name}\0{index}\0{i}"), handle)
    return sorted(owner), owner


def _ring_owner(ring: tuple[list[int], dict[int, str]], slot: int) -> str:
    positions, owner = ring
    i = bisect.bisect_left(positions, slot)
    return owner[positions[i if i < len(positions) else 0]]


def _auto_split(changes: list[tuple[str, str]]) -> list[tuple[int, str]]:
    """``changes``: ``("open" | "close", handle)`` in order; returns ``(upper bound, owner)`` ascending."""
    bounds: list[tuple[int, str]] = []
    for op, handle in changes:
        if op == "close":
            i = next(j for j, (_b, h) in enumerate(bounds) if h == handle)
            bound = bounds[i][0]
            if bound == 65536 and len(bounds) > 1:  # the lower neighbour moves up to the top
                bounds[i] = (bound, bounds[i - 1][1])
                del bounds[i - 1]
            else:  # the next higher range absorbs it
                del bounds[i]
            continue
        if not bounds:
            bounds.append((65536, handle))
            continue
        best, best_lower, measure, lower = 0, 0, 0, 0
        for bound, _owner in bounds:
            if bound - lower > measure:
                measure, best, best_lower = bound - lower, bound, lower
            lower = bound
        bisect.insort(bounds, (best - ((best - best_lower) >> 1), handle))
    return bounds


def _sticky(opens: list[Open]) -> dict[str, tuple[tuple[int, int], ...]]:
    """The consumers a broker accepts: an open whose ranges overlap an accepted consumer's is refused."""
    accepted: dict[str, tuple[tuple[int, int], ...]] = {}
    for o in opens:
        taken = [r for rs in accepted.values() for r in rs]
        if not any(a <= d and c <= b for a, b in o.ranges for c, d in taken):
            accepted[o.consumer] = o.ranges
    return accepted


def _changes(name: str) -> list[tuple[str, str]]:
    return [(s.do, s.consumer) for s in CASES[name].scenario.steps if isinstance(s, (Open, Close))]


def _opens(name: str) -> list[Open]:
    return [s for s in CASES[name].scenario.steps if isinstance(s, Open)]


def _published_keys(name: str) -> set[str]:
    return {k for s in CASES[name].scenario.steps if isinstance(s, Publish) for k in s.keys.keys()}  # noqa: SIM118 (a KeySet)


def test_the_ring_rule_gives_pulsars_golden_ranges() -> None:
    """testGetConsumerKeyHashRanges: 3 points, consumer1..3 (pulsar-semantics.md §2.2)."""
    ring = _ring([("consumer1", "consumer1"), ("consumer2", "consumer2"), ("consumer3", "consumer3")], 3)
    expected = {
        "consumer1": [(14359, 18366), (29991, 39817), (52980, 60442)],
        "consumer2": [(1, 6668), (39818, 52979), (60443, 63679), (65184, 65535)],
        "consumer3": [(6669, 14358), (18367, 29990), (63680, 65183)],
    }
    for owner, ranges in expected.items():
        for start, end in ranges:
            assert {_ring_owner(ring, slot) for slot in (start, (start + end) // 2, end)} == {owner}


def test_the_auto_split_rule_gives_pulsars_golden_ranges() -> None:
    """HashRangeAutoSplitStickyKeyConsumerSelectorTest (range 64): c3 [0,16] c2 [17,32] c4 [33,48] c1 [49,64]."""
    joins = [("open", c) for c in ("c1", "c2", "c3", "c4")]
    assert _auto_split(joins) == [(16384, "c3"), (32768, "c2"), (49152, "c4"), (65536, "c1")]
    # removing consumer1 gives consumer4 [33,64]; removing consumer3 gives consumer2 [0,32]
    assert _auto_split([*joins, ("close", "c1")]) == [(16384, "c3"), (32768, "c2"), (65536, "c4")]
    assert _auto_split([*joins, ("close", "c3")]) == [(32768, "c2"), (49152, "c4"), (65536, "c1")]


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_pinned_key_is_published(name: str) -> None:
    assert set(CASES[name].owners) <= _published_keys(name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_pinned_owners_follow_the_documented_rule(name: str) -> None:
    case = CASES[name]
    settings = case.scenario.settings
    opens = _opens(name)
    if case.scenario.subscription.mode == "STICKY":
        ranges = _sticky(opens)

        def owner(key: str) -> str:
            slot = _range_slot(key)
            return next((h for h, rs in ranges.items() if any(a <= slot <= b for a, b in rs)), NO_OWNER)

    elif settings.selector == "auto-split":
        bounds = _auto_split(_changes(name))

        def owner(key: str) -> str:
            slot = _range_slot(key)
            return next(h for bound, h in bounds if slot <= bound)

    else:
        ring = _ring([(o.consumer, o.broker_name()) for o in opens], settings.points or 100)

        def owner(key: str) -> str:
            return _ring_owner(ring, _ring_slot(key))

    assert {key: owner(key) for key in case.owners} == dict(case.owners)


def _trace(tmp_path: Path, published: list[str], received: list[tuple[str, str]]) -> Path:
    """A well-formed trace: c1 and c2 open, ``published`` keys are stored, then each (key, consumer) receive."""
    b = TraceBuilder()
    b.open("c1")
    b.open("c2")
    ids = {key: f"1:{n}" for n, key in enumerate(published)}
    for key in published:
        b.publish(key, ids[key])
    for key, consumer in received:
        b.receive(consumer, key, ids[key])
    b.end()
    path = tmp_path / "trace.jsonl"
    b.write(path)
    return path


def test_a_key_received_by_its_pinned_owner_passes(tmp_path: Path) -> None:
    trace = _trace(tmp_path, ["a", "b"], [("a", "c1"), ("a", "c1")])
    assert pinned_mismatches(trace, {"a": "c1", "b": NO_OWNER}) == []


def test_a_key_received_elsewhere_or_in_a_gap_or_never_fails(tmp_path: Path) -> None:
    trace = _trace(tmp_path, ["a", "b", "c"], [("a", "c2"), ("b", "c1")])
    problems = pinned_mismatches(trace, {"a": "c1", "b": NO_OWNER, "c": "c3"}, "a test")
    assert len(problems) == 4
    assert "key 'a' was received by consumer c2 (E5" in problems[0] and "belongs to consumer c1" in problems[0]
    assert "key 'b' was received by consumer c1" in problems[1] and "belongs to no consumer" in problems[1]
    assert "key 'a' was published but never received by its owner, consumer c1" in problems[2]
    assert "key 'c' was published but never received by its owner, consumer c3 (a test)" in problems[3]
