"""A subscription's cursor: read position, mark-delete position and the individually deleted entries above it.

Follows ``ManagedCursorImpl``. The mark-delete position is the highest position up to which *every* entry is
acknowledged; acknowledgements above it are kept as "individually deleted" positions (the ack holes between
them are ``nonContiguousDeletedMessagesRanges`` in the stats). The read position is where the next normal read
starts; ``rewind`` moves it back to just after the mark-delete position. All of this survives a broker restart
(Pulsar persists the mark-delete position and the individually deleted ranges in the cursor ledger).
"""

from __future__ import annotations

from reference_model.storage.entry import Entry
from reference_model.storage.position import Position, format_position
from reference_model.storage.topic_log import TopicLog

__all__ = ["ManagedCursor"]


class ManagedCursor:
    """Positions of one subscription in one :class:`TopicLog`."""

    __slots__ = ("_deleted", "log", "mark_delete_position", "name", "read_position")

    def __init__(self, log: TopicLog, name: str, mark_delete_position: Position) -> None:
        self.log = log
        self.name = name
        self.mark_delete_position = mark_delete_position
        self.read_position = log.next_valid_position(mark_delete_position)
        self._deleted: set[Position] = set()

    # -- acknowledgement -----------------------------------------------------------------------------------
    def is_deleted(self, position: tuple[int, int]) -> bool:
        """Whether ``position`` is acknowledged (at or below mark-delete, or individually deleted)."""
        return position <= self.mark_delete_position or position in self._deleted

    def delete(self, position: Position) -> bool:
        """Individually acknowledge one entry; return whether the mark-delete position advanced."""
        if position <= self.mark_delete_position or position in self._deleted or position not in self.log._index:
            return False
        self._deleted.add(position)
        return self._advance_mark_delete()

    def mark_delete(self, position: Position) -> bool:
        """Cumulatively acknowledge everything up to ``position``; return whether mark-delete advanced."""
        if position <= self.mark_delete_position:
            return False
        self.mark_delete_position = position
        if self._deleted:
            self._deleted = {p for p in self._deleted if p > position}
        self._advance_mark_delete()
        return True

    def _advance_mark_delete(self) -> bool:
        log = self.log
        positions = log._positions
        md = self.mark_delete_position
        i = log._index.get(md)  # ``index_after(md)``
        i = i + 1 if i is not None else log.index_after(md)
        n = len(positions)
        deleted = self._deleted
        moved = False
        while i < n:
            position = positions[i]
            if position not in deleted:
                break
            deleted.discard(position)
            md = position
            moved = True
            i += 1
        if moved:
            self.mark_delete_position = md
        if moved or self.read_position <= md:
            first_unacked = positions[i] if i < n else log._next  # ``next_valid_position(md)``
            if self.read_position < first_unacked:
                self.read_position = first_unacked
        return moved

    # -- reading -------------------------------------------------------------------------------------------
    def rewind(self) -> None:
        """Move the read position back to the first unacknowledged entry (``ManagedCursorImpl.rewind``)."""
        self.read_position = self.log.next_valid_position(self.mark_delete_position)

    def seek(self, read_position: Position) -> None:
        self.read_position = read_position

    def has_more_entries(self) -> bool:
        last = self.log._last
        return last is not None and self.read_position <= last

    def read_entries(self, max_entries: int) -> list[Entry]:
        """A normal read: up to ``max_entries`` unacknowledged entries from the read position, which moves past them.

        Individually deleted entries are skipped, as ``asyncReadEntriesWithSkip`` does after a rewind.
        """
        out: list[Entry] = []
        if max_entries <= 0:
            return out
        log = self.log
        i = log._index.get(self.read_position)  # ``index_at_or_after``: usually the read position exists
        if i is None:
            i = log.index_at_or_after(self.read_position)
        start = i
        entries = log._entries
        n = len(entries)
        deleted = self._deleted
        md = self.mark_delete_position
        while i < n:
            entry = entries[i]
            i += 1
            pos = entry.position
            if pos <= md or (deleted and pos in deleted):
                continue
            out.append(entry)
            if len(out) >= max_entries:
                break
        if i > start:
            # ``next_valid_position`` of the last entry read: the next entry, or the position after the log's end
            self.read_position = log._positions[i] if i < n else log._next
        return out

    # -- numbers the stats print ---------------------------------------------------------------------------
    @property
    def individually_deleted(self) -> frozenset[Position]:
        return frozenset(self._deleted)

    def backlog(self) -> int:
        """Entries not yet acknowledged (``msgBacklog`` counts entries for non-batched topics)."""
        return self.log.count_after(self.mark_delete_position) - len(self._deleted)

    def backlog_messages(self) -> int:
        """Messages not yet acknowledged, counting each message of a batch."""
        return sum(
            e.batch_size for e in self.log.entries_after(self.mark_delete_position) if e.position not in self._deleted
        )

    def entries_since_first_not_acked(self) -> int:
        """``getNumberOfEntriesSinceFirstNotAckedMessage``: positions ``p`` with ``mark-delete < p <= read``.

        Pulsar counts the range ``(markDelete, readPosition]`` by entry-id arithmetic
        (``ManagedLedgerImpl.getNumberOfEntries``), so a read position past the last entry counts as one: one
        unacknowledged entry read by a consumer gives 2 (and a joiner is recorded then, ``> 1``).
        """
        md, read = self.mark_delete_position, self.read_position
        count = self.log.count_between(md, read)
        if read > md and read not in self.log:
            count += 1
        return count

    def deleted_ranges(self) -> list[tuple[Position, Position]]:
        """The individually deleted entries as open-closed ranges ``(before_first, last]``, as Pulsar prints them."""
        if not self._deleted:
            return []
        log = self.log
        ranges: list[tuple[Position, Position]] = []
        start_prev: Position | None = None
        prev_index = -2
        last: Position | None = None
        for pos in sorted(self._deleted):
            idx = log.index_at_or_after(pos)
            if idx != prev_index + 1 or last is None or start_prev is None:
                if last is not None and start_prev is not None:
                    ranges.append((start_prev, last))
                start_prev = log._positions[idx - 1] if idx > 0 else Position(pos[0], pos[1] - 1)
            last = pos
            prev_index = idx
        if last is not None and start_prev is not None:
            ranges.append((start_prev, last))
        return ranges

    def format_deleted_ranges(self) -> str:
        """``individuallyDeletedMessages`` of the internal stats, e.g. ``"[(3:4..3:6], (3:8..3:9]]"``."""
        body = ", ".join(f"({format_position(a)}..{format_position(b)}]" for a, b in self.deleted_ranges())
        return f"[{body}]"

    def __repr__(self) -> str:
        return (
            f"ManagedCursor({self.name!r}, markDelete={self.mark_delete_position},"
            f" read={self.read_position}, deleted={len(self._deleted)})"
        )
