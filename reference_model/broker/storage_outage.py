"""Storage that fails for a while: the writes of a topic whose ledger cannot be written (BookKeeper down).

Follows ``PersistentTopic.publishMessage`` / ``addComplete`` / ``addFailed`` / ``decrementPendingWriteOpsAndCheck``
(unchanged from 2.10 to 4.0 in what is modelled here) with ``MessageDeduplication``:

* a send that deduplication judges ``NotDup`` pushes its sequence id *before* the write, and the write is then in
  flight: while the storage is down it neither completes nor fails at once;
* a resend of an id still in flight is ``Unknown`` (above the persisted id, at or below the pushed one): the
  producer gets ``PersistenceError`` and nothing is written a second time (``testIsDuplicateWithFailure``);
* after ``fail_after_ms`` (the ledger's add times out, or the ensemble cannot be formed) the managed ledger fails
  every write in flight: each producer gets ``PersistenceError``, the topic is fenced, and once no write is in
  flight (at once here: they fail together) ``resetHighestSequenceIdPushed`` sets pushed := persisted and the
  topic is unfenced, so the client's resend of a failed id is accepted and written once;
* when the storage comes back before that, the writes in flight complete, in order, as if they had been slow.

The publish path sees one attribute (``ServerTopic.outage``, ``None`` while storage is up), so the common path
pays one check. The outcome of an in-flight write reaches the producer through :class:`WritePending`'s
listeners, the only way the synchronous model publishes something whose outcome comes later.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from reference_model.broker.errors import BrokerPersistenceError
from reference_model.errors import InvalidArgument

if TYPE_CHECKING:
    from reference_model.broker.clock import SimClock, Timer
    from reference_model.storage.entry import Entry, MessageMetadata, SingleMessage

__all__ = ["PendingWrite", "StorageOutage", "WriteListener", "WritePending", "check_fail_after_ms"]

#: ``listener(error, entry)``: exactly one of them is ``None``.
WriteListener = Callable[[BrokerPersistenceError | None, "Entry | None"], None]


def check_fail_after_ms(value: object) -> int:
    """``value`` if it is an int >= 0 (a bool is not), else one :class:`InvalidArgument` line naming it."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidArgument(f"Expected an int >= 0 for fail_after_ms but got fail_after_ms={value!r}.")
    return value


@dataclass(slots=True)
class PendingWrite:
    """One entry accepted for writing (pushed) while the storage was down, waiting for its outcome."""

    metadata: MessageMetadata
    messages: tuple[SingleMessage, ...]
    dedup_name: str
    #: ``(replicator, source position)`` for a replicated message judged by its source position, else ``None``
    source: tuple[str, tuple[int, int]] | None = None
    listeners: list[WriteListener] = field(default_factory=list)

    def settle(self, error: BrokerPersistenceError | None, entry: Entry | None) -> None:
        for listener in self.listeners:
            listener(error, entry)


class WritePending(Exception):
    """Raised by ``ServerTopic.publish`` for a write now in flight; the caller adds a listener to ``write``."""

    def __init__(self, write: PendingWrite) -> None:
        super().__init__("write in flight")
        self.write = write


class StorageOutage:
    """The writes in flight of one topic while its storage is down, and the timer that fails them.

    ``fail_after_ms`` counts from the first write in flight (the oldest add's timeout fails the ledger, and the
    managed ledger fails every add queued behind it). ``on_failed`` runs after the writes failed and before their
    producers hear it (the topic resets deduplication's pushed ids there).
    """

    def __init__(self, clock: SimClock, fail_after_ms: int, on_failed: Callable[[], None]) -> None:
        self._clock = clock
        self.fail_after_ms = check_fail_after_ms(fail_after_ms)
        self._on_failed = on_failed
        self.in_flight: list[PendingWrite] = []
        self._timer: Timer | None = None
        self.failed_writes = 0

    def add(self, write: PendingWrite) -> None:
        self.in_flight.append(write)
        if self._timer is None:
            self._timer = self._clock.call_later(self.fail_after_ms, self.fail_all)

    def fail_all(self) -> None:
        """The ledger failed: every write in flight fails (``addFailed``), then pushed := persisted."""
        if self._timer is not None:
            self._timer.cancel()  # a no-op when it is the timer that runs this
            self._timer = None
        failed, self.in_flight = self.in_flight, []
        if not failed:
            return
        self.failed_writes += len(failed)
        self._on_failed()
        for write in failed:
            error = BrokerPersistenceError(
                f"[{write.metadata.producer_name}] sequence id {write.metadata.sequence_id}: the ledger write"
                " failed (storage unavailable)"
            )
            write.settle(error, None)

    def end(self) -> list[PendingWrite]:
        """The storage is back: stop the timer and hand back the writes still in flight, oldest first."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        pending, self.in_flight = self.in_flight, []
        return pending
