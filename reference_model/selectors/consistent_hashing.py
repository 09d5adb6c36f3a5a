"""``ConsistentHashingStickyKeyConsumerSelector`` in its three released shapes.

Every consumer puts ``points`` (``subscriptionKeySharedConsistentHashingReplicaPoints``, default 100) points on a
hash ring; a slot belongs to the first point at or after it, wrapping to the first point.  What changed is how a
point is named, what happens when two points collide, and how stats print the ranges:

=====================================  ================================  ==========================================
era                                    ring key / ring position          collisions
=====================================  ================================  ==========================================
2.8 - 3.0.2, 3.1, 3.2.0                ``name + i``, full 31-bit hash    per-point list sorted by name;
(:class:`CollisionListRingSelector`)                                     ``select`` takes ``list[h % len(list)]``
3.0.3 - 3.0.6, 3.2.1 - 3.3.1           ``name + "\\0" + i``              same (apache/pulsar#22053)
3.0.7+, 3.3.2+                         ``name\\0index\\0i``              later add replaces (``put``); removal
(:class:`NameIndexRingSelector`)       full 31-bit hash                  deletes the point (apache/pulsar#23327)
4.0+ (:class:`ConsistentHashingSelector`)  ``name\\0index\\0i``, reduced  first wins; the colliding consumers
                                       into [1, 65535] (classic           queue FIFO and take over when the
                                       dispatcher: [1, 2**31 - 2])        selected one leaves (#23441, #23447)
=====================================  ================================  ==========================================

``index`` is the consumer-name index (``ConsumerNameIndexTracker``): the smallest non-negative integer not used by
another connected consumer of the same name, released when the consumer leaves; so a consumer that leaves and
rejoins under the same name gets its ring points back, and same-name consumers get distinct points.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Sequence
from typing import cast

from reference_model.errors import ModelStateError
from reference_model.hashing import make_hash, reduce_hash
from reference_model.selectors.base import Selector
from reference_model.selectors.consumer_ref import ConsumerRef
from reference_model.selectors.impacted import AssignmentSnapshot, HashRange, HashRangeAssignment
from reference_model.versions import CONSISTENT_HASHING_REMOVE_BY_IDENTITY, PulsarVersion

__all__ = [
    "CollisionListRingSelector",
    "ConsistentHashingSelector",
    "NameIndexRingSelector",
    "NameIndexTracker",
    "ring_key",
]

_INT_MAX = 2**31 - 1


def _java_int(value: int) -> int:
    """Wrap like a Java ``int`` (two's complement, 32 bits)."""
    return (value + 2**31) % 2**32 - 2**31


def ring_key(name: str, point: int, name_index: int | None = None, *, nul_separator: bool = True) -> bytes:
    """The bytes hashed for ring point ``point`` of a consumer named ``name``.

    ``name + i`` before apache/pulsar#22053, ``name + "\\0" + i`` after it, and ``name\\0index\\0i`` once the
    consumer-name index exists (apache/pulsar#23327).  Java's ``String.getBytes()`` in UTF-8.
    """
    if name_index is not None:
        text = f"{name}\0{name_index}\0{point}"
    elif nul_separator:
        text = f"{name}\0{point}"
    else:
        text = f"{name}{point}"
    return text.encode("utf-8", "replace")


class NameIndexTracker:
    """``ConsumerNameIndexTracker``: a per-name index for each consumer, reference-counted per ring point."""

    __slots__ = ("_entries", "_used")

    def __init__(self) -> None:
        self._used: dict[str, set[int]] = {}
        # consumer_id -> [name, index, reference count]
        self._entries: dict[int, list[object]] = {}

    def increase(self, consumer: ConsumerRef) -> int:
        """Add one reference; the first allocates the smallest free index of the consumer's name."""
        entry = self._entries.get(consumer.consumer_id)
        if entry is None:
            used = self._used.setdefault(consumer.name, set())
            index = 0
            while index in used:
                index += 1
            used.add(index)
            entry = self._entries[consumer.consumer_id] = [consumer.name, index, 0]
        entry[2] = cast(int, entry[2]) + 1
        return cast(int, entry[1])

    def decrease(self, consumer: ConsumerRef) -> None:
        """Drop one reference; the last releases the index."""
        entry = self._entries.get(consumer.consumer_id)
        if entry is None:
            raise ModelStateError(f"{consumer!r} has no name-index reference to release.")
        entry[2] = cast(int, entry[2]) - 1
        if entry[2] == 0:
            used = self._used[consumer.name]
            used.discard(cast(int, entry[1]))
            if not used:
                del self._used[consumer.name]
            del self._entries[consumer.consumer_id]

    def index_of(self, consumer: ConsumerRef) -> int:
        """The tracked index, or -1 when the consumer holds no reference."""
        entry = self._entries.get(consumer.consumer_id)
        return -1 if entry is None else cast(int, entry[1])

    def copy(self) -> NameIndexTracker:
        clone = NameIndexTracker()
        clone._used = {name: set(indexes) for name, indexes in self._used.items()}
        clone._entries = {cid: list(entry) for cid, entry in self._entries.items()}
        return clone


class _RingSelector(Selector):
    """Shared parts: ``points`` per consumer, a sorted list of ring positions."""

    kind = "consistent-hashing"

    def __init__(
        self, version: PulsarVersion, points: int, reduce_range: HashRange | None, track_impacted: bool
    ) -> None:
        super().__init__(version, reduce_range, track_impacted)
        self._points_per_consumer = points
        self._ring: list[int] = []

    @property
    def points(self) -> int:
        """Ring points per consumer (``subscriptionKeySharedConsistentHashingReplicaPoints``)."""
        return self._points_per_consumer

    def ring_positions(self) -> list[int]:
        """The occupied ring positions, ascending."""
        return list(self._ring)

    def _ring_remove(self, position: int) -> None:
        del self._ring[bisect_left(self._ring, position)]

    def _snapshot(self) -> AssignmentSnapshot:
        raise ModelStateError(f"{type(self).__name__} models a 3.x selector, which has no snapshot.")


class ConsistentHashingSelector(_RingSelector):
    """Pulsar 4.x: name-indexed points reduced into the key hash range; first wins, FIFO takeover on removal.

    Follows ``ConsistentHashingStickyKeyConsumerSelector`` after PIP-379 (apache/pulsar#23352, #23441, #23447).
    Stats (``keyHashRangeArrays``) print the snapshot's ranges per consumer, sorted and merged.
    """

    def __init__(self, version: PulsarVersion, points: int, key_range: HashRange, track_impacted: bool) -> None:
        super().__init__(version, points, key_range, track_impacted)
        self._key_range = key_range
        # position -> consumers at that point: [selected, *colliding in arrival order]
        self._entries: dict[int, list[ConsumerRef]] = {}
        self._names = NameIndexTracker()

    def _position(self, consumer: ConsumerRef, name_index: int, point: int) -> int:
        return reduce_hash(make_hash(ring_key(consumer.name, point, name_index)), self._key_range)

    def _add(self, consumer: ConsumerRef, ranges: Sequence[tuple[int, int]] | None) -> None:
        self._no_ranges_argument(ranges)
        for point in range(self._points_per_consumer):
            index = self._names.increase(consumer)
            position = self._position(consumer, index, point)
            at_point = self._entries.get(position)
            if at_point is None:
                self._entries[position] = [consumer]
                insort(self._ring, position)
            else:
                at_point.append(consumer)

    def _remove(self, consumer: ConsumerRef) -> None:
        index = self._names.index_of(consumer)
        if index < 0:
            return
        for point in range(self._points_per_consumer):
            position = self._position(consumer, index, point)
            at_point = self._entries[position]
            if at_point[0] == consumer:
                del at_point[0]  # the first colliding consumer, if any, takes over
            else:
                at_point[1:] = [c for c in at_point[1:] if c != consumer]
            if not at_point:
                del self._entries[position]
                self._ring_remove(position)
            self._names.decrease(consumer)

    def _build_table(self) -> list[ConsumerRef | None]:
        end = self._key_range[1]
        if end >= 1 << 20 or not self._ring:  # the classic 31-bit range: bisect instead of a table
            return []
        table: list[ConsumerRef | None] = [None] * (end + 1)
        previous = -1
        for position in self._ring:
            table[previous + 1 : position + 1] = [self._entries[position][0]] * (position - previous)
            previous = position
        table[previous + 1 :] = [self._entries[self._ring[0]][0]] * (end - previous)
        return table

    def _select_beyond_table(self, slot: int) -> ConsumerRef | None:
        if not self._ring:
            return None
        i = bisect_left(self._ring, slot)
        return self._entries[self._ring[i if i < len(self._ring) else 0]][0]

    def _snapshot(self) -> AssignmentSnapshot:
        if not self._ring:
            return AssignmentSnapshot()
        start, end = self._key_range
        entries = self._entries
        runs: list[list[object]] = []  # [start, end, consumer]; consecutive points of one consumer join
        previous: ConsumerRef | None = None
        selected = [entries[position][0] for position in self._ring]
        for position, consumer in zip(self._ring, selected, strict=True):
            if consumer is previous:
                runs[-1][1] = position
            else:
                runs.append([start, position, consumer])
                previous = consumer
            start = position + 1
        last = self._ring[-1]
        if last != end:  # wrap-around: the tail belongs to the first point's consumer
            if selected[0] is previous:
                runs[-1][1] = end
            else:
                runs.append([last + 1, end, selected[0]])
        return AssignmentSnapshot(tuple(map(HashRangeAssignment._make, runs)))

    def _reported_ranges(self) -> dict[ConsumerRef, list[HashRange]]:
        return self._current_snapshot().ranges_by_consumer()

    def _copy_state_into(self, clone: Selector) -> None:
        assert isinstance(clone, ConsistentHashingSelector)
        clone._ring = list(self._ring)
        clone._entries = {position: list(at_point) for position, at_point in self._entries.items()}
        clone._names = self._names.copy()


class NameIndexRingSelector(_RingSelector):
    """Pulsar 3.0.7+ and 3.3.2+: name-indexed points on the 31-bit ring; a later point replaces an earlier one.

    Follows the 3.x ``ConsistentHashingStickyKeyConsumerSelector`` after apache/pulsar#23327.  A replaced
    consumer loses that point's name-index reference; when it loses its last point its index is released and it
    leaves the tracker (its later removal then changes nothing).  Stats (``keyHashRanges``) print one range per
    ring point, starting at 0, unmerged, and append the wrap-around range ``[lastPoint + 1, 2**31 - 2]`` to the
    first point's consumer (so slot ``2**31 - 1`` appears in no printed range although ``select`` gives it to
    that consumer).  ``testGetConsumerKeyHashRanges`` of every release of the era read (3.0.7 - 3.0.14, 3.3.2 -
    3.3.9) expects that start, and 3.0.15 - 3.0.17 changed neither the selector nor its test (release notes); a
    ``lastPoint + 2`` variant of the code exists in Pulsar's history but in no release whose test was read (see
    ``tests/unit/pulsar_vectors.py``).
    """

    def __init__(self, version: PulsarVersion, points: int) -> None:
        super().__init__(version, points, None, False)
        self._owner: dict[int, ConsumerRef] = {}
        self._names = NameIndexTracker()
        self._owners_in_ring_order: list[ConsumerRef] | None = None

    def _position(self, consumer: ConsumerRef, name_index: int, point: int) -> int:
        return make_hash(ring_key(consumer.name, point, name_index))

    def _add(self, consumer: ConsumerRef, ranges: Sequence[tuple[int, int]] | None) -> None:
        self._no_ranges_argument(ranges)
        for point in range(self._points_per_consumer):
            index = self._names.increase(consumer)
            position = self._position(consumer, index, point)
            replaced = self._owner.get(position)
            self._owner[position] = consumer
            if replaced is None:
                insort(self._ring, position)
            else:
                self._names.decrease(replaced)
        self._owners_in_ring_order = None

    def _remove(self, consumer: ConsumerRef) -> None:
        index = self._names.index_of(consumer)
        if index >= 0:
            for point in range(self._points_per_consumer):
                position = self._position(consumer, index, point)
                if self._owner.get(position) == consumer:
                    del self._owner[position]
                    self._ring_remove(position)
                    self._names.decrease(consumer)
        self._owners_in_ring_order = None

    def _build_table(self) -> list[ConsumerRef | None]:
        return []

    def select(self, slot: int) -> ConsumerRef | None:
        if slot < 0:
            return super().select(slot)  # raises: slots are non-negative
        owners = self._owners_in_ring_order
        if owners is None:
            owners = self._owners_in_ring_order = [self._owner[p] for p in self._ring]
        if not owners:
            return None
        i = bisect_left(self._ring, slot)
        return owners[i] if i < len(owners) else owners[0]

    def _select_beyond_table(self, slot: int) -> ConsumerRef | None:
        return self.select(slot)

    def _reported_ranges(self) -> dict[ConsumerRef, list[HashRange]]:
        result: dict[ConsumerRef, list[HashRange]] = {}
        if not self._ring:
            return result
        start = 0
        last_key = 0
        for position in self._ring:
            result.setdefault(self._owner[position], []).append((start, position))
            last_key = position
            start = _java_int(position + 1)
        if last_key != _INT_MAX - 1:
            result[self._owner[self._ring[0]]].append((_java_int(last_key + 1), _INT_MAX - 1))
        return result

    def _copy_state_into(self, clone: Selector) -> None:
        assert isinstance(clone, NameIndexRingSelector)
        clone._ring = list(self._ring)
        clone._owner = dict(self._owner)
        clone._names = self._names.copy()
        clone._owners_in_ring_order = None


class CollisionListRingSelector(_RingSelector):
    """Pulsar 2.8 to 3.0.6 / 3.3.1: every colliding consumer stays on the point; ``select`` picks by hash.

    Follows ``ConsistentHashingStickyKeyConsumerSelector`` from apache/pulsar#8396 to #23327.  A point's consumers
    are kept sorted by name (stable: equal names in arrival order) and ``select(h)`` returns
    ``list[h % len(list)]``, so a join or leave at a shared point moves keys between *other* consumers
    (apache/pulsar#23315).  Ring keys have the NUL separator from 3.0.3 / 3.2.1 (apache/pulsar#22053).  Stats
    (``keyHashRanges``) give every consumer on a point that point's range, start at 0 and omit the wrap-around
    range (apache/pulsar#23321).  Before 2.9.3 a leaving consumer took every consumer *of its name* off its points
    (apache/pulsar#13991): the others of that name stay members but own nothing.
    """

    def __init__(self, version: PulsarVersion, points: int, nul_separator: bool) -> None:
        super().__init__(version, points, None, False)
        self._nul_separator = nul_separator
        self._remove_by_name = not version.has(CONSISTENT_HASHING_REMOVE_BY_IDENTITY)
        self._at: dict[int, list[ConsumerRef]] = {}
        self._lists_in_ring_order: list[list[ConsumerRef]] | None = None

    def _position(self, consumer: ConsumerRef, point: int) -> int:
        return make_hash(ring_key(consumer.name, point, nul_separator=self._nul_separator))

    def _add(self, consumer: ConsumerRef, ranges: Sequence[tuple[int, int]] | None) -> None:
        self._no_ranges_argument(ranges)
        for point in range(self._points_per_consumer):
            position = self._position(consumer, point)
            at_point = self._at.get(position)
            if at_point is None:
                self._at[position] = [consumer]
                insort(self._ring, position)
            elif consumer not in at_point:
                at_point.append(consumer)
                at_point.sort(key=lambda c: c.name)
        self._lists_in_ring_order = None

    def _remove(self, consumer: ConsumerRef) -> None:
        for point in range(self._points_per_consumer):
            position = self._position(consumer, point)
            at_point = self._at.get(position)
            if at_point is None:
                continue
            if self._remove_by_name:  # ``removeIf(c -> c.consumerName().equals(consumer.consumerName()))``
                at_point[:] = [c for c in at_point if c.name != consumer.name]
            else:
                at_point[:] = [c for c in at_point if c != consumer]
            if not at_point:
                del self._at[position]
                self._ring_remove(position)
        self._lists_in_ring_order = None

    def _build_table(self) -> list[ConsumerRef | None]:
        return []

    def select(self, slot: int) -> ConsumerRef | None:
        lists = self._lists_in_ring_order
        if lists is None:
            lists = self._lists_in_ring_order = [self._at[p] for p in self._ring]
        if not lists:
            return None
        if slot < 0:
            return super().select(slot)  # raises: slots are non-negative
        i = bisect_left(self._ring, slot)
        at_point = lists[i] if i < len(lists) else lists[0]
        return at_point[slot % len(at_point)]

    def _select_beyond_table(self, slot: int) -> ConsumerRef | None:
        return self.select(slot)

    def _reported_ranges(self) -> dict[ConsumerRef, list[HashRange]]:
        result: dict[ConsumerRef, list[HashRange]] = {}
        start = 0
        for position in self._ring:
            for consumer in self._at[position]:
                result.setdefault(consumer, []).append((start, position))
            start = position + 1
        return result

    def _copy_state_into(self, clone: Selector) -> None:
        assert isinstance(clone, CollisionListRingSelector)
        clone._ring = list(self._ring)
        clone._at = {position: list(at_point) for position, at_point in self._at.items()}
        clone._lists_in_ring_order = None
