"""What every oracle selector offers (the model's selectors answer the same questions through their own API)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from selector_oracle.assignments import Assignment, HashRange, ranges_by_consumer, removed_ranges
from selector_oracle.eras import Era
from selector_oracle.hashing import java_hash, slot_for
from selector_oracle.member import Member


class OracleSelector(ABC):
    """A selector of one release.  ``key_range``: the 4.x key hash range (``None`` before 4.0: full hashes)."""

    def __init__(self, era: Era, key_range: HashRange | None, track_removed: bool) -> None:
        self.era = era
        self.key_range = key_range
        self.track_removed = track_removed
        self.members: list[Member] = []
        self._last: list[Assignment] = []
        #: After each add or remove of a tracking (4.x PIP-379, non-sticky) selector: what each member lost.
        self.last_removed: dict[Member, list[HashRange]] | None = None

    def slot_of(self, key: bytes) -> int:
        """What the release's dispatcher passes to ``select`` for sticky key ``key``."""
        if self.key_range is None:
            return java_hash(key)
        return slot_for(key, *self.key_range)

    def add(self, member: Member, ranges: Sequence[tuple[int, int]] | None = None) -> None:
        self._add(member, ranges)
        self.members.append(member)
        self._changed()

    def remove(self, member: Member) -> None:
        if member in self.members:
            self.members.remove(member)
            self._remove(member)
        self._changed()

    def _changed(self) -> None:
        if self.track_removed:
            after = self.snapshot()
            self.last_removed = removed_ranges(self._last, after)
            self._last = after

    def stats_ranges(self) -> dict[Member, list[HashRange]]:
        """Each member's ranges as the release's topic stats print them (members without ranges left out).

        2.8.0 and 2.8.1 key the map by consumer *name*: every member of a name shows the ranges of all of them.
        """
        found = ranges_by_consumer(self.snapshot()) if self.era.pip379 else self._stats()
        if self.era.stats_by_name:
            by_name: dict[str, list[HashRange]] = {}
            for member, ranges in found.items():
                by_name.setdefault(member.name, []).extend(ranges)
            found = {m: sorted(by_name[m.name]) for m in self.members if m.name in by_name}
        return {m: r for m, r in found.items() if r}

    @abstractmethod
    def _add(self, member: Member, ranges: Sequence[tuple[int, int]] | None) -> None: ...

    @abstractmethod
    def _remove(self, member: Member) -> None: ...

    @abstractmethod
    def select(self, slot: int) -> Member | None: ...

    @abstractmethod
    def _stats(self) -> dict[Member, list[HashRange]]:
        """3.x / 2.x ``getConsumerKeyHashRanges``."""

    @abstractmethod
    def snapshot(self) -> list[Assignment]:
        """4.x ``getConsumerHashAssignmentsSnapshot`` (computed afresh)."""

    @abstractmethod
    def boundaries(self) -> list[int]:
        """Slots where the owner may change (ring points, range bounds): the differential probes around them."""
