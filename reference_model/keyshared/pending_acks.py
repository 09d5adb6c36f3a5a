"""The entries a consumer has been sent and has not acknowledged, with the slot each was routed by.

Follows ``PendingAcksMap`` (PIP-379, apache/pulsar#23352): ``position -> (batch_size, sticky_key_hash)``, one
record per dispatched *entry* (a batch is one record). A record is added only through :meth:`add_if_allowed`
(the dispatcher's send-time re-check decides, ``addPendingAckIfAllowed``) and the map refuses additions once
closed (a consumer being removed). It is a plain container: the dispatcher keeps the draining-hashes tracker
in step with it, as Pulsar's ``PendingAcksRemoveHandler`` does.
"""

from __future__ import annotations

from collections.abc import Iterator

from reference_model.storage.position import Position

__all__ = ["PendingAck", "PendingAcks"]

#: ``(position, batch_size, slot)``; slot 0 means "no hash known" (``STICKY_KEY_HASH_NOT_SET``).
PendingAck = tuple[Position, int, int]


class PendingAcks:
    """Pending acknowledgements of one consumer; ``unacked_messages`` is the sum of batch sizes."""

    __slots__ = ("_acks", "closed", "unacked_messages")

    def __init__(self) -> None:
        self._acks: dict[Position, tuple[int, int]] = {}
        self.closed = False
        self.unacked_messages = 0

    def add_if_allowed(self, position: Position, batch_size: int, slot: int) -> bool:
        """Record a sent entry; ``False`` if the map is closed (the consumer is being removed)."""
        if self.closed:
            return False
        previous = self._acks.get(position)
        if previous is not None:
            self.unacked_messages -= previous[0]
        self._acks[position] = (batch_size, slot)
        self.unacked_messages += batch_size
        return True

    def remove(self, position: Position) -> tuple[int, int] | None:
        """Remove one record and return ``(batch_size, slot)``, or ``None`` if it was not pending here."""
        record = self._acks.pop(position, None)
        if record is not None:
            self.unacked_messages -= record[0]
        return record

    def get(self, position: Position) -> tuple[int, int] | None:
        return self._acks.get(position)

    def __contains__(self, position: object) -> bool:
        return position in self._acks

    def __len__(self) -> int:
        return len(self._acks)

    def __iter__(self) -> Iterator[PendingAck]:
        """Records in position order (``PendingAcksMap`` is a sorted map)."""
        for position in sorted(self._acks):
            batch_size, slot = self._acks[position]
            yield position, batch_size, slot

    def drain(self, *, close: bool) -> list[PendingAck]:
        """Remove and return every record in position order (``forEachAndClose`` / ``forEachAndClear``)."""
        if close:
            self.closed = True
        records = list(self)
        self._acks.clear()
        self.unacked_messages = 0
        return records

    def remove_all_up_to(self, position: Position) -> list[PendingAck]:
        """Remove records at or below ``position`` (mark-delete moved past them: skip, expiry, cumulative ack)."""
        gone = [p for p in self._acks if p <= position]
        out: list[PendingAck] = []
        for p in sorted(gone):
            batch_size, slot = self._acks.pop(p)
            self.unacked_messages -= batch_size
            out.append((p, batch_size, slot))
        return out

    def __repr__(self) -> str:
        return f"PendingAcks({len(self)} entries, {self.unacked_messages} messages, closed={self.closed})"
