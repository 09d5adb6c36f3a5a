"""The state the streaming engine keeps per subscription, shared by the property checks.

Plain classes with ``__slots__`` (the hot loop reads and writes their attributes directly).  The meaning of
every field follows ``docs/checker.md``:

* a *message record* (:class:`Rec`) exists while a message is known in a subscription and not yet both
  acknowledged and confirmed by its publish receipt; it says whether the message is acknowledged, which
  consumer incarnations hold it (are between its receive and its release) and, when it is *free* (known,
  unacknowledged, held by nobody), since which event;
* an *incarnation* (:class:`Incarnation`) is one consumer handle between its ``open`` and its ``close`` or
  ``crash``;
* per *scope* (stream + key), the subscription indexes who holds what (for ``key_overlap``) and keeps two
  lazy heaps by topic-log position: free messages and exempt messages (for ``out_of_order``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["MSG_OPS", "Incarnation", "Rec", "SubState", "event_ref"]

#: Ops whose events name one message (their references carry its msg_id).
MSG_OPS = frozenset({"publish", "receive", "ack", "nack"})

#: A witness event as the engine remembers it: (i, op, consumer or None).
Mark = tuple[int, str, "str | None"]


def event_ref(mark: Mark, msg: str | None) -> tuple[int, str, str | None, str | None]:
    """The full reference ``(i, op, consumer, msg_id)`` of a remembered event about message ``msg``."""
    i, op, consumer = mark
    return (i, op, consumer, msg if op in MSG_OPS else None)


class Incarnation:
    """One consumer handle from its ``open`` (``id`` is that event's ``i``) to its ``close`` or ``crash``."""

    __slots__ = ("consumer", "held", "id", "last_disarm", "name", "policy", "sub", "t_open")

    def __init__(self, inc_id: int, consumer: str, name: str, sub: SubState, policy: Any, t_open: int) -> None:
        self.id = inc_id
        self.consumer = consumer
        self.name = name
        self.sub = sub
        self.policy = policy
        self.t_open = t_open
        #: message key -> record, for every message this incarnation holds
        self.held: dict[str, Rec] = {}
        #: index of this incarnation's last redeliver or crash (disarms its acknowledgements)
        self.last_disarm = -1

    def __repr__(self) -> str:
        return f"Incarnation({self.consumer!r}, opened at E{self.id})"


class Rec:
    """A message known in one subscription (see the module docstring)."""

    __slots__ = ("acked", "exempt", "free_since", "holders", "key", "mkey", "pos", "published", "scope", "t0")

    def __init__(self, mkey: str, key: str, stream: str, pos: tuple[int, int, int]) -> None:
        self.mkey = mkey
        self.key = key
        #: the stream (topic partition) and key: what ordering and exclusivity are judged within
        self.scope = stream + "\x1f" + key
        self.pos = pos
        self.acked = False
        self.published = False
        self.exempt = False
        #: incarnation -> index of the receive that started its hold
        self.holders: dict[Incarnation, int] = {}
        #: the event that made the message free, while it is free (else None)
        self.free_since: Mark | None = None
        #: ``t0`` of the publish that made it free (the lower bound of a first dispatch), else None
        self.t0: int | None = None

    @property
    def msg(self) -> str:
        """The canonical message id (the part of the message key after the topic)."""
        return self.mkey.rpartition("|")[2]


class SubState:
    """Everything the engine tracks for one subscription."""

    __slots__ = (
        "armed",
        "created",
        "exempt_heaps",
        "expect_cache",
        "free_heaps",
        "holders",
        "incarnations",
        "name",
        "recs",
        "timeline",
    )

    def __init__(self, name: str) -> None:
        self.name = name
        self.recs: dict[str, Rec] = {}
        #: scope -> incarnation -> message key -> receive index (insertion order = receive order)
        self.holders: dict[str, dict[Incarnation, dict[str, int]]] = {}
        #: scope -> heap of (position, message key) of free messages (lazy: entries may be stale)
        self.free_heaps: dict[str, list[tuple[tuple[int, int, int], str]]] = {}
        #: scope -> heap of (position, message key) of exempt messages (lazy)
        self.exempt_heaps: dict[str, list[tuple[tuple[int, int, int], str]]] = {}
        #: message key -> (ack index, acking incarnation) for acknowledgements that arm redelivered_after_ack
        self.armed: dict[str, tuple[int, Incarnation]] = {}
        #: the membership timeline for misassigned (None when not judged)
        self.timeline: Any = None
        #: canonical topic (or None for opens without a topic) -> t of the first ok open on it
        self.created: dict[str | None, int] = {}
        #: stream -> the earliest creation time that makes a send on it reach this subscription (cache)
        self.expect_cache: dict[str, float] = {}
        self.incarnations: list[Incarnation] = []

    def created_at(self, topic: str) -> float:
        """When this subscription came to exist for ``topic`` (inf if not yet): a send called later reaches it."""
        times = [t for t in (self.created.get(topic), self.created.get(None)) if t is not None]
        return min(times) if times else float("inf")

    def expects(self, topic: str, t0: int) -> bool:
        """Whether a send called at ``t0`` on ``topic`` reaches this subscription (it existed before)."""
        return self.created_at(topic) < t0
