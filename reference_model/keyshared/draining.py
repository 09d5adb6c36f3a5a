"""Draining hashes: a hash that moved to another consumer stays with its old consumer until its pending
entries there are acknowledged.

Follows ``DrainingHashesTracker`` (PIP-379, apache/pulsar#23352, stats apache/pulsar#23429):

* ``add_entry(c, slot)`` when a membership change takes ``slot`` away from ``c`` while ``c`` has pending entries
  of it: one reference per pending *entry*. A second consumer for the same slot is impossible
  (``IllegalStateException`` there, :class:`ModelStateError` here); slot 0 is "no hash" and is refused.
* ``reduce_ref_count(c, slot, closing)`` when ``c`` acknowledges (or loses, on close) one such entry; at 0 the
  entry is removed and, if anyone was blocked by it and the consumer is not closing, the dispatcher is told the
  hash is unblocked (coalesced to one ``-1`` notification inside a batch).
* ``should_block(c, slot)``: no entry -> dispatch; an entry of ``c`` itself (the hash came back to its original
  consumer) -> removed lazily *whatever its reference count*, dispatch; an entry of another consumer -> count
  a blocked attempt and block.

Per-consumer stats (``drainingHashes``, ``drainingHashesClearedTotal``, ...) are kept as Pulsar keeps them.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from reference_model.errors import InvalidArgument, ModelStateError

__all__ = ["DrainingHashEntry", "DrainingHashesTracker"]

C = TypeVar("C", bound=Hashable)

#: The hash value Pulsar reserves for "not set" (``StickyKeyConsumerSelector.STICKY_KEY_HASH_NOT_SET``).
_NOT_SET = 0


@dataclass(slots=True, eq=False)
class DrainingHashEntry(Generic[C]):
    """One draining hash: the consumer that still holds it, its pending entries and blocked attempts."""

    consumer: C
    ref_count: int = 0
    blocked_count: int = 0


@dataclass(slots=True, eq=False)
class _ConsumerDrainingStats:
    hashes: set[int] = field(default_factory=set)
    cleared_total: int = 0


class DrainingHashesTracker(Generic[C]):
    """``slot -> DrainingHashEntry``; ``on_unblocked(slot)`` is called with ``-1`` for coalesced batches."""

    __slots__ = ("_batch_level", "_entries", "_on_unblocked", "_stats", "_unblocked_while_batching")

    def __init__(self, on_unblocked: Callable[[int], None] | None = None) -> None:
        self._entries: dict[int, DrainingHashEntry[C]] = {}
        self._stats: dict[C, _ConsumerDrainingStats] = {}
        self._on_unblocked = on_unblocked
        self._batch_level = 0
        self._unblocked_while_batching = False

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, slot: object) -> bool:
        return slot in self._entries

    def get_entry(self, slot: int) -> DrainingHashEntry[C] | None:
        return self._entries.get(slot) if slot else None

    def slots(self) -> list[int]:
        return sorted(self._entries)

    # -- changes -------------------------------------------------------------------------------------------
    def add_entry(self, consumer: C, slot: int) -> None:
        """One more pending entry of ``slot`` at ``consumer`` must be acknowledged before ``slot`` moves."""
        if slot == _NOT_SET:
            raise InvalidArgument("Sticky hash cannot be 0: slot 0 is Pulsar's 'hash not set' marker.")
        entry = self._entries.get(slot)
        if entry is None:
            entry = DrainingHashEntry(consumer)
            self._entries[slot] = entry
            stats = self._stats.get(consumer)
            if stats is None:
                stats = self._stats[consumer] = _ConsumerDrainingStats()
            stats.hashes.add(slot)
        elif entry.consumer is not consumer:
            raise ModelStateError(
                f"Consumer {entry.consumer!r} is already draining hash {slot}; the same hash cannot drain at"
                f" {consumer!r} too (DrainingHashesTracker.addEntry IllegalStateException)."
            )
        entry.ref_count += 1

    def reduce_ref_count(self, consumer: C, slot: int, *, closing: bool) -> bool:
        """One pending entry of ``slot`` at ``consumer`` is gone; return whether the hash stopped draining."""
        if slot == _NOT_SET:
            return False
        entry = self._entries.get(slot)
        if entry is None:
            return False
        if entry.consumer is not consumer:
            raise ModelStateError(
                f"Consumer {entry.consumer!r} is draining hash {slot}, but {consumer!r} released a pending entry"
                " of it (DrainingHashesTracker.reduceRefCount IllegalStateException)."
            )
        entry.ref_count -= 1
        if entry.ref_count > 0:
            return False
        del self._entries[slot]
        self._clear_stats(consumer, slot)
        if not closing and entry.blocked_count > 0:
            if self._batch_level > 0:
                self._unblocked_while_batching = True
            elif self._on_unblocked is not None:
                self._on_unblocked(slot)
        return True

    def should_block(self, consumer: C, slot: int) -> bool:
        """Whether dispatching ``slot`` to ``consumer`` must wait (and count the attempt if so)."""
        if slot == _NOT_SET:
            return False
        entry = self._entries.get(slot)
        if entry is None:
            return False
        if entry.consumer is consumer:
            # the hash came back to the consumer that holds it: nothing to drain any more
            del self._entries[slot]
            self._clear_stats(consumer, slot)
            return False
        entry.blocked_count += 1
        return True

    def _clear_stats(self, consumer: C, slot: int) -> None:
        stats = self._stats.get(consumer)
        if stats is not None:
            stats.hashes.discard(slot)
            stats.cleared_total += 1

    def start_batch(self) -> None:
        self._batch_level += 1

    def end_batch(self) -> None:
        self._batch_level -= 1
        if self._batch_level == 0 and self._unblocked_while_batching:
            self._unblocked_while_batching = False
            if self._on_unblocked is not None:
                self._on_unblocked(-1)

    def clear(self) -> None:
        self._entries.clear()
        self._stats.clear()

    def consumer_removed(self, consumer: C) -> None:
        self._stats.pop(consumer, None)

    # -- stats ---------------------------------------------------------------------------------------------
    def consumer_stats(self, consumer: C) -> dict[str, Any]:
        """``drainingHashesCount``, ``drainingHashesClearedTotal``, ``drainingHashesUnackedMessages`` and
        ``drainingHashes`` (``[{"hash", "unackMsgs", "blockedAttempts"}]``, ascending hash) of one consumer."""
        stats = self._stats.get(consumer)
        hashes: list[dict[str, int]] = []
        unacked = 0
        if stats is not None:
            for slot in sorted(stats.hashes):
                entry = self._entries.get(slot)
                if entry is None:
                    continue
                hashes.append({"hash": slot, "unackMsgs": entry.ref_count, "blockedAttempts": entry.blocked_count})
                unacked += entry.ref_count
        return {
            "drainingHashesCount": len(hashes),
            "drainingHashesClearedTotal": stats.cleared_total if stats is not None else 0,
            "drainingHashesUnackedMessages": unacked,
            "drainingHashes": hashes,
        }

    def __repr__(self) -> str:
        return f"DrainingHashesTracker({len(self)} draining hashes)"
