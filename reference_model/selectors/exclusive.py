"""``HashRangeExclusiveStickyKeyConsumerSelector``: the STICKY key-shared mode, consumers bring their own ranges.

Each consumer subscribes with explicit inclusive hash ranges (``KeySharedMeta.hashRanges``).  The broker refuses a
consumer (``ConsumerAssignException``; the client sees ``ConsumerAssignError``) when:

* it sent no key-shared meta: "Must specify key shared meta for consumer.";
* its list is empty: "Ranges for KeyShared policy must not be empty.";
* a range has ``start > end``: "Fixed hash range start > end for range: [s,e]";
* two of its own ranges overlap: "Consumer's own ranges conflict: [a,b] overlaps with [c,d]";
* a range overlaps a range of a connected consumer: "Range conflict with consumer <c>".  Adjacent ranges
  (``[0,99]`` + ``[100,399]``) and interleaving (``[0,99],[400,65535]`` + ``[100,399]``) are fine.

Slots no range covers select nobody: the broker parks their entries in the replay queue until some consumer
covers them.  Removing a consumer frees its ranges; nobody inherits them.

**The gap bug** (before apache/pulsar#24730: 3.0.14, 3.3.9, 4.0.7, 4.1.1).  The older selector stored only the
start and end *points* of every range and selected a slot when the nearest points below and above it belonged to
the same consumer, so a consumer with ``[0,9999]`` and ``[20000,29999]`` also received slot 15000 when nobody else
owned a point in between.  Its stats paired the points two by two, so its reports go wrong when ranges are single
slots.  It also did not check a consumer's own ranges against each other; the model refuses overlapping own
ranges in every version, as the Java and C++ clients do before subscribing.

The broker validates no bounds; :func:`validate_sticky_ranges` is the client-side check (``[0, 65535]``, no overlap).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Sequence
from itertools import pairwise

from reference_model.errors import ConsumerAssignError, InvalidArgument
from reference_model.hashing import DEFAULT_RANGE_SIZE
from reference_model.selectors.base import Selector
from reference_model.selectors.consumer_ref import ConsumerRef
from reference_model.selectors.impacted import AssignmentSnapshot, HashRange, HashRangeAssignment, merge_ranges
from reference_model.versions import PIP_379, STICKY_GAP_FIX, PulsarVersion

__all__ = ["StickyRangesSelector", "validate_sticky_ranges"]


def _overlap(a: HashRange, b: HashRange) -> bool:
    return max(a[0], b[0]) <= min(a[1], b[1])


def _describe(consumer: ConsumerRef) -> str:
    return f"{consumer.name!r} (consumer_id {consumer.consumer_id})"


def _as_ranges(consumer: ConsumerRef, ranges: object) -> list[HashRange]:
    if ranges is None:
        raise ConsumerAssignError(
            f"Must specify key shared meta for consumer. {_describe(consumer)} joined the sticky selector without"
            " hash ranges; pass ranges=[(start, end), ...]."
        )
    if isinstance(ranges, (str, bytes)) or not isinstance(ranges, Sequence):
        raise InvalidArgument(f"Expected a list of (start, end) pairs for ranges but got ranges={ranges!r}.")
    result: list[HashRange] = []
    for item in ranges:
        if (
            not isinstance(item, Sequence)
            or len(item) != 2
            or any(isinstance(v, bool) or not isinstance(v, int) for v in item)
        ):
            raise InvalidArgument(
                f"Expected (start, end) pairs of ints in ranges but got {item!r} in ranges={ranges!r}."
            )
        result.append((int(item[0]), int(item[1])))
    return result


def validate_sticky_ranges(ranges: Sequence[tuple[int, int]], range_size: int = DEFAULT_RANGE_SIZE) -> None:
    """The client's own check of a sticky policy (Java ``KeySharedPolicySticky.validate``, C++ ``ConsumerImpl``).

    Raises :class:`InvalidArgument` naming the range: outside ``[0, range_size - 1]``, inverted, or overlapping
    another range of the same policy.
    """
    if not ranges:
        raise InvalidArgument("Ranges for KeyShared policy must not be empty: give at least one start-end range.")
    for start, end in ranges:
        if start > end:
            raise InvalidArgument(f"Range [{start}, {end}] has start > end; write it as [{end}, {start}].")
        if start < 0 or end > range_size - 1:
            raise InvalidArgument(
                f"Range [{start}, {end}] is outside the hash range: ranges must be [0, {range_size - 1}]."
            )
    ordered = sorted(ranges)
    for a, b in pairwise(ordered):
        if _overlap(a, b):
            raise InvalidArgument(f"Ranges [{a[0]}, {a[1]}] and [{b[0]}, {b[1]}] of one consumer overlap.")


class StickyRangesSelector(Selector):
    """The sticky (exclusive hash range) selector of one Pulsar version; see the module docstring."""

    kind = "sticky"

    def __init__(self, version: PulsarVersion, range_size: int) -> None:
        if isinstance(range_size, bool) or not isinstance(range_size, int) or range_size < 1:
            raise InvalidArgument(
                f"Expected range_size >= 1 for the sticky selector but got range_size={range_size!r}."
            )
        modern = version.has(PIP_379)
        super().__init__(version, (0, range_size - 1) if modern else None, False)
        self._range_size = range_size
        self._gap_fixed = version.has(STICKY_GAP_FIX)
        self._ranges_of: dict[int, list[HashRange]] = {}  # consumer_id -> its ranges as given
        # Fixed selector: range start -> (start, end, consumer).  Gap-bug selector: point -> consumer.
        self._keys: list[int] = []
        self._at: dict[int, tuple[int, int, ConsumerRef]] = {}

    @property
    def range_size(self) -> int:
        return self._range_size

    @property
    def gap_fixed(self) -> bool:
        """Whether this version carries apache/pulsar#24730 (no selection in the gaps of one consumer's ranges)."""
        return self._gap_fixed

    # -- validation -------------------------------------------------------------------------------------------

    def _conflict(self, new: HashRange) -> tuple[ConsumerRef, HashRange] | None:
        if self._gap_fixed:
            # findConflictingConsumer: the existing ranges starting at or before, and at or after, new's start.
            floor_index = bisect_right(self._keys, new[0]) - 1
            ceiling_index = bisect_left(self._keys, new[0])
            for j in (floor_index, ceiling_index):
                if 0 <= j < len(self._keys):
                    start, end, owner = self._at[self._keys[j]]
                    if _overlap(new, (start, end)):
                        return owner, (start, end)
            return None
        # Before the fix: ceiling point of start, floor point of end, then the owner's own ranges.
        ci = bisect_left(self._keys, new[0])
        fi = bisect_right(self._keys, new[1]) - 1
        ceiling = self._keys[ci] if ci < len(self._keys) else None
        floor = self._keys[fi] if fi >= 0 else None
        if floor is not None and floor >= new[0]:
            owner = self._at[floor][2]
            return owner, self._owning_range(owner, floor)
        if ceiling is not None and ceiling <= new[1]:
            owner = self._at[ceiling][2]
            return owner, self._owning_range(owner, ceiling)
        if ceiling is not None and floor is not None and self._at[ceiling][2] == self._at[floor][2]:
            owner = self._at[ceiling][2]
            for existing in self._ranges_of[owner.consumer_id]:
                if _overlap(new, existing):
                    return owner, existing
        return None

    def _owning_range(self, owner: ConsumerRef, point: int) -> HashRange:
        return next((r for r in self._ranges_of[owner.consumer_id] if r[0] <= point <= r[1]), (point, point))

    def _refuse_conflict(self, new: HashRange, owner: ConsumerRef, theirs: HashRange) -> ConsumerAssignError:
        return ConsumerAssignError(
            f"Range conflict with consumer {_describe(owner)}: [{new[0]}, {new[1]}] overlaps its"
            f" [{theirs[0]}, {theirs[1]}]. Sticky ranges of connected consumers must not overlap;"
            " pick free ranges or close that consumer first."
        )

    def _validate(self, consumer: ConsumerRef, ranges: list[HashRange]) -> None:
        if not ranges:
            raise ConsumerAssignError(
                f"Ranges for KeyShared policy must not be empty: {_describe(consumer)} gave ranges=[];"
                " give at least one (start, end) pair."
            )
        ordered = sorted(ranges, key=lambda r: r[0])
        if self._gap_fixed:
            for i, (start, end) in enumerate(ordered):
                if start > end:
                    raise ConsumerAssignError(self._inverted(start, end))
                if i + 1 < len(ordered) and _overlap((start, end), ordered[i + 1]):
                    raise ConsumerAssignError(self._own_overlap((start, end), ordered[i + 1]))
            for new in ranges:
                found = self._conflict(new)
                if found is not None:
                    raise self._refuse_conflict(new, *found)
            return
        if self._version.at_least(3, 0):
            # apache/pulsar#20026 (3.0.0; no 2.x release has it) made validateKeySharedMeta check every range for
            # start > end before findConflictingConsumer looks at any of them; 2.x checks each range in turn.
            for new in ranges:
                if new[0] > new[1]:
                    raise ConsumerAssignError(self._inverted(*new))
        for new in ranges:  # before the fix: one pass in the given order
            if new[0] > new[1]:
                raise ConsumerAssignError(self._inverted(*new))
            found = self._conflict(new)
            if found is not None:
                raise self._refuse_conflict(new, *found)
        for a, b in pairwise(ordered):
            if _overlap(a, b):
                raise ConsumerAssignError(self._own_overlap(a, b))

    @staticmethod
    def _inverted(start: int, end: int) -> str:
        return f"Fixed hash range start > end for range: [{start},{end}]; write it as [{end},{start}]."

    @staticmethod
    def _own_overlap(a: HashRange, b: HashRange) -> str:
        return (
            f"Consumer's own ranges conflict: [{a[0]},{a[1]}] overlaps with [{b[0]},{b[1]}];"
            " merge them into one range or make them disjoint."
        )

    # -- membership -------------------------------------------------------------------------------------------

    def _add(self, consumer: ConsumerRef, ranges: Sequence[tuple[int, int]] | None) -> None:
        given = _as_ranges(consumer, ranges)
        self._validate(consumer, given)
        self._ranges_of[consumer.consumer_id] = given
        for start, end in given:
            for key in (start,) if self._gap_fixed else (start, end):
                if key not in self._at:
                    insort(self._keys, key)
                self._at[key] = (start, end, consumer)

    def _remove(self, consumer: ConsumerRef) -> None:
        del self._ranges_of[consumer.consumer_id]
        self._keys = [k for k in self._keys if self._at[k][2] != consumer]
        self._at = {k: v for k, v in self._at.items() if v[2] != consumer}

    def ranges_of(self, consumer: ConsumerRef) -> list[HashRange]:
        """The ranges ``consumer`` subscribed with, as given."""
        return list(self._ranges_of.get(consumer.consumer_id, ()))

    # -- selection --------------------------------------------------------------------------------------------

    def _build_table(self) -> list[ConsumerRef | None]:
        size = self._range_size
        table: list[ConsumerRef | None] = [None] * size
        if self._gap_fixed:
            for key in self._keys:
                start, end, owner = self._at[key]
                lo, hi = max(start, 0), min(end, size - 1)
                if lo <= hi:
                    table[lo : hi + 1] = [owner] * (hi - lo + 1)
            return table
        for i, key in enumerate(self._keys):
            owner = self._at[key][2]
            if 0 <= key < size:
                table[key] = owner
            if i + 1 < len(self._keys) and self._at[self._keys[i + 1]][2] == owner:
                lo, hi = max(key + 1, 0), min(self._keys[i + 1] - 1, size - 1)
                if lo <= hi:
                    table[lo : hi + 1] = [owner] * (hi - lo + 1)
        return table

    def select(self, slot: int) -> ConsumerRef | None:
        if slot >= 0:
            slot %= self._range_size  # both eras: ``hash % rangeSize`` inside select
        return super().select(slot)

    def _select_beyond_table(self, slot: int) -> ConsumerRef | None:  # pragma: no cover - select reduces first
        return None

    # -- reporting --------------------------------------------------------------------------------------------

    def _assignments(self) -> list[HashRangeAssignment]:
        if self._gap_fixed:
            return [HashRangeAssignment(*self._at[key]) for key in self._keys]
        # Before the fix the points are paired two by two, whatever range they came from.
        result: list[HashRangeAssignment] = []
        pending: int | None = None
        for key in self._keys:
            if pending is None:
                pending = key
                continue
            if self._at[pending][2] == self._at[key][2]:
                result.append(HashRangeAssignment(pending, key, self._at[key][2]))
            pending = None
        return result

    def _snapshot(self) -> AssignmentSnapshot:
        return AssignmentSnapshot(tuple(self._assignments()))

    def _reported_ranges(self) -> dict[ConsumerRef, list[HashRange]]:
        grouped: dict[ConsumerRef, list[HashRange]] = {}
        for assignment in self._assignments():
            grouped.setdefault(assignment.consumer, []).append(assignment.range)
        if self._version.has(PIP_379):  # 4.x prints the snapshot's ranges per consumer, merged
            return {consumer: merge_ranges(ranges) for consumer, ranges in grouped.items()}
        return grouped

    def _copy_state_into(self, clone: Selector) -> None:
        assert isinstance(clone, StickyRangesSelector)
        clone._ranges_of = {cid: list(r) for cid, r in self._ranges_of.items()}
        clone._keys = list(self._keys)
        clone._at = dict(self._at)
