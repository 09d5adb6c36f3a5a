"""``HashRangeAutoSplitStickyKeyConsumerSelector``: split the biggest range in two for every newcomer.

Used for AUTO_SPLIT subscriptions when ``subscriptionKeySharedUseConsistentHashing=false``.  The selector keeps a
sorted map from each range's *upper bound* to its consumer; the first consumer owns ``[0, rangeSize]`` (the upper
bound is ``rangeSize`` = 65536 itself, one more than any slot).  The rules, unchanged from 2.x to 4.x:

* **add**: find the biggest range: walk the upper bounds ascending and measure ``bound - previous bound`` (0 before
  the first, so the first range measures one less than its width); the *first* strictly biggest wins, so ties go to
  the lowest range.  If that measure is ``<= 1``, refuse the consumer: "No more range can assigned to new consumer,
  assigned consumers N" (``ConsumerAssignException``).  Else the newcomer gets the new bound
  ``bound - (measure >> 1)``, that is the *lower* half; the old owner keeps the upper half.
* **remove**: if the leaving consumer owns the top bound and others remain, the owner of the next lower bound moves
  up to the top bound (the lower neighbour absorbs the range); otherwise the bound is deleted and the next higher
  bound's owner absorbs the range.
* **select**: the owner of the smallest bound ``>= slot``.  3.x reduces the dispatcher's full hash with
  ``h % rangeSize`` inside ``select``; 4.x receives the slot already reduced (``h % 65536``, 0 -> 1).

Assignment depends on join order only, never on names.  Stats print one range per consumer, ``[previous bound + 1
(0 first), bound]``: the top range ends at 65536.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Sequence

from reference_model.errors import ConsumerAssignError, InvalidArgument
from reference_model.selectors.base import Selector
from reference_model.selectors.consumer_ref import ConsumerRef
from reference_model.selectors.impacted import AssignmentSnapshot, HashRange, HashRangeAssignment
from reference_model.versions import PIP_379, PulsarVersion

__all__ = ["AutoSplitSelector"]


class AutoSplitSelector(Selector):
    """The hash-range auto-split selector of one Pulsar version (see the module docstring for the rules)."""

    kind = "auto-split"

    def __init__(self, version: PulsarVersion, range_size: int, track_impacted: bool) -> None:
        if isinstance(range_size, bool) or not isinstance(range_size, int) or range_size < 2:
            raise InvalidArgument(
                f"Expected range_size >= 2 for the auto-split selector but got range_size={range_size!r}."
            )
        if range_size & (range_size - 1):
            raise InvalidArgument(
                f"The auto-split selector needs a power of two for range_size but got range_size={range_size}"
                f" (Pulsar: 'range size must be nth power with 2'); the broker uses 65536."
            )
        modern = version.has(PIP_379)
        super().__init__(version, (0, range_size - 1) if modern else None, track_impacted)
        self._range_size = range_size
        self._mod_in_select = not modern
        self._bounds: list[int] = []
        self._owner: dict[int, ConsumerRef] = {}
        self._bound_of: dict[int, int] = {}  # consumer_id -> upper bound

    @property
    def range_size(self) -> int:
        return self._range_size

    def _add(self, consumer: ConsumerRef, ranges: Sequence[tuple[int, int]] | None) -> None:
        self._no_ranges_argument(ranges)
        if not self._bounds:
            bound = self._range_size
        else:
            biggest, lower = self._biggest_range()
            if biggest - lower <= 1:
                raise ConsumerAssignError(
                    f"No more range can assigned to new consumer, assigned consumers {len(self._bounds)}:"
                    f" {consumer.name!r} cannot join, every range of the {self._range_size}-slot hash range is"
                    " already down to one slot. Remove a consumer first, or use consistent hashing."
                )
            bound = biggest - ((biggest - lower) >> 1)
        insort(self._bounds, bound)
        self._owner[bound] = consumer
        self._bound_of[consumer.consumer_id] = bound

    def _biggest_range(self) -> tuple[int, int]:
        """``findBiggestRange``: the first bound with the strictly largest ``bound - previous`` (and that previous)."""
        measure, best, best_lower = 0, self._range_size, 0
        lower = 0
        for bound in self._bounds:
            if bound - lower > measure:
                measure, best, best_lower = bound - lower, bound, lower
            lower = bound
        return best, best_lower

    def _remove(self, consumer: ConsumerRef) -> None:
        bound = self._bound_of.pop(consumer.consumer_id)
        i = bisect_left(self._bounds, bound)
        if bound == self._range_size and len(self._bounds) > 1:
            lower = self._bounds[i - 1]
            heir = self._owner.pop(lower)
            del self._bounds[i - 1]
            self._owner[bound] = heir
            self._bound_of[heir.consumer_id] = bound
        else:
            del self._bounds[i]
            del self._owner[bound]

    def _build_table(self) -> list[ConsumerRef | None]:
        table: list[ConsumerRef | None] = [None] * (self._range_size + 1)
        previous = -1
        for bound in self._bounds:
            table[previous + 1 : bound + 1] = [self._owner[bound]] * (bound - previous)
            previous = bound
        return table

    def select(self, slot: int) -> ConsumerRef | None:
        if self._mod_in_select and slot >= 0:
            slot %= self._range_size
        return super().select(slot)

    def _select_beyond_table(self, slot: int) -> ConsumerRef | None:
        if not self._bounds:
            return None
        raise InvalidArgument(
            f"slot={slot} is beyond the auto-split hash range [0, {self._range_size}] (Pulsar would fail here);"
            " slots come from slot_of()."
        )

    def _assignments(self) -> list[HashRangeAssignment]:
        result = []
        start = 0
        for bound in self._bounds:
            result.append(HashRangeAssignment(start, bound, self._owner[bound]))
            start = bound + 1
        return result

    def _snapshot(self) -> AssignmentSnapshot:
        return AssignmentSnapshot(tuple(self._assignments()))

    def _reported_ranges(self) -> dict[ConsumerRef, list[HashRange]]:
        return {a.consumer: [a.range] for a in self._assignments()}

    def _copy_state_into(self, clone: Selector) -> None:
        assert isinstance(clone, AutoSplitSelector)
        clone._bounds = list(self._bounds)
        clone._owner = dict(self._owner)
        clone._bound_of = dict(self._bound_of)
