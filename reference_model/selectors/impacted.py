"""Pulsar 4.0's hash-range snapshots and the "impacted consumers" between two of them (PIP-379).

When a consumer joins or leaves, the PIP-379 dispatcher must know which *existing* consumers lost hash
ranges: their pending messages of those hashes become "draining hashes" that the new owner may not receive until
they are acknowledged.  Pulsar computes this from two ``ConsumerHashAssignmentsSnapshot`` values (before and after
the change) with ``resolveImpactedConsumers``; this module restates that computation:

* :class:`AssignmentSnapshot` — a sorted, non-overlapping tuple of :class:`HashRangeAssignment`
  (``ConsumerHashAssignmentsSnapshot``; the constructor validates order like Pulsar's ``validate``).
* :func:`diff_ranges` — the merge walk of ``ConsumerHashAssignmentsSnapshot.diffRanges``, kept exact, including
  its corners: where an *after* range starts inside a *before* range of a different consumer, only the overlap
  is recorded (Pulsar's ``testDiffRanges_OverlappingRanges``: ``[1,5] c1`` -> ``[3,7] c2`` gives ``[3,5]``).
* :func:`resolve_impacted` — keep the entries with a *before* consumer, group by it, merge each group with
  :func:`merge_ranges` (adjacent ranges merge: ``end >= next.start - 1``), giving :class:`ImpactedRanges`.

Consumer equality is :class:`ConsumerRef` equality (Pulsar: ``Consumer.equals``, same id and client address).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from reference_model.errors import InvalidArgument
from reference_model.selectors.consumer_ref import ConsumerRef

__all__ = [
    "AssignmentSnapshot",
    "HashRange",
    "HashRangeAssignment",
    "ImpactedRanges",
    "diff_ranges",
    "merge_ranges",
    "resolve_impacted",
]

#: An inclusive ``(start, end)`` pair of hash values.
HashRange = tuple[int, int]


def merge_ranges(ranges: Iterable[HashRange]) -> list[HashRange]:
    """Sort and merge overlapping or adjacent ranges (``ConsumerHashAssignmentsSnapshot.mergeOverlappingRanges``).

    Pulsar first puts the ranges into a ``TreeSet`` (duplicates vanish, order by start then end), then merges
    while ``current.end >= next.start - 1``.
    """
    merged: list[HashRange] = []
    for start, end in sorted(set(ranges)):
        if merged and merged[-1][1] >= start - 1:
            last_start, last_end = merged[-1]
            merged[-1] = (last_start, max(last_end, end))
        else:
            merged.append((start, end))
    return merged


class HashRangeAssignment(NamedTuple):
    """One inclusive hash range and the consumer selected for it (Pulsar's ``HashRangeAssignment`` record)."""

    start: int
    end: int
    consumer: ConsumerRef

    @property
    def range(self) -> HashRange:
        return (self.start, self.end)


@dataclass(frozen=True, slots=True)
class AssignmentSnapshot:
    """The hash ranges of every consumer at one point in time (``ConsumerHashAssignmentsSnapshot``).

    Ranges are strictly increasing and non-overlapping; a gap means "no consumer" (sticky selector).
    """

    assignments: tuple[HashRangeAssignment, ...] = ()

    def __post_init__(self) -> None:
        previous: HashRangeAssignment | None = None
        for assignment in self.assignments:
            if assignment.start > assignment.end:
                raise InvalidArgument(f"Range end must be >= range start, got [{assignment.start}, {assignment.end}].")
            if previous is not None and previous.end >= assignment.start:
                raise InvalidArgument(
                    f"Ranges must be non-overlapping and sorted: [{previous.start}, {previous.end}] is followed by"
                    f" [{assignment.start}, {assignment.end}]."
                )
            previous = assignment

    @classmethod
    def of(cls, assignments: Iterable[tuple[int, int, ConsumerRef]]) -> AssignmentSnapshot:
        return cls(tuple(HashRangeAssignment(start, end, consumer) for start, end, consumer in assignments))

    def __iter__(self) -> Iterator[HashRangeAssignment]:
        return iter(self.assignments)

    def __len__(self) -> int:
        return len(self.assignments)

    def ranges_by_consumer(self) -> dict[ConsumerRef, list[HashRange]]:
        """Each consumer's ranges, merged (``getRangesByConsumer``), consumers in order of their first range."""
        consumers: dict[int, ConsumerRef] = {}  # grouped by object identity: cheap, and ConsumerRefs are shared
        grouped: dict[int, list[HashRange]] = {}
        for start, end, consumer in self.assignments:
            key = id(consumer)
            if key not in grouped:
                consumers[key] = consumer
                grouped[key] = []
            grouped[key].append((start, end))
        result: dict[ConsumerRef, list[HashRange]] = {}
        for key, ranges in grouped.items():
            consumer = consumers[key]
            result[consumer] = merge_ranges(ranges + result.get(consumer, []))
        return result

    def consumer_of(self, slot: int) -> ConsumerRef | None:
        """The consumer whose range holds ``slot``, or ``None`` (binary search)."""
        low, high = 0, len(self.assignments) - 1
        while low <= high:
            mid = (low + high) // 2
            assignment = self.assignments[mid]
            if slot < assignment.start:
                high = mid - 1
            elif slot > assignment.end:
                low = mid + 1
            else:
                return assignment.consumer
        return None

    def resolve_impacted(self, after: AssignmentSnapshot) -> ImpactedRanges:
        """The consumers that lost ranges going from this snapshot to ``after``, with what they lost."""
        return resolve_impacted(self, after)


def diff_ranges(
    before: AssignmentSnapshot, after: AssignmentSnapshot
) -> list[tuple[HashRange, ConsumerRef | None, ConsumerRef | None]]:
    """``ConsumerHashAssignmentsSnapshot.diffRanges``: ``(range, before_consumer, after_consumer)`` in walk order."""
    changes: list[tuple[HashRange, ConsumerRef | None, ConsumerRef | None]] = []
    b_list, a_list = before.assignments, after.assignments
    bi = ai = 0
    while bi < len(b_list) and ai < len(a_list):
        b, a = b_list[bi], a_list[ai]
        if b.start == a.start and b.end == a.end:
            if b.consumer is not a.consumer and b.consumer != a.consumer:
                changes.append((a.range, b.consumer, a.consumer))
            bi += 1
            ai += 1
        elif b.end < a.start:
            changes.append((b.range, b.consumer, a.consumer))
            bi += 1
        elif a.end < b.start:
            changes.append((a.range, b.consumer, a.consumer))
            ai += 1
        else:
            overlap = (max(b.start, a.start), min(b.end, a.end))
            if b.consumer is not a.consumer and b.consumer != a.consumer:
                changes.append((overlap, b.consumer, a.consumer))
            if b.end <= overlap[1]:
                bi += 1
            if a.end <= overlap[1]:
                ai += 1
    changes.extend((b.range, b.consumer, None) for b in b_list[bi:])
    changes.extend((a.range, None, a.consumer) for a in a_list[ai:])
    return changes


class ImpactedRanges(Mapping[ConsumerRef, tuple[HashRange, ...]]):
    """Each consumer that lost hash ranges in a membership change, mapped to the merged ranges it lost.

    Pulsar's ``ImpactedConsumersResult`` / ``RemovedHashRanges``.  Immutable; consumers are kept in the order the
    diff walk first met them (ascending hash), so iteration is deterministic.
    """

    __slots__ = ("_removed",)

    def __init__(self, removed: Mapping[ConsumerRef, Sequence[HashRange]] | None = None) -> None:
        self._removed: dict[ConsumerRef, tuple[HashRange, ...]] = {
            consumer: tuple((int(s), int(e)) for s, e in ranges) for consumer, ranges in (removed or {}).items()
        }

    def __getitem__(self, consumer: ConsumerRef) -> tuple[HashRange, ...]:
        return self._removed[consumer]

    def __iter__(self) -> Iterator[ConsumerRef]:
        return iter(self._removed)

    def __len__(self) -> int:
        return len(self._removed)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ImpactedRanges):
            return self._removed == other._removed
        if isinstance(other, Mapping):
            return self._removed == dict(other.items())
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self._removed.items()))

    def __repr__(self) -> str:
        return f"ImpactedRanges({self._removed!r})"

    def contains(self, consumer: ConsumerRef, slot: int) -> bool:
        """Whether ``consumer`` lost ``slot`` (``RemovedHashRanges.containsStickyKey``)."""
        return any(start <= slot <= end for start, end in self._removed.get(consumer, ()))


def resolve_impacted(before: AssignmentSnapshot, after: AssignmentSnapshot) -> ImpactedRanges:
    """``resolveConsumerRemovedHashRanges``: group the diff by *before* consumer and merge each group."""
    lost: dict[ConsumerRef, list[HashRange]] = {}
    for hash_range, before_consumer, _after_consumer in diff_ranges(before, after):
        if before_consumer is not None:
            lost.setdefault(before_consumer, []).append(hash_range)
    return ImpactedRanges({consumer: merge_ranges(ranges) for consumer, ranges in lost.items()})
