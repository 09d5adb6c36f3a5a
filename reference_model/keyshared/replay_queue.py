"""The replay queue: entries to deliver again, read lowest position first, with per-hash reference counts.

Follows ``MessageRedeliveryController``: a sorted set of positions plus, unless out-of-order delivery is
allowed, ``position -> sticky key hash`` and a reference count per hash, so that ``contains_slot`` answers
"does anything of this hash wait for replay?" in O(1) (rule R1: such a hash blocks *new* messages). Positions
added without a hash (negative acks, redelivery requests: "difficult to get the sticky key here") carry none
and block nothing until a dispatch pass learns their hash. ``msgInReplay`` in the stats is ``len()``.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator

from reference_model.storage.position import Position

__all__ = ["ReplayQueue"]


class ReplayQueue:
    """Positions waiting for redelivery; O(log n) membership order, O(1) hash lookups."""

    __slots__ = ("_order", "_slot_refs", "_slots", "track_hashes", "version")

    def __init__(self, *, track_hashes: bool) -> None:
        self.track_hashes = track_hashes
        self._order: list[Position] = []
        self._slots: dict[Position, int] = {}  # 0 = no hash known
        self._slot_refs: dict[int, int] = {}
        #: bumped by every change, so a dispatcher can tell whether a round changed the queue
        self.version = 0

    def __len__(self) -> int:
        return len(self._order)

    def __bool__(self) -> bool:
        return bool(self._order)

    def __contains__(self, position: object) -> bool:
        return position in self._slots

    def __iter__(self) -> Iterator[Position]:
        return iter(list(self._order))

    def first(self) -> Position | None:
        return self._order[0] if self._order else None

    def slot_of(self, position: Position) -> int | None:
        """The hash recorded for ``position``, or ``None`` if unknown or the position is not queued."""
        slot = self._slots.get(position)
        return slot if slot else None

    def contains_slot(self, slot: int) -> bool:
        """R1: whether any queued position carries ``slot`` (always ``False`` when hashes are not tracked)."""
        return slot in self._slot_refs

    def add(self, position: Position, slot: int | None = None) -> bool:
        """Queue ``position`` (again); a known ``slot`` replaces the recorded one. Returns whether it was new."""
        current = self._slots.get(position)
        new_slot = slot if (slot and self.track_hashes) else 0
        if current is None:
            self.version += 1
            bisect.insort(self._order, position)
            self._slots[position] = new_slot
            if new_slot:
                self._slot_refs[new_slot] = self._slot_refs.get(new_slot, 0) + 1
            return True
        if new_slot and new_slot != current:
            self.version += 1
            if current:
                self._unref(current)
            self._slots[position] = new_slot
            self._slot_refs[new_slot] = self._slot_refs.get(new_slot, 0) + 1
        return False

    def remove(self, position: Position) -> bool:
        slot = self._slots.pop(position, None)
        if slot is None:
            return False
        self.version += 1
        i = bisect.bisect_left(self._order, position)
        del self._order[i]
        if slot:
            self._unref(slot)
        return True

    def _unref(self, slot: int) -> None:
        n = self._slot_refs[slot] - 1
        if n:
            self._slot_refs[slot] = n
        else:
            del self._slot_refs[slot]

    def remove_all_up_to(self, position: Position) -> int:
        """Drop positions at or below ``position`` (already acknowledged); return how many."""
        i = bisect.bisect_right(self._order, position)
        if i:
            self.version += 1
        for p in self._order[:i]:
            slot = self._slots.pop(p)
            if slot:
                self._unref(slot)
        del self._order[:i]
        return i

    def clear(self) -> None:
        if self._order:
            self.version += 1
        self._order.clear()
        self._slots.clear()
        self._slot_refs.clear()

    def select(
        self, max_positions: int, accept: Callable[[Position, int | None], bool] | None = None
    ) -> list[Position]:
        """Up to ``max_positions`` positions, lowest first, that ``accept(position, slot)`` lets through.

        ``getMessagesToReplayNow(max, filter)``: the filter is consulted in position order and is stateful for
        the call (it spends permits), so rejected positions do not count towards ``max_positions``.
        """
        out: list[Position] = []
        if max_positions <= 0:
            return out
        slots = self._slots
        for p in list(self._order):
            slot = slots.get(p)
            if slot is None:
                continue  # removed by a side effect of ``accept``
            if accept is None or accept(p, slot or None):
                out.append(p)
                if len(out) >= max_positions:
                    break
        return out

    def __repr__(self) -> str:
        return f"ReplayQueue({len(self)} positions, {len(self._slot_refs)} hashes)"
