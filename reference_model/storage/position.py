"""A position in a topic: ``(ledger_id, entry_id)``, ordered as BookKeeper positions are.

Follows ``org.apache.bookkeeper.mledger.Position``: ledgers are ordered by id and entries within a ledger by
entry id, so a plain tuple comparison is the broker's ``compareTo``. A position is the id of one *entry* (one
non-batched message or one whole batch); the message id a client sees adds the batch index.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Position", "format_position"]


class Position(NamedTuple):
    """``(ledger_id, entry_id)``; ``entry_id == -1`` means "before the first entry of that ledger"."""

    ledger_id: int
    entry_id: int

    def __str__(self) -> str:
        return format_position(self)


def format_position(position: tuple[int, int] | None) -> str:
    """``"ledger:entry"``, the form Pulsar's stats print (``PositionImpl.toString``); ``""`` for ``None``."""
    if position is None:
        return ""
    return f"{position[0]}:{position[1]}"
