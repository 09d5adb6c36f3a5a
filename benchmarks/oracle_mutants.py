"""Selector mutants written for the oracle comparison (none of them is in ``mutants.py``): a plausible selector bug
each, planted in the model by a monkeypatch, as ``mutants.py`` plants its own.  ``oracle_mutation.py`` runs the
model-vs-oracle differential test (``tests/oracles/test_selector_oracle_differential.py``) against each.
"""

from __future__ import annotations

from typing import Any

from mutants import Mutant, _wrap

__all__ = ["ORACLE_MUTANTS"]

ORACLE_MUTANTS: list[Mutant] = []


def _mutant(name: str, bug: str) -> Any:
    def register(fn: Any) -> Any:
        ORACLE_MUTANTS.append(Mutant(name, "selectors", bug, fn))
        return fn

    return register


@_mutant("name-index-never-released", "the consumer-name index is not released when a consumer leaves")
def _index_leak() -> None:
    from reference_model.selectors.consistent_hashing import NameIndexTracker

    def make(orig: Any) -> Any:
        def decrease(self: Any, consumer: Any) -> None:
            entry = self._entries.get(consumer.consumer_id)
            if entry is not None and entry[2] == 1:
                del self._entries[consumer.consumer_id]  # forgets the consumer, keeps its index in use
                return
            orig(self, consumer)

        return decrease

    _wrap(NameIndexTracker, "decrease", make)


@_mutant("collision-takeover-lifo", "4.x: when the selected consumer of a point leaves, the last colliding takes over")
def _lifo() -> None:
    from reference_model.selectors.consistent_hashing import ConsistentHashingSelector

    def make(orig: Any) -> Any:
        def remove(self: Any, consumer: Any) -> None:
            for at_point in self._entries.values():
                if at_point[0] == consumer and len(at_point) > 2:
                    at_point[1:] = at_point[:0:-1]
            orig(self, consumer)

        return remove

    _wrap(ConsistentHashingSelector, "_remove", make)


@_mutant("collision-list-arrival-order", "before 3.0.7: colliding consumers are kept in arrival order, not by name")
def _unsorted() -> None:
    from reference_model.selectors.consistent_hashing import CollisionListRingSelector

    def make(orig: Any) -> Any:
        def add(self: Any, consumer: Any, ranges: Any) -> None:
            before = {p: list(v) for p, v in self._at.items()}
            orig(self, consumer, ranges)
            for p, v in self._at.items():
                if p in before and consumer in v and consumer not in before[p]:
                    self._at[p] = [*before[p], consumer]

        return add

    _wrap(CollisionListRingSelector, "_add", make)


@_mutant("ring-wraps-to-last-point", "4.x: a slot past the last ring point goes to the last point's consumer")
def _wrap_last() -> None:
    from reference_model.selectors.consistent_hashing import ConsistentHashingSelector

    def make(orig: Any) -> Any:
        def build(self: Any) -> list[Any]:
            table = list(orig(self))
            if table and self._ring:
                last = self._entries[self._ring[-1]][0]
                table[self._ring[-1] + 1 :] = [last] * (len(table) - self._ring[-1] - 1)
            return table

        return build

    _wrap(ConsistentHashingSelector, "_build_table", make)


@_mutant(
    "put-era-replaced-keeps-index", "3.0.7+: a consumer replaced at a ring point keeps that point's index reference"
)
def _put_keeps_ref() -> None:
    from reference_model.selectors.consistent_hashing import NameIndexRingSelector, NameIndexTracker

    def make(orig: Any) -> Any:
        def add(self: Any, consumer: Any, ranges: Any) -> None:
            real = NameIndexTracker.decrease  # inside add, decrease only releases a replaced consumer's point
            NameIndexTracker.decrease = lambda tracker, c: None  # type: ignore[method-assign]
            try:
                orig(self, consumer, ranges)
            finally:
                NameIndexTracker.decrease = real  # type: ignore[method-assign]

        return add

    _wrap(NameIndexRingSelector, "_add", make)


@_mutant(
    "auto-split-top-leaves-no-heir", "auto-split: when the top range's owner leaves, nobody moves up to the top bound"
)
def _no_heir() -> None:
    from reference_model.selectors.auto_split import AutoSplitSelector

    def make(orig: Any) -> Any:
        def remove(self: Any, consumer: Any) -> None:
            bound = self._bound_of.pop(consumer.consumer_id)
            self._bounds.remove(bound)
            del self._owner[bound]

        return remove

    _wrap(AutoSplitSelector, "_remove", make)


@_mutant(
    "sticky-conflict-only-floor",
    "STICKY (fixed): a new range is checked only against the range starting at or before it, so one that starts"
    " before an existing range and covers it is accepted",
)
def _only_floor() -> None:
    from bisect import bisect_right

    from reference_model.selectors.exclusive import StickyRangesSelector

    def make(orig: Any) -> Any:
        def conflict(self: Any, new: Any) -> Any:
            if not self._gap_fixed:
                return orig(self, new)
            j = bisect_right(self._keys, new[0]) - 1
            if j >= 0:
                start, end, owner = self._at[self._keys[j]]
                if max(new[0], start) <= min(new[1], end):
                    return owner, (start, end)
            return None

        return conflict

    _wrap(StickyRangesSelector, "_conflict", make)


@_mutant(
    "sticky-adjacent-conflict", "STICKY refuses a range adjacent to a connected consumer's ([0,99] then [100,399])"
)
def _adjacent() -> None:
    from reference_model.selectors import exclusive

    exclusive._overlap = lambda a, b: max(a[0], b[0]) <= min(a[1], b[1]) + 1


@_mutant("ring-remove-by-name-regressed", "2.9.3+: a leaving consumer takes every consumer of its name off its points")
def _by_name() -> None:
    from reference_model.selectors.consistent_hashing import CollisionListRingSelector

    def make(orig: Any) -> Any:
        def init(self: Any, *args: Any) -> None:
            orig(self, *args)
            self._remove_by_name = True

        return init

    _wrap(CollisionListRingSelector, "__init__", make)


@_mutant(
    "put-era-wrap-range-missing", "3.0.7+ stats: the wrap-around range is not printed for the first point's consumer"
)
def _no_wrap() -> None:
    from reference_model.selectors.consistent_hashing import NameIndexRingSelector

    def make(orig: Any) -> Any:
        def reported(self: Any) -> Any:
            result = orig(self)
            if self._ring:
                first = self._owner[self._ring[0]]
                if result.get(first) and result[first][-1][1] == 2**31 - 2 and result[first][-1][0] > self._ring[-1]:
                    result[first] = result[first][:-1]
            return result

        return reported

    _wrap(NameIndexRingSelector, "_reported_ranges", make)
