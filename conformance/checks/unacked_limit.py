"""``received_beyond_unacked_limit``: a consumer received a message of a new entry while it already held as many
unacknowledged entries as the broker's per-consumer unacked-message limit allows.

What Pulsar does (``Consumer.sendMessages`` and the Key_Shared dispatchers' ``getAvailablePermits``, classic and
PIP-379 alike): a consumer's ``unackedMessages`` grows by each entry's message count when the entry is sent,
shrinks when its messages are acknowledged or sent back (a negative ack or a redeliver request, which remove
them from its pending acks), and is dropped with the consumer.  With ``maxUnackedMessagesPerConsumer`` = L > 0 a
dispatch round gives the consumer at most ``L - unackedMessages`` permits, turned into entries with the
consumer's average messages per entry (1 before any batch: the estimate may send up to that many *entries*,
whatever their batches hold), none at or over L; the consumer is marked blocked once the count reaches L
(unblocked at L / 2 after acks, at once on a redeliver request).  So when a round starts with M messages in E
entries unacknowledged (E <= M < L), its k-th entry to the consumer has k <= L - M, and the entries the
consumer held when that entry was sent number at most E + k - 1 < L: *no entry is sent to a consumer already
holding L unacknowledged entries*.  That bound, in entries, is what holds with batches too (in messages a round
may overshoot L by several batches).  ``maxUnackedMessagesPerSubscription`` is not judged: it blocks the
dispatcher before a read, and a read of any size goes out whole, which a trace does not show.

What a trace can soundly show, for one consumer incarnation C (one connection: its receives are logged in the
order the broker sent them) and L of the header's ``broker_conf``: at a receive of a message m that C does not
hold, the entries of the messages C holds unacknowledged, *other than m's entry*, number at least L (a message
without a batch index is an entry of its own).  Each of them was sent to C before m's entry (received on the
same connection, earlier) and counted by the broker then; only what the trace shows may have lowered the count is
taken off, generously (an ack may *excuse*, it may not *condemn*): an ``ack`` of the message by anyone, live or
late, armed or not (it may have reached the broker before m's entry was sent; a later-logged ack cannot have,
the client sent it after receiving m), C's ``nack`` of it, C's ``redeliver`` (everything C holds), any ``fault``
(a reconnect or restart drops consumers; an expiry acknowledges for the broker), and C's ``close`` or ``crash``.
A receive of a message that an ack (by anyone, since C's latest open, close or crash and the latest fault, and since
C's previous receive of it) preceded starts no hold: the broker may have sent it to C again before that ack
arrived (a redelivery after a reconnect or a redeliver request), and then took it off C's count at the ack; the
receive only shows when the application took it from the receiver queue (generated program 685: an ack after a
restart, then the reconnected consumer's queued copy read).
Messages still sitting in C's receiver queue, and other consumers' messages (their receives are on other
connections, unordered against C's), are not counted: the count is a lower bound of the broker's, so the rule
never condemns a correct broker.  Not judged: the release at half the limit (a consumer that acked back to just
under L may rightly stay blocked, never rightly receive; what the trace shows of it is the same bound), the
subscription's limit, and a non-persistent topic (no pending acks there).

Witness: the receives of the held messages (the first and the last of the counted entries') and the receive of m;
reported once per incarnation until its count falls below the limit again. The streaming engine calls
:class:`UnackedLimit` on every receive, ack, nack, redeliver, open, close, crash and fault; the count spans keys, so
the Spark engine checks a trace whose header sets a limit whole (:meth:`judging`, read by ``needs_whole_trace``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance.violations import Kind, Violation, render_elle

__all__ = ["LIMIT_SETTING", "UnackedLimit", "explain", "limit_of", "make_beyond_limit"]

#: the ``broker_conf`` setting (broker.conf name) that bounds one consumer's unacknowledged messages
LIMIT_SETTING = "maxUnackedMessagesPerConsumer"


def limit_of(header_extra: Mapping[str, Any]) -> int:
    """The per-consumer limit of a trace: :data:`LIMIT_SETTING` of the header's ``broker_conf`` when positive, else
    0 (not set, or a non-persistent topic)."""
    conf = header_extra.get("broker_conf")
    if not isinstance(conf, Mapping) or header_extra.get("topic_kind") == "non-persistent":
        return 0
    value = conf.get(LIMIT_SETTING)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


#: one held message: (its receive's index, its entry: (stream, ledger, entry) for a batch message, else None)
Held = tuple[int, tuple[str, int, int] | None]


class UnackedLimit:
    """The rule's state over one trace: per consumer handle (its live incarnation), the messages it holds
    unacknowledged as the trace shows them (message key -> :data:`Held`, in receive order)."""

    __slots__ = ("acks", "held", "judging", "limit", "over", "since", "used")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held: dict[str, dict[str, Held]] = {}
        #: handles reported since their count last fell below the limit
        self.over: set[str] = set()
        #: a receive was judged (a partitioned engine then checks the trace whole: the count spans keys)
        self.judging = False
        #: message key -> the index of its latest ack by anyone since the latest fault (it excuses the next hold)
        self.acks: dict[str, int] = {}
        #: handle -> the index of its latest open, close or crash
        self.since: dict[str, int] = {}
        #: (handle, message key) -> the ack whose excuse that handle's receive of the message used up
        self.used: dict[tuple[str, str], int] = {}

    def receive(
        self, i: int, handle: str, mkey: str, entry: tuple[str, int, int] | None
    ) -> tuple[int, int, int] | None:
        """A live receive of ``mkey`` by ``handle``: ``(entries, first held receive, last held receive)`` when the
        entries of the messages it held before, but ``entry``, reach the limit (once per excess), else None."""
        self.judging = True
        held = self.held.setdefault(handle, {})
        if mkey in held:
            return None  # delivered again while held: counted once by the broker too
        entries: set[object] = set()
        first = last = -1
        for other, (at, other_entry) in held.items():
            if entry is None or other_entry != entry:
                entries.add(other if other_entry is None else other_entry)
                if first < 0:
                    first = at
                last = at
        count = len(entries)
        acked = self.acks.get(mkey)
        if acked is None or acked < self.since.get(handle, -1) or self.used.get((handle, mkey)) == acked:
            held[mkey] = (i, entry)
        else:
            self.used[(handle, mkey)] = acked  # an ack before it may have taken it off the broker's count
        if count < self.limit:
            self.over.discard(handle)
            return None
        if handle in self.over:
            return None
        self.over.add(handle)
        return count, first, last

    def acked(self, i: int, mkey: str) -> None:
        """An ack of ``mkey`` by anyone at ``i`` (it may have reached the broker): no consumer holds it any more,
        and a later receive of it (sent before the ack arrived) starts no hold."""
        for held in self.held.values():
            held.pop(mkey, None)
        self.acks[mkey] = i

    def sent_back(self, handle: str, mkey: str | None, entry: tuple[str, int, int] | None = None) -> None:
        """``handle``'s nack of ``mkey`` or, with None, its redeliver request (everything it holds).  A nack of a
        batch message (``entry``: its stream, ledger and entry) sends the whole entry back: the clients'
        negative-ack trackers drop the batch index, and the broker takes the entry off the consumer's pending acks."""
        held = self.held.get(handle)
        if held is None:
            return
        if mkey is None:
            held.clear()
            return
        held.pop(mkey, None)
        if entry is not None:
            for other in [m for m, (_i, e) in held.items() if e == entry]:
                del held[other]

    def restart(self, i: int, handle: str) -> None:
        """``handle`` opened, closed or crashed at ``i``: a new incarnation starts from nothing."""
        self.held.pop(handle, None)
        self.over.discard(handle)
        self.since[handle] = i

    def fault(self) -> None:
        """Any fault: consumers may have been dropped, an expiry acknowledges; nothing held is counted."""
        self.held.clear()
        self.over.clear()
        self.acks.clear()
        self.used.clear()


