"""The events of a delivery trace (trace format v1).

A trace is what the clients of one run observed, in observation order: one :class:`Event` per line of a
JSON Lines file (or one row of a Parquet file).  It is the only thing that passes from a run to the
checkers, so any stored trace can be checked again.  The full specification is ``docs/trace-format.md``.

Soundness rests on *when* events are recorded (see the format document): a ``receive`` is recorded after
the client handed the message to the application; ``ack``, ``nack``, ``redeliver``, ``close`` and
``crash`` are recorded *before* the client call is made.  An interval observed between the two therefore
lies inside the interval the broker saw, and an overlap seen in the trace happened at the broker.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

__all__ = [
    "CORE_FIELDS",
    "DEDUP_RECEIPT",
    "Event",
    "MsgId",
    "Op",
    "Result",
]


class Op(str, Enum):
    """What an event records.  The values are part of the trace format."""

    OPEN = "open"  #: a consumer subscribed (result ok) or failed to (fail)
    CLOSE = "close"  #: close() is about to be called on a consumer
    CRASH = "crash"  #: a consumer's connection is about to be cut without a close
    PUBLISH = "publish"  #: the outcome of one send
    RECEIVE = "receive"  #: the application got a message
    ACK = "ack"  #: acknowledge() is about to be called for one message
    NACK = "nack"  #: negative_acknowledge() is about to be called for one message
    REDELIVER = "redeliver"  #: redeliver_unacknowledged_messages() is about to be called
    FAULT = "fault"  #: an injected broker fault (restart, pause, ...)
    END = "end"  #: the run is over; ``drained`` says whether the subscription was seen drained
    #: the application moved a replicated subscription's consumer from cluster ``cluster`` to cluster ``to``
    FAILOVER = "failover"
    #: what the harness read of a replicated subscription on one cluster (``cluster``, ``backlog``)
    SNAPSHOT = "snapshot"
    #: the harness saw that the broker no longer has a crashed consumer (``consumer``: the handle it crashed)
    GONE = "gone"
    #: ``close()`` returned for a consumer (the broker answered the close): the close completed by ``t``
    CLOSED = "closed"
    #: a producer was created (result ok); ``seq``: the last sequence id the broker answered it on connect, as the
    #: client reports it right after (``producer.last_sequence_id()``); ``t0``: when the creation began
    PRODUCER_OPEN = "producer_open"
    #: the harness closed a producer and the close returned: the broker no longer has it (``t``: by then)
    PRODUCER_CLOSE = "producer_close"
    #: a reader of a dead-letter topic saw the message the client routed there (``topic``/``msg_id``: the original)
    DEAD_LETTER = "dead_letter"

    def __str__(self) -> str:
        return self.value


class Result(str, Enum):
    """An operation's outcome, as the client learnt it (Jepsen's ok / fail / info)."""

    OK = "ok"
    FAIL = "fail"
    INFO = "info"  #: the client could not learn the outcome (a timed-out send may or may not be stored)

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True, order=True)
class MsgId:
    """A broker message id ``ledger:entry:partition:batch_index``; -1 where absent.

    Ordering is topic-log order within one partition.  ``-1:-1:...`` is the broker's receipt for a send that
    deduplication dropped: the message was already stored under another id.
    """

    ledger: int
    entry: int
    partition: int = -1
    batch_index: int = -1

    @classmethod
    def parse(cls, text: str) -> MsgId:
        parts = text.split(":")
        if not 2 <= len(parts) <= 4:
            raise ValueError(f"expected msg_id 'ledger:entry:partition:batch_index' but got {text!r}")
        try:
            nums = [int(p) for p in parts]
        except ValueError:
            raise ValueError(
                f"expected integers in msg_id 'ledger:entry:partition:batch_index' but got {text!r}"
            ) from None
        while len(nums) < 4:
            nums.append(-1)
        return cls(*nums)

    @property
    def is_dedup_receipt(self) -> bool:
        """True for the ``-1:-1`` receipt a broker gives a deduplicated send."""
        return self.ledger == -1 and self.entry == -1

    def __str__(self) -> str:
        return f"{self.ledger}:{self.entry}:{self.partition}:{self.batch_index}"


DEDUP_RECEIPT = MsgId(-1, -1, -1, -1)

#: Core fields in the order they are written.  Extensions follow, sorted by name.
CORE_FIELDS: tuple[str, ...] = (
    "i",
    "t",
    "op",
    "topic",
    "subscription",
    "consumer",
    "producer",
    "key",
    "msg_id",
    "seq",
    "uid",
    "result",
    "redelivery_count",
    "drained",
)


@dataclass(frozen=True, slots=True)
class Event:
    """One observed event.  ``None`` fields are absent from the written line."""

    i: int
    t: int
    op: Op
    topic: str | None = None
    subscription: str | None = None
    consumer: str | None = None
    producer: str | None = None
    key: str | None = None
    msg_id: str | None = None
    seq: int | None = None
    uid: str | None = None
    result: Result | None = None
    redelivery_count: int | None = None
    drained: bool | None = None
    #: Extension fields (``name`` of an opened consumer, ``error``, ``policy``, ``fault``, ...).
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in CORE_FIELDS:
            value = getattr(self, name)
            if value is None:
                continue
            out[name] = value.value if isinstance(value, Enum) else value
        for name in sorted(self.extra):
            if name not in out:
                out[name] = self.extra[name]
        return out

    def to_json(self) -> str:
        """One JSON line, byte-for-byte deterministic for equal events."""
        return json.dumps(self.to_dict(), separators=(",", ":"), ensure_ascii=False)
