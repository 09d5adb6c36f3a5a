"""A set of inclusive hash ranges with O(log n) membership, for "did this consumer lose slot s?" questions."""

from __future__ import annotations

import bisect
from collections.abc import Iterable

__all__ = ["RangeSet"]


class RangeSet:
    """Sorted, merged inclusive ``(start, end)`` ranges; ``slot in ranges`` is a binary search."""

    __slots__ = ("_ends", "_starts")

    def __init__(self, ranges: Iterable[tuple[int, int]]) -> None:
        merged: list[tuple[int, int]] = []
        for start, end in sorted(ranges):
            if merged and merged[-1][1] >= start - 1:
                merged[-1] = (merged[-1][0], max(merged[-1][1], end))
            else:
                merged.append((start, end))
        self._starts = [s for s, _ in merged]
        self._ends = [e for _, e in merged]

    def __contains__(self, slot: object) -> bool:
        if not isinstance(slot, int):
            return False
        i = bisect.bisect_right(self._starts, slot) - 1
        return i >= 0 and slot <= self._ends[i]

    def __bool__(self) -> bool:
        return bool(self._starts)

    def __repr__(self) -> str:
        return f"RangeSet({list(zip(self._starts, self._ends, strict=True))})"
