"""What a geo-replicator reads and sends: the rules of ``GeoPersistentReplicator.replicateEntries``.

One replicator runs per (source cluster, remote cluster, topic). It reads the source topic in order and, per
entry:

1. a replicated-subscription marker that came *from this replicator's remote* (``replicated_from == remote``)
   is handed to the source cluster's controller (``checkReplicatedSubscriptionMarker``) — every replicator sees
   every marker, but only the one paired with the marker's origin acts on it;
2. an entry that was itself replicated into the source (``replicated_from`` set) is not sent on: messages travel
   only from the cluster where they were published;
3. an entry whose ``replicate_to`` does not list the remote is skipped (a SNAPSHOT marker stays local, a RESPONSE
   goes only to the cluster that asked);
4. everything else is sent to the remote, where it is appended with ``replicated_from = source``.

The model's replicator keeps its read position (durable in Pulsar: the ``pulsar.repl.<remote>`` cursor) and a
FIFO of entries in flight, each due ``delay`` after it was read. While the link is down nothing is read; entries
in flight are taken back and sent again, in order, when it comes up (the cursor rewinds to its mark-delete).

Two faults of the replicator's producer (``OneWayReplicatorDeduplicationTest``): with ``lose_receipts`` the remote
stores what arrives but the receipts never come back, so those entries stay unconfirmed and are sent again, with
the ones in flight, when the link drops (the producer's ``resendMessages`` after a reconnection); with
``repeat_window`` N > 0, every N-th send also writes the previous N sends again on the connection (the test's
injected repeated ``Send`` commands).  A deduplicating remote must store each entry once.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from reference_model.storage.entry import Entry

__all__ = ["ReplicatorAction", "ReplicatorState", "classify"]

Position = tuple[int, int]


class ReplicatorAction(Enum):
    """What a replicator does with one entry it read."""

    SEND = "send"
    MARKER_FROM_REMOTE = "marker-from-remote"  #: hand to the controller, then skip (it was replicated in)
    SKIP_REPLICATED = "skip-replicated"
    SKIP_NOT_FOR_REMOTE = "skip-not-for-remote"


def classify(entry: Entry, remote: str) -> ReplicatorAction:
    """The replicator rule for ``entry`` read by the replicator towards ``remote``."""
    metadata = entry.metadata
    if metadata.replicated_from is not None:
        if metadata.marker_type is not None and metadata.replicated_from == remote:
            return ReplicatorAction.MARKER_FROM_REMOTE
        return ReplicatorAction.SKIP_REPLICATED
    if metadata.replicate_to is not None and remote not in metadata.replicate_to:
        return ReplicatorAction.SKIP_NOT_FOR_REMOTE
    return ReplicatorAction.SEND


@dataclass(slots=True)
class ReplicatorState:
    """Progress of one replicator: the last entry read, entries in flight, entries to send again."""

    source: str
    remote: str
    topic: str
    read_after: Position
    in_flight: deque[tuple[int, Entry]] = field(default_factory=deque)
    resend: list[Entry] = field(default_factory=list)
    read_scheduled: bool = False
    #: the clock timer that delivers the head of ``in_flight`` (``None`` when none is armed)
    delivery_timer: Any = None
    sent: int = 0
    delivered: int = 0
    last_due_ns: int = 0
    #: the remote stores what arrives but the receipts are lost: delivered entries stay in ``unconfirmed``
    lose_receipts: bool = False
    unconfirmed: list[Entry] = field(default_factory=list)
    #: every ``repeat_window``-th send also writes the previous ``repeat_window`` sends again (0: off)
    repeat_window: int = 0
    repeat_buffer: list[Entry] = field(default_factory=list)

    def take_back_in_flight(self) -> None:
        """The link went down: whatever was in flight, and whatever arrived without a receipt, is sent again
        after it comes back (in order: the unconfirmed entries were sent first)."""
        self.resend.extend(self.unconfirmed)
        self.unconfirmed.clear()
        self.repeat_buffer.clear()
        self.resend.extend(entry for _, entry in self.in_flight)
        self.in_flight.clear()
        if self.delivery_timer is not None:
            self.delivery_timer.cancel()
            self.delivery_timer = None

    def stats(self) -> dict[str, object]:
        return {
            "readPosition": f"{self.read_after[0]}:{self.read_after[1]}",
            "inFlight": len(self.in_flight),
            "toResend": len(self.resend),
            "sent": self.sent,
            "delivered": self.delivered,
            "unconfirmed": len(self.unconfirmed),
        }
