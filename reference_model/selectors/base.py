"""The interface every sticky-key selector offers, and the bookkeeping they share.

A selector (Pulsar's ``StickyKeyConsumerSelector``) decides which consumer of a Key_Shared subscription receives
the entries of a given hash.  The subclasses reproduce one Pulsar class each, per era; this base class keeps the
membership (join order, one member per ``consumer_id``), turns membership changes into
:class:`~reference_model.selectors.impacted.ImpactedRanges` the way Pulsar 4.0 does (snapshot before, snapshot
after, :func:`~reference_model.selectors.impacted.resolve_impacted`), and serves :meth:`Selector.select` from a
lookup table that is rebuilt lazily after the membership changed.
"""

from __future__ import annotations

import copy as _copy
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import ClassVar

from reference_model.errors import InvalidArgument, ModelStateError
from reference_model.hashing import HASH_MASK, make_hash, reduce_hash
from reference_model.selectors.consumer_ref import ConsumerRef
from reference_model.selectors.impacted import AssignmentSnapshot, HashRange, ImpactedRanges, resolve_impacted
from reference_model.versions import PIP_379, STATS_RANGES_BY_CONSUMER, PulsarVersion

__all__ = ["Selector"]


class Selector(ABC):
    """A Key_Shared sticky-key consumer selector of one Pulsar version.

    Build one with :func:`reference_model.selectors.make_selector`.  Slots are what :meth:`slot_of` returns: the
    hash the version's dispatcher stores for an entry (4.x: reduced into :attr:`key_hash_range`; 3.x: the full
    31-bit hash, reduced inside ``select`` by the auto-split and sticky selectors, as in Pulsar).
    """

    #: The selector name (one of :data:`reference_model.hashing.SELECTOR_KINDS`).
    kind: ClassVar[str]

    def __init__(self, version: PulsarVersion, reduce_range: HashRange | None, track_impacted: bool) -> None:
        self._version = version
        # None: 3.x, the dispatcher keeps the full hash.  Else the 4.x getKeyHashRange().
        self._reduce_range = reduce_range
        self._members: dict[int, ConsumerRef] = {}
        self._track_impacted = track_impacted
        self._last_snapshot: AssignmentSnapshot | None = AssignmentSnapshot() if track_impacted else None
        self._table: list[ConsumerRef | None] | None = None

    # -- description ------------------------------------------------------------------------------------------

    @property
    def version(self) -> PulsarVersion:
        return self._version

    @property
    def key_hash_range(self) -> HashRange:
        """The inclusive range :meth:`slot_of` values fall in (4.x ``getKeyHashRange()``; 3.x the 31-bit hash)."""
        return (0, HASH_MASK) if self._reduce_range is None else self._reduce_range

    @property
    def tracks_impacted(self) -> bool:
        """Whether :meth:`add` and :meth:`remove` return :class:`ImpactedRanges` (PIP-379 draining needs them)."""
        return self._track_impacted

    def __repr__(self) -> str:
        members = ", ".join(repr(c) for c in self._members.values())
        return f"<{type(self).__name__} {self.kind} Pulsar {self._version} consumers=[{members}]>"

    # -- hashing ----------------------------------------------------------------------------------------------

    def slot_of_hash(self, hash_value: int) -> int:
        """The slot of a ``make_hash`` value (for callers that cache hashes per entry, as Pulsar does)."""
        return hash_value if self._reduce_range is None else reduce_hash(hash_value, self._reduce_range)

    def slot_of(self, key: bytes) -> int:
        """The slot this selector and version dispatch ``key`` (a sticky key) on."""
        return self.slot_of_hash(make_hash(key))

    # -- membership -------------------------------------------------------------------------------------------

    def consumers(self) -> list[ConsumerRef]:
        """The members, in join order."""
        return list(self._members.values())

    def __len__(self) -> int:
        return len(self._members)

    def __contains__(self, consumer: object) -> bool:
        return isinstance(consumer, ConsumerRef) and self._members.get(consumer.consumer_id) == consumer

    def add(self, consumer: ConsumerRef, ranges: Sequence[tuple[int, int]] | None = None) -> ImpactedRanges | None:
        """Add ``consumer`` (sticky: with its hash ``ranges``); return what existing consumers lost, if tracked.

        Raises :class:`~reference_model.errors.ConsumerAssignError` where Pulsar refuses the consumer (no range
        left to split, sticky range conflicts); the selector is then unchanged.
        """
        consumer = _check_consumer(consumer)
        if consumer.consumer_id in self._members:
            raise ModelStateError(
                f"{consumer!r} cannot join: consumer_id {consumer.consumer_id} already belongs to"
                f" {self._members[consumer.consumer_id]!r}. Give every consumer connection its own id."
            )
        self._add(consumer, ranges)
        self._members[consumer.consumer_id] = consumer
        self._table = None
        return self._after_change()

    def remove(self, consumer: ConsumerRef) -> ImpactedRanges | None:
        """Remove ``consumer``; a consumer that is not a member is ignored, as Pulsar ignores it."""
        consumer = _check_consumer(consumer)
        member = self._members.get(consumer.consumer_id)
        if member is not None and member != consumer:
            raise ModelStateError(
                f"Cannot remove {consumer!r}: consumer_id {consumer.consumer_id} belongs to {member!r}."
            )
        if member is not None:
            del self._members[consumer.consumer_id]
            self._remove(consumer)
            self._table = None
        return self._after_change()

    def _after_change(self) -> ImpactedRanges | None:
        if self._last_snapshot is None:
            return None
        after = self._snapshot()
        impacted = resolve_impacted(self._last_snapshot, after)
        self._last_snapshot = after
        return impacted

    # -- selection --------------------------------------------------------------------------------------------

    def select(self, slot: int) -> ConsumerRef | None:
        """The consumer that receives entries of ``slot``, or ``None`` (no consumer, or a sticky gap)."""
        table = self._table
        if table is None:
            table = self._table = self._build_table()
        if 0 <= slot < len(table):
            return table[slot]
        if slot < 0:
            raise InvalidArgument(f"Expected a non-negative slot but got slot={slot!r}; slots come from slot_of().")
        return self._select_beyond_table(slot)

    def select_key(self, key: bytes) -> ConsumerRef | None:
        """The consumer that receives entries whose sticky key is ``key``."""
        return self.select(self.slot_of(key))

    # -- reporting --------------------------------------------------------------------------------------------

    def ranges(self) -> dict[ConsumerRef, list[HashRange]]:
        """Every member's ranges exactly as this version's topic stats print them, members in join order.

        A member the broker prints no ranges for (for example a consumer that lost every ring point to
        collisions) maps to ``[]``.
        """
        reported = self._reported_ranges()
        if not self._version.has(STATS_RANGES_BY_CONSUMER):
            return self._ranges_by_name(reported)
        return {consumer: list(reported.get(consumer, ())) for consumer in self._members.values()}

    def _ranges_by_name(self, reported: dict[ConsumerRef, list[HashRange]]) -> dict[ConsumerRef, list[HashRange]]:
        """Before 2.8.2 / 2.9.0 the selectors keyed stats ranges by consumer *name* (apache/pulsar#12212): every
        consumer of a name shows the ranges of all of them, in hash order as the selector walked its map."""
        by_name: dict[str, list[HashRange]] = {}
        for consumer, ranges in reported.items():
            by_name.setdefault(consumer.name, []).extend(ranges)
        return {consumer: sorted(by_name.get(consumer.name, ())) for consumer in self._members.values()}

    def snapshot(self) -> AssignmentSnapshot:
        """Pulsar 4.0's ``ConsumerHashAssignmentsSnapshot`` of the current membership (4.x selectors only)."""
        if not self._version.has(PIP_379):
            raise InvalidArgument(
                f"Pulsar {self._version} has no ConsumerHashAssignmentsSnapshot (it arrived with PIP-379 in 4.0);"
                " use ranges() for what its stats print, or a 4.x version."
            )
        return self._current_snapshot()

    def _current_snapshot(self) -> AssignmentSnapshot:
        # Like Pulsar, a selector that tracks impacted ranges keeps the snapshot of its last change.
        return self._last_snapshot if self._last_snapshot is not None else self._snapshot()

    def copy(self) -> Selector:
        """An independent copy: later changes to either do not affect the other."""
        clone = _copy.copy(self)
        clone._members = dict(self._members)
        clone._table = None
        self._copy_state_into(clone)
        return clone

    # -- what subclasses provide ------------------------------------------------------------------------------

    @abstractmethod
    def _add(self, consumer: ConsumerRef, ranges: Sequence[tuple[int, int]] | None) -> None:
        """Insert ``consumer``; raise before changing anything if Pulsar would refuse it."""

    @abstractmethod
    def _remove(self, consumer: ConsumerRef) -> None:
        """Take out a member."""

    @abstractmethod
    def _build_table(self) -> list[ConsumerRef | None]:
        """``select`` answers for slots ``0 .. len(table) - 1``."""

    @abstractmethod
    def _select_beyond_table(self, slot: int) -> ConsumerRef | None:
        """``select`` for a slot past the table."""

    @abstractmethod
    def _reported_ranges(self) -> dict[ConsumerRef, list[HashRange]]:
        """The stats ranges per consumer (only consumers the broker prints ranges for)."""

    @abstractmethod
    def _snapshot(self) -> AssignmentSnapshot:
        """The 4.x snapshot (only called for 4.x selectors)."""

    @abstractmethod
    def _copy_state_into(self, clone: Selector) -> None:
        """Give ``clone`` (a shallow copy) its own copies of the mutable state."""

    def _no_ranges_argument(self, ranges: Sequence[tuple[int, int]] | None) -> None:
        if ranges is not None:
            raise InvalidArgument(
                f"The {self.kind} selector assigns hash ranges itself, but got ranges={ranges!r};"
                " only the sticky selector takes ranges."
            )


def _check_consumer(consumer: object) -> ConsumerRef:
    if not isinstance(consumer, ConsumerRef):
        raise InvalidArgument(
            f"Expected a ConsumerRef but got consumer={consumer!r} (type={type(consumer).__name__});"
            " build one with ConsumerRef(name, consumer_id)."
        )
    return consumer
