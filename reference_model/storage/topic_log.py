"""The append-only log of a topic: a sequence of ledgers, each a sequence of entries.

Follows ``ManagedLedgerImpl`` as far as positions are observable: entry ids start at 0 in each ledger, and a
topic that is reloaded (broker restart) continues in a *new* ledger with a higher id, so message ids after a
restart have a new ledger id. Only what is observable is modelled.

Trimming (:meth:`TopicLog.trim_through`, used when the broker is configured to trim consumed entries) forgets
the entries every cursor has marked deleted, as ``ManagedLedgerImpl`` deletes consumed ledgers when a topic has
no retention: nothing reads them again (a replay, a redelivery and a dispatcher read all start above the
mark-delete position). The log then starts after the trimmed position, which becomes :attr:`earliest`.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator, Mapping

from reference_model.errors import ModelStateError
from reference_model.storage.entry import Entry, MessageMetadata, SingleMessage
from reference_model.storage.position import Position

__all__ = ["TopicLog"]

# ``Position(...)`` and ``Entry(...)`` without ``type.__call__`` (one of each per entry appended)
_new_tuple: Callable[..., Position] = tuple.__new__
_new_entry: Callable[..., Entry] = Entry.__new__


class TopicLog:
    """Every entry of one topic, in position order, with O(log n) lookups by position.

    ``ledger_id`` is the id of the first ledger. ``earliest`` is the position *before* the first entry (the
    mark-delete position of a subscription created at ``Earliest``).
    """

    __slots__ = ("_earliest", "_entries", "_index", "_last", "_ledger_id", "_next", "_positions", "name")

    def __init__(self, name: str, ledger_id: int) -> None:
        self.name = name
        self._ledger_id = ledger_id
        #: the position the next entry gets (also "the position after the end" a caught-up cursor reads from)
        self._next = Position(ledger_id, 0)
        self._entries: list[Entry] = []
        self._positions: list[Position] = []
        self._index: dict[tuple[int, int], int] = {}
        self._earliest = Position(ledger_id, -1)
        #: the last entry's position (``None`` while empty): read on every dispatch, so kept, not computed
        self._last: Position | None = None

    # -- writing -------------------------------------------------------------------------------------------
    def append(
        self,
        metadata: MessageMetadata,
        messages: tuple[SingleMessage, ...],
        sticky_key: bytes,
        marker_payload: Mapping[str, object] | None = None,
    ) -> Entry:
        """Persist one entry at the next position of the current ledger and return it."""
        position = self._next
        self._next = _new_tuple(Position, (position[0], position[1] + 1))
        entry = _new_entry(Entry, position, metadata, messages, sticky_key, marker_payload)
        entries = self._entries
        self._index[position] = len(entries)
        entries.append(entry)
        self._positions.append(position)
        self._last = position
        return entry

    def trim_through(self, position: tuple[int, int], *, min_batch: int = 0) -> int:
        """Forget every entry at or below ``position``; returns how many were dropped.

        The caller passes a position every cursor has marked deleted. The entries are dropped in batches: only
        when at least ``min_batch`` and at least as many as are kept can go, so that the cost of re-indexing
        what is kept is paid once per that many entries (amortised O(1) per entry); otherwise nothing happens
        and 0 is returned. Which entries are dropped is a function of ``position`` and the log alone.
        """
        drop = self.index_after(position)
        if drop <= 0 or drop < min_batch or drop < len(self._entries) - drop:
            return 0
        self._earliest = self._positions[drop - 1]
        del self._entries[:drop]
        del self._positions[:drop]
        positions = self._positions
        self._index = dict(zip(positions, range(len(positions)), strict=True))
        return drop

    def roll_ledger(self, new_ledger_id: int) -> None:
        """Continue in a new ledger (``ManagedLedgerImpl`` opens one when the topic is loaded again)."""
        if new_ledger_id <= self._ledger_id:
            raise ModelStateError(
                f"Ledger ids only grow: topic {self.name!r} is at ledger {self._ledger_id},"
                f" cannot roll to {new_ledger_id}."
            )
        self._ledger_id = new_ledger_id
        self._next = Position(new_ledger_id, 0)

    # -- reading -------------------------------------------------------------------------------------------
    @property
    def current_ledger_id(self) -> int:
        return self._ledger_id

    @property
    def earliest(self) -> Position:
        """The position before the first entry: where a subscription created at ``Earliest`` starts.

        After a trim, the last entry trimmed (the first entry kept comes after it).
        """
        return self._earliest

    @property
    def last_position(self) -> Position | None:
        """The last added entry (``LastConfirmedEntry``), or ``None`` for an empty topic."""
        return self._last

    @property
    def latest(self) -> Position:
        """The position a subscription created at ``Latest`` marks deleted: the last entry, or ``earliest``."""
        return self._last if self._last is not None else Position(self._ledger_id, -1)

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[Entry]:
        return iter(self._entries)

    def __contains__(self, position: object) -> bool:
        return position in self._index

    def get(self, position: tuple[int, int]) -> Entry:
        """The entry at ``position``; raises :class:`ModelStateError` if there is none."""
        i = self._index.get(position)
        if i is None:
            raise ModelStateError(f"Topic {self.name!r} has no entry at position {position[0]}:{position[1]}.")
        return self._entries[i]

    def index_after(self, position: tuple[int, int]) -> int:
        """Index of the first entry strictly after ``position`` (which need not exist)."""
        i = self._index.get(position)
        if i is not None:
            return i + 1
        return bisect.bisect_right(self._positions, position)

    def index_at_or_after(self, position: tuple[int, int]) -> int:
        i = self._index.get(position)
        if i is not None:
            return i
        return bisect.bisect_left(self._positions, position)

    def position_after(self, position: tuple[int, int]) -> Position | None:
        """The first existing position strictly after ``position``, or ``None`` at the end of the log."""
        i = self.index_after(position)
        return self._positions[i] if i < len(self._positions) else None

    def next_valid_position(self, position: tuple[int, int]) -> Position:
        """``ManagedLedgerImpl.getNextValidPosition``: the next entry, or the position after the last one."""
        i = self.index_after(position)
        if i < len(self._positions):
            return self._positions[i]
        # past the end: the id the next entry will get (``last + 1`` in the current ledger, else its first id)
        return self._next

    def read_from(self, position: tuple[int, int], max_entries: int) -> list[Entry]:
        """Up to ``max_entries`` entries at or after ``position``, in order."""
        i = self.index_at_or_after(position)
        return self._entries[i : i + max_entries]

    def entries_after(self, position: tuple[int, int], limit: int | None = None) -> list[Entry]:
        """Entries strictly after ``position``, oldest first (the replication hook reads with this)."""
        i = self.index_after(position)
        return self._entries[i:] if limit is None else self._entries[i : i + limit]

    def count_after(self, position: tuple[int, int]) -> int:
        """Number of entries strictly after ``position``."""
        return len(self._entries) - self.index_after(position)

    def count_between(self, low_exclusive: tuple[int, int], high_inclusive: tuple[int, int]) -> int:
        """Entries ``p`` with ``low < p <= high`` (``ManagedLedgerImpl.getNumberOfEntries(openClosed)``)."""
        lo = self.index_after(low_exclusive)
        hi = bisect.bisect_right(self._positions, high_inclusive)
        return max(0, hi - lo)

    def __repr__(self) -> str:
        return f"TopicLog({self.name!r}, entries={len(self)}, ledger={self._ledger_id})"
