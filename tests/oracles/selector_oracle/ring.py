"""``ConsistentHashingStickyKeyConsumerSelector`` as each era's source reads (see :mod:`selector_oracle.eras`)."""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Sequence

from selector_oracle.assignments import Assignment, HashRange
from selector_oracle.base import OracleSelector
from selector_oracle.eras import Era
from selector_oracle.hashing import INT_MAX, java_bytes, java_hash, java_int, slot_for
from selector_oracle.member import Member


class NameIndexes:
    """``ConsumerNameIndexTracker``: the smallest index no tracked consumer of the name holds, reference-counted."""

    def __init__(self) -> None:
        self.used: dict[str, set[int]] = {}
        self.entries: dict[Member, list[int]] = {}  # member -> [index, references]

    def increase(self, member: Member) -> int:
        if member not in self.entries:
            used = self.used.setdefault(member.name, set())
            index = next(i for i in range(len(used) + 1) if i not in used)
            used.add(index)
            self.entries[member] = [index, 0]
        self.entries[member][1] += 1
        return self.entries[member][0]

    def decrease(self, member: Member) -> None:
        entry = self.entries[member]
        entry[1] -= 1
        if entry[1] == 0:
            self.used[member.name].discard(entry[0])
            if not self.used[member.name]:
                del self.used[member.name]
            del self.entries[member]

    def index(self, member: Member) -> int:
        return self.entries[member][0] if member in self.entries else -1


class Ring(OracleSelector):
    def __init__(self, era: Era, points: int, key_range: HashRange | None, track_removed: bool) -> None:
        super().__init__(era, key_range, track_removed)
        self.points = points
        self.positions: list[int] = []  # the TreeMap's keys
        self.at: dict[int, list[Member]] = {}  # list era: the list; put era: [owner]; 4.x: [selected, *colliding]
        self.names = NameIndexes()

    def position(self, member: Member, i: int, index: int = 0) -> int:
        key = self.era.ring_key
        if key == "plain":
            text = f"{member.name}{i}"
        elif key == "nul":
            text = f"{member.name}\0{i}"
        else:
            text = f"{member.name}\0{index}\0{i}"
        if self.key_range is None:
            return java_hash(java_bytes(text))
        return slot_for(java_bytes(text), *self.key_range)

    def _new_point(self, position: int, member: Member) -> None:
        self.at[position] = [member]
        insort(self.positions, position)

    def _drop_point(self, position: int) -> None:
        del self.at[position]
        del self.positions[bisect_left(self.positions, position)]

    def _add(self, member: Member, ranges: Sequence[tuple[int, int]] | None) -> None:
        assert ranges is None
        ring = self.era.ring
        for i in range(self.points):
            if ring == "list":
                p = self.position(member, i)
                if p not in self.at:
                    self._new_point(p, member)
                elif member not in self.at[p]:
                    self.at[p].append(member)
                    self.at[p].sort(key=lambda m: m.name)  # List.sort is stable
                continue
            p = self.position(member, i, self.names.increase(member))
            if p not in self.at:
                self._new_point(p, member)
            elif ring == "put":
                replaced = self.at[p][0]
                self.at[p] = [member]
                self.names.decrease(replaced)
            else:
                self.at[p].append(member)

    def _remove(self, member: Member) -> None:
        ring = self.era.ring
        if ring == "list":
            for i in range(self.points):
                p = self.position(member, i)
                if p in self.at:
                    if self.era.remove_by_name:
                        self.at[p] = [m for m in self.at[p] if m.name != member.name]
                    else:
                        self.at[p] = [m for m in self.at[p] if m != member]
                    if not self.at[p]:
                        self._drop_point(p)
            return
        index = self.names.index(member)
        if index < 0:
            return
        for i in range(self.points):
            p = self.position(member, i, index)
            if ring == "put":
                if p in self.at and self.at[p][0] == member:
                    self._drop_point(p)
                    self.names.decrease(member)
                continue
            entry = self.at[p]
            if entry[0] == member:
                entry.pop(0)  # the first colliding consumer, if any, is selected
            else:
                entry[1:] = [m for m in entry[1:] if m != member]
            if not entry:
                self._drop_point(p)
            self.names.decrease(member)

    def _point_for(self, slot: int) -> int:
        i = bisect_left(self.positions, slot)
        return self.positions[i] if i < len(self.positions) else self.positions[0]

    def select(self, slot: int) -> Member | None:
        if not self.positions:
            return None
        entry = self.at[self._point_for(slot)]
        if self.era.ring == "list":
            return entry[slot % len(entry)]
        return entry[0]

    def _stats(self) -> dict[Member, list[HashRange]]:
        result: dict[Member, list[HashRange]] = {}
        start = 0
        last = 0
        for p in self.positions:
            owners = self.at[p] if self.era.ring == "list" else self.at[p][:1]
            for m in owners:
                result.setdefault(m, []).append((start, p))
            last = p
            start = java_int(p + 1)
        if self.era.ring == "put" and self.positions and last != INT_MAX - 1:
            result[self.at[self.positions[0]][0]].append((java_int(last + 1), INT_MAX - 1))
        return result

    def snapshot(self) -> list[Assignment]:
        assert self.key_range is not None
        if not self.positions:
            return []
        first_slot, last_slot = self.key_range
        out: list[Assignment] = []
        start = first_slot
        last = -1
        previous: Member | None = None
        for p in self.positions:
            m = self.at[p][0]
            if m == previous:
                begin = out.pop()[0]
                out.append((begin, p, m))
            else:
                out.append((start, p, m))
            last = p
            start = p + 1
            previous = m
        first = self.at[self.positions[0]][0]
        if last != last_slot:
            if first == previous and out[-1][1] == last:
                begin = out.pop()[0]
                out.append((begin, last_slot, first))
            else:
                out.append((last + 1, last_slot, first))
        return out

    def boundaries(self) -> list[int]:
        return list(self.positions)
