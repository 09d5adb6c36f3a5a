"""Pulsar 4.x ``ConsumerHashAssignmentsSnapshot``: ranges by consumer, and what a membership change took away.

A snapshot is a list of ``(start, end, member)`` sorted by range.  ``ranges_by_consumer`` groups, sorts and merges
(``mergeOverlappingRanges``: ``current.end >= next.start - 1``); ``removed_ranges`` is the ``removed`` side of
``resolveConsumerUpdatedHashRanges``: ``diffRanges`` walked as the Java code walks it (a ``LinkedHashMap`` keyed by
range, so a later entry for the same range replaces an earlier one), entries with a *before* consumer grouped by
that consumer and merged.
"""

from __future__ import annotations

from selector_oracle.member import Member

Assignment = tuple[int, int, Member]
HashRange = tuple[int, int]


def merge(ranges: list[HashRange]) -> list[HashRange]:
    out: list[HashRange] = []
    for start, end in sorted(set(ranges)):
        if out and out[-1][1] >= start - 1:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def ranges_by_consumer(snapshot: list[Assignment]) -> dict[Member, list[HashRange]]:
    grouped: dict[Member, list[HashRange]] = {}
    for start, end, member in snapshot:
        grouped.setdefault(member, []).append((start, end))
    return {member: merge(ranges) for member, ranges in grouped.items()}


def diff(before: list[Assignment], after: list[Assignment]) -> dict[HashRange, tuple[Member | None, Member | None]]:
    changed: dict[HashRange, tuple[Member | None, Member | None]] = {}
    i = j = 0
    while i < len(before) and j < len(after):
        b0, b1, bc = before[i]
        a0, a1, ac = after[j]
        if (b0, b1) == (a0, a1):
            if bc != ac:
                changed[(a0, a1)] = (bc, ac)
            i += 1
            j += 1
        elif b1 < a0:
            changed[(b0, b1)] = (bc, ac)
            i += 1
        elif a1 < b0:
            changed[(a0, a1)] = (bc, ac)
            j += 1
        else:
            o0, o1 = max(b0, a0), min(b1, a1)
            if bc != ac:
                changed[(o0, o1)] = (bc, ac)
            if b1 <= o1:
                i += 1
            if a1 <= o1:
                j += 1
    for b0, b1, bc in before[i:]:
        changed[(b0, b1)] = (bc, None)
    for a0, a1, ac in after[j:]:
        changed[(a0, a1)] = (None, ac)
    return changed


def removed_ranges(before: list[Assignment], after: list[Assignment]) -> dict[Member, list[HashRange]]:
    lost: dict[Member, list[HashRange]] = {}
    for hash_range, (was, _now) in diff(before, after).items():
        if was is not None:
            lost.setdefault(was, []).append(hash_range)
    return {member: merge(ranges) for member, ranges in lost.items()}
