"""The replay queue: entries to deliver again, read lowest position first, with per-hash reference counts.

Follows ``MessageRedeliveryController``: a sorted set of positions plus, unless out-of-order delivery is
allowed, ``position -> sticky key hash`` and a reference count per hash, so that ``contains_slot`` answers
"does anything of this hash wait for replay?" in O(1) (rule R1: such a hash blocks *new* messages). Positions
added without a hash (negative acks, redelivery requests: "difficult to get the sticky key here") carry none
and block nothing until a dispatch pass learns their hash. ``msgInReplay`` in the stats is ``len()``.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Collection, Iterator

from reference_model.storage.position import Position

__all__ = ["ReplayQueue"]


class ReplayQueue:
    """Positions waiting for redelivery; O(log n) membership order, O(1) hash lookups."""

    __slots__ = ("_selecting", "_slots", "count_hashes", "positions", "slot_counts", "track_hashes", "version")

    def __init__(self, *, track_hashes: bool, count_hashes: bool | None = None) -> None:
        self.track_hashes = track_hashes
        #: whether ``slot_counts`` counts the recorded hashes (R1 blocking); ``False`` records each position's hash
        #: for the replay filter only: out-of-order delivery from apache/pulsar#26268 (``positionToStickyKeyHash``
        #: without ``hashesRefCount``)
        self.count_hashes = track_hashes if count_hashes is None else count_hashes
        #: the queued positions, sorted; read-only for callers (the dispatcher tests it on every read round, where
        #: ``len(queue)`` would cost a method call). Always the same list object.
        self.positions: list[Position] = []
        self._slots: dict[Position, int] = {}  # 0 = no hash known
        #: slot -> how many queued positions carry it (read-only for callers: R1 asks ``slot in slot_counts``)
        self.slot_counts: dict[int, int] = {}
        #: bumped by every change, so a dispatcher can tell whether a round changed the queue
        self.version = 0
        #: while :meth:`select` runs: empty, or the positions as they were before ``accept`` first changed them
        self._selecting: list[list[Position]] | None = None

    def __len__(self) -> int:
        return len(self.positions)

    def __bool__(self) -> bool:
        return bool(self.positions)

    def __contains__(self, position: object) -> bool:
        return position in self._slots

    def __iter__(self) -> Iterator[Position]:
        return iter(list(self.positions))

    def first(self) -> Position | None:
        return self.positions[0] if self.positions else None

    def slot_of(self, position: Position) -> int | None:
        """The hash recorded for ``position``, or ``None`` if unknown or the position is not queued."""
        slot = self._slots.get(position)
        return slot if slot else None

    def contains_slot(self, slot: int) -> bool:
        """R1: whether any queued position carries ``slot`` (always ``False`` when hashes are not tracked)."""
        return slot in self.slot_counts

    def add(self, position: Position, slot: int | None = None) -> bool:
        """Queue ``position`` (again); a known ``slot`` replaces the recorded one. Returns whether it was new."""
        current = self._slots.get(position)
        new_slot = slot if (slot and self.track_hashes) else 0
        if current is None:
            self.version += 1
            if self._selecting is not None:
                self._keep_order_for_select()
            bisect.insort(self.positions, position)
            self._slots[position] = new_slot
            if new_slot and self.count_hashes:
                self.slot_counts[new_slot] = self.slot_counts.get(new_slot, 0) + 1
            return True
        if new_slot and new_slot != current:
            self.version += 1
            self._slots[position] = new_slot
            if self.count_hashes:
                if current:
                    self._unref(current)
                self.slot_counts[new_slot] = self.slot_counts.get(new_slot, 0) + 1
        return False

    def remove(self, position: Position) -> bool:
        slot = self._slots.pop(position, None)
        if slot is None:
            return False
        self.version += 1
        if self._selecting is not None:
            self._keep_order_for_select()
        i = bisect.bisect_left(self.positions, position)
        del self.positions[i]
        if slot and self.count_hashes:
            self._unref(slot)
        return True

    def _unref(self, slot: int) -> None:
        n = self.slot_counts[slot] - 1
        if n:
            self.slot_counts[slot] = n
        else:
            del self.slot_counts[slot]

    def remove_all_up_to(self, position: Position) -> int:
        """Drop positions at or below ``position`` (already acknowledged); return how many."""
        i = bisect.bisect_right(self.positions, position)
        if i:
            self.version += 1
            if self._selecting is not None:
                self._keep_order_for_select()
        counted = self.count_hashes
        for p in self.positions[:i]:
            slot = self._slots.pop(p)
            if slot and counted:
                self._unref(slot)
        del self.positions[:i]
        return i

    def clear(self) -> None:
        if self.positions:
            self.version += 1
            if self._selecting is not None:
                self._keep_order_for_select()
        self.positions.clear()
        self._slots.clear()
        self.slot_counts.clear()

    def select(
        self,
        max_positions: int,
        accept: Callable[[Position, int | None], bool] | None = None,
        rejected: Collection[int] | None = None,
    ) -> list[Position]:
        """Up to ``max_positions`` positions, lowest first, that ``accept(position, slot)`` lets through.

        ``getMessagesToReplayNow(max, filter)``: the filter is consulted in position order and is stateful for
        the call (it spends permits), so rejected positions do not count towards ``max_positions``.

        ``rejected``: slots the filter would reject without a side effect (the hashes it has blocked for the
        call, which it may add to as it goes): their positions are passed over without asking it, and the walk
        ends once every queued position is of such a slot. After a restart or a membership change the queue
        holds thousands of positions of a few blocked hashes, and every read round walks it.
        """
        if max_positions <= 0:
            return []
        if accept is None:
            return self.positions[:max_positions]
        if self._selecting is not None:  # a selection inside ``accept`` of another: walk a copy
            return self._select_from(list(self.positions), max_positions, accept, None, rejected)
        # Walk the live list, not a copy (the queue can hold tens of thousands of positions and a round wants a
        # hundred). If ``accept`` changes the queue, the positions as they were are kept first, so the walk goes
        # on over exactly the positions it started with, as a walk over a copy would.
        selecting: list[list[Position]] = []
        self._selecting = selecting
        try:
            return self._select_from(self.positions, max_positions, accept, selecting, rejected)
        finally:
            self._selecting = None

    def _select_from(
        self,
        order: list[Position],
        max_positions: int,
        accept: Callable[[Position, int | None], bool],
        selecting: list[list[Position]] | None,
        rejected: Collection[int] | None = None,
    ) -> list[Position]:
        out: list[Position] = []
        slots = self._slots
        never: Collection[int] = rejected if rejected is not None else ()
        counts = self.slot_counts
        i = 0
        while True:
            if selecting:  # ``accept`` changed the queue: go on over the positions as they were
                order = selecting[0]
            if i >= len(order):
                return out
            p = order[i]
            i += 1
            slot = slots.get(p)
            if slot is None:
                continue  # removed by a side effect of ``accept``
            if slot in never:
                continue  # the filter would say no, and do nothing else
            if accept(p, slot or None):
                out.append(p)
                if len(out) >= max_positions:
                    return out
            elif len(never) >= len(counts) and self._all_rejected(never):
                return out  # every position still queued would be passed over: the rest of the walk finds nothing

    def _all_rejected(self, rejected: Collection[int]) -> bool:
        """Whether every queued position has a known hash in ``rejected``."""
        counts = self.slot_counts
        return all(slot in rejected for slot in counts) and sum(counts.values()) == len(self._slots)

    def _keep_order_for_select(self) -> None:
        """The queue is about to change during :meth:`select`: keep the order it walks (once)."""
        selecting = self._selecting
        if selecting is not None and not selecting:
            selecting.append(list(self.positions))

    def __repr__(self) -> str:
        return f"ReplayQueue({len(self)} positions, {len(self.slot_counts)} hashes)"
