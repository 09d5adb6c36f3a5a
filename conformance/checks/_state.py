"""The state the streaming engine keeps per subscription, shared by the property checks.

The meaning of every field follows ``docs/checker.md``:

* a *message record* (:class:`Record`, a class with declared attributes: a C struct when compiled) that
  exists from the moment a message is known in a subscription; it says whether the message is acknowledged,
  exempt, which consumer incarnations hold it (are between its receive and its release), since which event it
  is *free* (known, unacknowledged, held by nobody), and the last acknowledgement that armed
  ``redelivered_after_ack``;
* an *incarnation* (:class:`Incarnation`) is one consumer handle between its ``open`` and its ``close`` or
  ``crash``;
* per *scope* (stream + key), the subscription counts who holds how many messages (for ``key_overlap``) and
  keeps two lazy heaps by topic-log position: free messages and exempt messages (for ``out_of_order``).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "MSG_OPS",
    "EventInt",
    "Incarnation",
    "Position",
    "Record",
    "Settled",
    "SubState",
    "event_ref",
    "free_mark",
    "holders_of",
    "msg_of",
    "new_record",
    "new_settled",
    "settled_of",
]

#: Ops whose events name one message (their references carry its msg_id).
MSG_OPS = frozenset({"publish", "receive", "ack", "nack", "dead_letter"})

#: A witness event as the engine remembers it: (i, op, consumer or None).
Mark = tuple[int, str, "str | None"]

#: An integer field of an event as the batch's columns hold it (``i``, ``t``, a message's ledger, entry and batch
#: index), which the hot handlers pass along and store (in records, heaps, witnesses) as the Python int it is.
#: ``Any`` on purpose: compiled with mypyc, an ``int`` parameter is a machine integer, and each time it is stored
#: again a new Python int is allocated for it.
EventInt = Any

#: A message's place in the topic log, (ledger, entry, batch index; -1 when sent alone).  A Python tuple under
#: mypyc too: a fixed-length tuple type would be a C struct there, boxed into a new tuple at each heap push and
#: each comparison.
Position = tuple[int, ...]


class Record:
    """What the engine knows of one message in one subscription, from the moment it is known there until it is
    settled (then a :class:`Settled` remainder replaces it).  Plain declared attributes: compiled with mypyc, a C
    struct, read in the hot loop without a dictionary or an index.  Made by :func:`new_record` (no ``__init__``:
    run from source, a class's Python ``__init__`` is a second interpreter frame per message, the dearest part of
    making one)."""

    __slots__ = (
        "acked", "arm_epoch", "arm_i", "arm_inc", "due", "exempt", "free", "hold_i", "holder", "key", "pos", "rc",
        "scope", "t0", "uid",
    )  # fmt: skip

    #: acknowledged: an ack of it was logged (by anyone, live or late) and no receive since was a
    #: redelivered_after_ack
    acked: bool
    #: negatively acknowledged or released by a redeliver request (ever): the key is exempt while this holds and
    #: the message has no armed, not disarmed acknowledgement (:func:`conformance.checks.ordering.exempt_now`); a
    #: message with it set is never settled, so an exemption an armed ack ended comes back when that ack is
    #: disarmed
    exempt: bool
    #: what made it free, while it is free (else None): an int ``i`` for "its publish at E<i>", else a Mark
    free: Any
    #: who holds it: None, one Incarnation (received at ``hold_i``), or a dict Incarnation -> receive index
    holder: Any
    #: the receive that began the single holder's hold; after an arming ack, the acknowledged hold's (its copy)
    hold_i: Any
    key: str  #: the key it is judged under: its first known event's (a batch message: its entry's)
    scope: str  #: stream + "\x1f" + key: what ordering and exclusivity are judged within
    pos: Position  #: (ledger, entry, batch_index): its place in the topic log
    t0: Any  #: ``t0`` of the publish that made it known (the lower bound of a first dispatch), else None
    arm_i: Any  #: index of the ack that armed redelivered_after_ack, or -1
    arm_inc: Any  #: the incarnation that acknowledged it then
    arm_epoch: int  #: the number of unscoped faults before that ack (such a fault disarms every ack)
    #: the uid of the publish receipt that made it known, when that was the uid's first publish event (so a
    #: receive carrying the same uid is evidence the identity checks already have), else None
    uid: str | None
    #: a delayed message not yet received: its :data:`conformance.checks.delayed.Due` (it is not on the free heap
    #: meanwhile: its delivery time is its own order), else None
    due: Any
    #: the last live receive's redelivery count (``conformance.checks.redelivery_count``): None before the first,
    #: False once nothing can be judged (an ack was logged; a batch message), else ``[incarnation, count, receive
    #: index, the incarnation's request that sent it back since or None]``
    rc: Any

    def armed(self, epoch: int) -> bool:
        """Whether it has an armed acknowledgement that nothing disarmed since (``docs/checker.md``, "Armed ack"):
        ``epoch`` is the number of unscoped faults so far (one after the ack disarmed it)."""
        return self.arm_i >= 0 and self.arm_epoch == epoch and self.arm_inc.last_disarm < self.arm_i


def new_record(acked: bool, free: Any, key: str, scope: str, pos: Position, t0: Any, uid: str | None) -> Record:
    """A message's record as it becomes known: held by nobody, not exempt, no armed ack, not delayed, no
    redelivery count judged yet."""
    rec = Record()
    rec.acked = acked
    rec.exempt = False
    rec.free = free
    rec.holder = None
    rec.hold_i = -1
    rec.key = key
    rec.scope = scope
    rec.pos = pos
    rec.t0 = t0
    rec.arm_i = -1
    rec.arm_inc = None
    rec.arm_epoch = 0
    rec.uid = uid
    rec.due = None
    rec.rc = None
    return rec


class Settled:
    """The compact remainder of a *settled* message: acknowledged, held by nobody and its publish receipt seen.

    It keeps what a later receive needs: the message's key and scope (shared strings), the arming ack
    (``arm_i``, ``arm_inc``, ``arm_epoch``) and the receive that began the hold it acknowledged (``hold_i``: which
    copy of a batch entry the ack was in).  Made by :func:`new_settled` (no ``__init__``, as :class:`Record`)."""

    __slots__ = ("arm_epoch", "arm_i", "arm_inc", "hold_i", "key", "scope")

    scope: str
    key: str
    arm_i: Any
    arm_inc: Any
    arm_epoch: int
    hold_i: Any


def new_settled(scope: str, key: str, arm_i: Any, arm_inc: Any, arm_epoch: int, hold_i: Any) -> Settled:
    """A settled message's remainder."""
    left = Settled()
    left.scope = scope
    left.key = key
    left.arm_i = arm_i
    left.arm_inc = arm_inc
    left.arm_epoch = arm_epoch
    left.hold_i = hold_i
    return left


