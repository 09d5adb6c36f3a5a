"""``HashRangeAutoSplitStickyKeyConsumerSelector`` (the same rules in every release; only the slot changed)."""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Sequence

from selector_oracle.assignments import Assignment, HashRange
from selector_oracle.base import OracleSelector
from selector_oracle.eras import Era
from selector_oracle.member import Member, Refused


class AutoSplit(OracleSelector):
    def __init__(self, era: Era, range_size: int, track_removed: bool) -> None:
        super().__init__(era, (0, range_size - 1) if era.pip379 else None, track_removed)
        self.range_size = range_size
        self.keys: list[int] = []  # rangeMap's keys: upper bounds
        self.owner: dict[int, Member] = {}
        self.key_of: dict[Member, int] = {}  # consumerRange

    def _lower_key(self, key: int) -> int:
        i = bisect_left(self.keys, key)
        return self.keys[i - 1] if i > 0 else 0

    def _add(self, member: Member, ranges: Sequence[tuple[int, int]] | None) -> None:
        assert ranges is None
        if not self.keys:
            key = self.range_size
        else:
            # findBiggestRange: the first key with the strictly largest key - lowerKey (lowerKey 0 for the first).
            slots, busiest = 0, self.range_size
            for k in self.keys:
                if k - self._lower_key(k) > slots:
                    slots, busiest = k - self._lower_key(k), k
            # splitRange
            lower = self._lower_key(busiest)
            if busiest - lower <= 1:
                raise Refused("no-range-left", f"assigned consumers {len(self.keys)}")
            key = busiest - ((busiest - lower) >> 1)
        insort(self.keys, key)
        self.owner[key] = member
        self.key_of[member] = key

    def _remove(self, member: Member) -> None:
        key = self.key_of.pop(member, None)
        if key is None:
            return
        if key == self.range_size and len(self.keys) > 1:
            lower = self._lower_key(key)
            heir = self.owner.pop(lower)
            self.keys.remove(lower)
            self.owner[key] = heir
            self.key_of[heir] = key
        else:
            self.keys.remove(key)
            del self.owner[key]

    def select(self, slot: int) -> Member | None:
        if not self.keys:
            return None
        if not self.era.pip379:
            slot %= self.range_size
        return self.owner[self.keys[bisect_left(self.keys, slot)]]

    def snapshot(self) -> list[Assignment]:
        out: list[Assignment] = []
        start = 0
        for k in self.keys:
            out.append((start, k, self.owner[k]))
            start = k + 1
        return out

    def _stats(self) -> dict[Member, list[HashRange]]:
        return {m: [(s, e)] for s, e, m in self.snapshot()}

    def boundaries(self) -> list[int]:
        return list(self.keys)
