"""``HashRangeExclusiveStickyKeyConsumerSelector``: STICKY mode, in its two shapes.

Before the gap fix (apache/pulsar#24730) the selector keeps the start and the end *point* of every range
(``rangeMap.put(start, c); rangeMap.put(end, c)``) and selects a slot when its floor and ceiling points belong to
one consumer; it checks conflicts with the ceiling point of a new range's start, the floor point of its end, and the
ranges of the consumer owning both neighbours.  After it, the map is keyed by range start and holds the range;
``select`` takes the floor entry and checks containment; conflicts are the floor and the ceiling entry of the new
range's start; the consumer's own ranges are checked against each other (sorted by start).

The broker never sees a consumer's own overlapping ranges before the fix: the Java and C++ clients refuse them
(``KeySharedPolicySticky.validate``), so the oracle refuses them as that client check (kind ``own-overlap``).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Sequence

from selector_oracle.assignments import Assignment, HashRange
from selector_oracle.base import OracleSelector
from selector_oracle.eras import Era
from selector_oracle.member import Member, Refused


def overlap(a: HashRange, b: HashRange) -> bool:
    return max(a[0], b[0]) <= min(a[1], b[1])


class Sticky(OracleSelector):
    def __init__(self, era: Era, range_size: int) -> None:
        super().__init__(era, (0, range_size - 1) if era.pip379 else None, False)
        self.range_size = range_size
        self.keys: list[int] = []
        self.value: dict[int, tuple[HashRange, Member]] = {}  # fixed: start -> (range, c); before: point -> (_, c)
        self.given: dict[Member, list[HashRange]] = {}
        self.culprit: Member | None = None  #: the consumer the last ``conflict`` refusal names

    # -- the conflict checks ------------------------------------------------------------------------------------

    def _floor(self, slot: int) -> int | None:
        i = bisect_right(self.keys, slot)
        return self.keys[i - 1] if i > 0 else None

    def _ceiling(self, slot: int) -> int | None:
        i = bisect_left(self.keys, slot)
        return self.keys[i] if i < len(self.keys) else None

    def conflicting(self, new: HashRange) -> Member | None:
        """``findConflictingConsumer`` for one range."""
        if self.era.sticky_gap_fixed:
            for key in (self._floor(new[0]), self._ceiling(new[0])):
                if key is not None and overlap(new, self.value[key][0]):
                    return self.value[key][1]
            return None
        ceiling, floor = self._ceiling(new[0]), self._floor(new[1])
        if floor is not None and floor >= new[0]:
            return self.value[floor][1]
        if ceiling is not None and ceiling <= new[1]:
            return self.value[ceiling][1]
        if ceiling is not None and floor is not None and self.value[ceiling][1] == self.value[floor][1]:
            owner = self.value[ceiling][1]
            if any(overlap(new, theirs) for theirs in self.given[owner]):
                return owner
        return None

    def reasons(self, ranges: Sequence[tuple[int, int]] | None) -> list[str]:
        """Why the consumer is refused, in the order this release checks (empty: accepted).

        Fixed selector: inversions and the consumer's own overlaps in start order, then conflicts.  Before the
        fix the broker checks each range for inversion and then conflict in turn (2.x), or every range for
        inversion first and then each for conflict (3.x, 4.0.0 - 4.0.6); a consumer's own overlapping ranges,
        which that broker never checks, are refused after everything the broker checks (the client's check).
        """
        if ranges is None:
            return ["no-meta"]
        if not ranges:
            return ["empty"]
        ordered = sorted(ranges, key=lambda r: r[0])
        if self.era.sticky_checks == "sorted":
            for i, (s, e) in enumerate(ordered):
                if s > e:
                    return ["inverted"]
                if i + 1 < len(ordered) and overlap((s, e), ordered[i + 1]):
                    return ["own-overlap"]
        elif self.era.sticky_checks == "inversions-first" and any(s > e for s, e in ranges):
            return ["inverted"]
        for r in ranges:
            if r[0] > r[1]:
                return ["inverted"]
            self.culprit = self.conflicting(r)
            if self.culprit is not None:
                return ["conflict"]
        if any(overlap(a, b) for i, a in enumerate(ordered) for b in ordered[i + 1 :]):
            return ["own-overlap"]
        return []

    # -- membership ---------------------------------------------------------------------------------------------

    def _add(self, member: Member, ranges: Sequence[tuple[int, int]] | None) -> None:
        why = self.reasons(ranges)
        if why:
            raise Refused(why[0], f"{member} {ranges}", self.culprit if why[0] == "conflict" else None)
        assert ranges is not None
        self.given[member] = [(int(s), int(e)) for s, e in ranges]
        for s, e in ranges:
            points = (s,) if self.era.sticky_gap_fixed else (s, e)
            for p in points:
                if p not in self.value:
                    insort(self.keys, p)
                self.value[p] = ((s, e), member)

    def _remove(self, member: Member) -> None:
        del self.given[member]
        self.keys = [k for k in self.keys if self.value[k][1] != member]
        self.value = {k: v for k, v in self.value.items() if v[1] != member}

    def select(self, slot: int) -> Member | None:
        if not self.keys:
            return None
        if not self.era.pip379:
            slot %= self.range_size
        floor = self._floor(slot)
        if self.era.sticky_gap_fixed:
            if floor is None:
                return None
            (s, e), member = self.value[floor]
            return member if s <= slot <= e else None
        ceiling = self._ceiling(slot)
        if floor is None or ceiling is None:
            return None
        return self.value[floor][1] if self.value[floor][1] == self.value[ceiling][1] else None

    def snapshot(self) -> list[Assignment]:
        if self.era.sticky_gap_fixed:
            return [(r[0], r[1], m) for r, m in (self.value[k] for k in self.keys)]
        out: list[Assignment] = []
        pending: int | None = None
        for k in self.keys:
            if pending is None:
                pending = k
                continue
            if self.value[pending][1] == self.value[k][1]:
                out.append((pending, k, self.value[k][1]))
            pending = None
        return out

    def _stats(self) -> dict[Member, list[HashRange]]:
        grouped: dict[Member, list[HashRange]] = {}
        for s, e, m in self.snapshot():
            grouped.setdefault(m, []).append((s, e))
        return grouped

    def boundaries(self) -> list[int]:
        return [x for r in self.given.values() for s, e in r for x in (s, e)]