def settled_of(rec: Record) -> Settled:
    """The remainder of ``rec`` once it is settled, keeping its armed ack."""
    return new_settled(rec.scope, rec.key, rec.arm_i, rec.arm_inc, rec.arm_epoch, rec.hold_i)


def free_mark(free: Any) -> Mark:
    """The event that made a message free, as a Mark (``Record.free`` holds a bare ``i`` for a publish)."""
    return (free, "publish", None) if free.__class__ is int else free


def holders_of(rec: Record) -> dict[Incarnation, int]:
    """The record's holders as a dict incarnation -> receive index (a copy)."""
    holder = rec.holder
    if holder is None:
        return {}
    if holder.__class__ is dict:
        return dict(holder)
    return {holder: rec.hold_i}


def msg_of(mkey: str) -> str:
    """The message id of a message key (``stream|msg_id``)."""
    return mkey.rpartition("|")[2]


def event_ref(mark: Mark, msg: str | None) -> tuple[int, str, str | None, str | None]:
    """The full reference ``(i, op, consumer, msg_id)`` of a remembered event about message ``msg``."""
    i, op, consumer = mark
    return (i, op, consumer, msg if op in MSG_OPS else None)


class Incarnation:
    """One consumer handle from its ``open`` (``id`` is that event's ``i``) to its ``close`` or ``crash``."""

    __slots__ = (
        "batch_nacks", "consumer", "held", "id", "last_disarm", "name", "policy", "sub", "suspended", "t_open",
    )  # fmt: skip

    def __init__(self, inc_id: int, consumer: str, name: str, sub: SubState, policy: Any, t_open: int) -> None:
        self.id = inc_id
        self.consumer = consumer
        self.name = name
        self.sub = sub
        self.policy = policy
        self.t_open = t_open
        #: message key -> record, for every message this incarnation holds (insertion order = receive order)
        self.held: dict[str, Record] = {}
        #: index of this incarnation's last redeliver or crash (disarms its acknowledgements)
        self.last_disarm = -1
        #: (scope, ledger, entry) -> indexes of its negative acks of messages of that batch entry: each makes the
        #: client ask for the whole entry again, so its acknowledgements either side belong to different copies
        self.batch_nacks: dict[tuple[str, int, int], list[int]] = {}
        #: keys of exempt messages whose exemption an armed ack of this incarnation ended: it comes back (they are
        #: pushed on their exempt heap again) when this incarnation's acknowledgements are disarmed
        self.suspended: list[str] = []

    def __repr__(self) -> str:
        return f"Incarnation({self.consumer!r}, opened at E{self.id})"


class SubState:
    """Everything the engine tracks for one subscription."""

    __slots__ = (
        "acked_early",
        "created",
        "exempt_heaps",
        "expect_cache",
        "free_heaps",
        "holding",
        "incarnations",
        "name",
        "recs",
        "settled",
        "timeline",
    )

    def __init__(self, name: str) -> None:
        self.name = name
        #: message key -> record, while the message is not settled (see ``settled``)
        self.recs: dict[str, Record] = {}
        #: message key -> the :class:`Settled` remainder of a settled message (its record is dropped)
        self.settled: dict[str, Settled] = {}
        #: scope -> incarnation -> how many messages of the scope it holds
        self.holding: dict[str, dict[Incarnation, int]] = {}
        #: scope -> heap of (position, message key) of free messages (lazy: entries may be stale)
        self.free_heaps: dict[str, list[tuple[Position, str]]] = {}
        #: scope -> heap of (position, message key) of exempt messages (lazy)
        self.exempt_heaps: dict[str, list[tuple[Position, str]]] = {}
        #: the membership timeline for misassigned (None when not judged)
        self.timeline: Any = None
        #: canonical topic (or None for opens without a topic) -> t of the first ok open on it
        self.created: dict[str | None, int] = {}
        #: stream -> the earliest creation time that makes a send on it reach this subscription (cache)
        self.expect_cache: dict[str, float] = {}
        self.incarnations: list[Incarnation] = []
        #: messages an ack named before they were known here: acknowledged from the moment they become known
        self.acked_early: set[str] = set()

    def created_at(self, topic: str) -> float:
        """When this subscription came to exist for ``topic`` (inf if not yet): a send called later reaches it."""
        times = [t for t in (self.created.get(topic), self.created.get(None)) if t is not None]
        return min(times) if times else float("inf")

    def expects(self, topic: str, t0: int) -> bool:
        """Whether a send called at ``t0`` on ``topic`` reaches this subscription.

        It does unless it was called strictly before the subscription's first open was logged: at an equal ``t``
        the trace order (the publish receipt comes after the open) is all the evidence, and it says after.
        """
        return self.created_at(topic) <= t0