def make_beyond_limit(
    subscription: str, key: str, consumer: str, msg: str, limit: int, found: tuple[int, int, int], receive_i: int
) -> Violation:
    count, first, last = found
    facts = {"consumer": consumer, "msg": msg, "limit": limit, "count": count, "first": first, "last": last}
    events = tuple(sorted({first, last, receive_i}))
    facts["refs"] = [[first, "receive", consumer, None], [last, "receive", consumer, None], [receive_i, "receive",
                     consumer, msg]]  # fmt: skip
    return Violation(Kind.RECEIVED_BEYOND_UNACKED_LIMIT, key, (consumer,), events, explain(facts), subscription, facts)


def explain(facts: Mapping[str, Any]) -> str:
    consumer, msg, limit, count = facts["consumer"], facts["msg"], facts["limit"], facts["count"]
    refs = [list(r) for r in facts["refs"]]
    title = (
        f"received_beyond_unacked_limit: {consumer} received {msg} holding {count} unacknowledged entries"
        f" (maxUnackedMessagesPerConsumer {limit})"
    )
    then = [
        f"From E{facts['first']} to E{facts['last']} {consumer} received messages of {count} other entries on this"
        " connection, before the broker sent the entry of the last receive.",
        "No ack of them by anyone, no nack or redeliver request of the consumer and no fault was logged before it:"
        " the broker counted them all as unacknowledged when it sent that entry (at least one message each).",
        f"However, a dispatch round gives a consumer at most {limit} minus its unacknowledged messages in entries:"
        f" no entry goes to a consumer already holding {limit} unacknowledged entries.",
    ]
    return render_elle(title, refs, then)
