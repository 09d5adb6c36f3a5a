"""The broker's view of one connected consumer: permits, pending acks, unacked counts, and where to send.

Follows ``org.apache.pulsar.broker.service.Consumer``:

* ``permits`` is ``messagePermits``: raised by the client's ``Flow`` command, lowered by the number of
  *messages* in each entry sent (a batch of 10 costs 10 permits).
* ``unacked_messages`` counts messages in pending entries; at ``maxUnackedMessagesPerConsumer`` the consumer is
  blocked (permits that arrive meanwhile are parked in ``permits_while_blocked``) until acknowledgements bring it
  down to half the limit (``Consumer.flowPermits`` / ``removePendingAcks``).
* ``active`` is ``cnx().isActive()``: ``False`` once the consumer is being removed. A consumer whose client
  crashed stays active until the broker notices, and keeps receiving up to its permits meanwhile.
* ``stalled``: the client stopped reading its socket, so what the broker writes backs up unread (TCP
  back-pressure) while the consumer keeps its permits; ``writable`` is ``False`` while stalled on a broker that
  checks writability before dispatching (apache/pulsar#26630, 5.0.0), which then sends it nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from reference_model.keyshared.pending_acks import PendingAcks
from reference_model.selectors import ConsumerRef
from reference_model.storage.entry import Entry
from reference_model.storage.position import Position

__all__ = ["DispatchConsumer", "EntrySink"]

#: Where the broker writes an entry for a consumer: ``sink(entry, redelivery_count)`` (the connection).
EntrySink = Callable[[Entry, int], None]


def _drop(entry: Entry, redelivery_count: int) -> None:
    """A sink for consumers without a connection (unit tests of the dispatcher alone)."""


@dataclass(eq=False, slots=True)
class DispatchConsumer:
    """One consumer as the dispatcher tracks it; identity is the object (``ConsumerIdentityWrapper``)."""

    ref: ConsumerRef
    sink: EntrySink = _drop
    max_unacked_messages: int = 50000
    sticky_ranges: tuple[tuple[int, int], ...] | None = None
    permits: int = 0
    pending: PendingAcks = field(default_factory=PendingAcks)
    active: bool = True
    stalled: bool = False
    writable: bool = True
    blocked_on_unacked: bool = False
    permits_while_blocked: int = 0
    read_position_when_joining: Position | None = None
    msg_out_counter: int = 0
    entries_out_counter: int = 0
    message_ack_counter: int = 0
    msg_redeliver_counter: int = 0
    #: ``ref.consumer_id``, copied: read on every dispatch and acknowledgement
    consumer_id: int = field(init=False)

    def __post_init__(self) -> None:
        self.consumer_id = self.ref.consumer_id

    @property
    def name(self) -> str:
        return self.ref.name

    @property
    def unacked_messages(self) -> int:
        return self.pending.unacked_messages

    @property
    def avg_messages_per_entry(self) -> int:
        """Messages per entry sent so far, rounded (Pulsar keeps a moving average; 0 before the first send)."""
        if self.entries_out_counter == 0:
            return 0
        return round(self.msg_out_counter / self.entries_out_counter)

    def add_permits(self, n: int) -> bool:
        """A ``Flow`` of ``n`` permits; returns whether they reached the dispatcher (not parked while blocked)."""
        if self.max_unacked_messages > 0 and self.unacked_messages >= self.max_unacked_messages:
            self.blocked_on_unacked = True
        if self.blocked_on_unacked:
            self.permits_while_blocked += n
            return False
        self.permits += n
        return True

    def record_sent(self, entry: Entry) -> None:
        """Charge permits and counters for one entry written to the connection."""
        n = entry.batch_size
        self.permits -= n
        self.msg_out_counter += n
        self.entries_out_counter += 1
        max_unacked = self.max_unacked_messages
        if max_unacked > 0 and self.pending.unacked_messages >= max_unacked:
            self.blocked_on_unacked = True

    def unblock_for_redelivery(self) -> None:
        """``Consumer.redeliverUnacknowledgedMessages``: ``blockedConsumerOnUnackedMsgs = false`` and the permits
        received while blocked go back to the dispatcher, whatever is still unacknowledged."""
        self.blocked_on_unacked = False
        self.permits += self.permits_while_blocked
        self.permits_while_blocked = 0

    def maybe_unblock(self) -> bool:
        """After acks: unblock at half the limit and hand back parked permits; returns whether it unblocked."""
        if not self.blocked_on_unacked:
            return False
        if self.max_unacked_messages > 0 and self.unacked_messages > self.max_unacked_messages // 2:
            return False
        self.blocked_on_unacked = False
        self.permits += self.permits_while_blocked
        self.permits_while_blocked = 0
        return True

    def __repr__(self) -> str:
        return (
            f"DispatchConsumer({self.ref.name!r}#{self.ref.consumer_id}, permits={self.permits},"
            f" pending={len(self.pending)})"
        )
