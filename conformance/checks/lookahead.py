"""``received_beyond_lookahead``: a 4.x (PIP-379) Key_Shared dispatcher read past its look-ahead limit.

What Pulsar does (``PersistentStickyKeyDispatcherMultipleConsumers``, 4.0 on): an entry a normal read brings that
cannot be sent now (its hash is blocked, its consumer has no permits) waits in the replay queue
(``redeliveryMessages``). A normal read is issued only while that queue holds fewer entries than the effective
look-ahead limit L (``isNormalReadAllowed`` / ``isReplayQueueSizeBelowLimit``), and it reads at most
``max(L - queued, 1)`` entries (``getMaxEntriesReadLimit``). ``getEffectiveLookAheadLimit``: the per-consumer
threshold (``keySharedLookAheadMsgInReplayThresholdPerConsumer``, 2000) times the consumers, capped by the
per-subscription one (``...PerSubscription``, 20000); a term of 0 is off and the other stands; both off fall back to
``min(maxUnackedMessagesPerSubscription, consumers x maxUnackedMessagesPerConsumer)`` (each 0 meaning unbounded).
The classic dispatcher (3.x, and 4.x with ``subscriptionKeySharedUseClassicPersistentImplementation``) has no such
limit: the rule is not judged there.

What follows for a client: take any receive of a message in entry p. The broker read p in some normal read R, and
every entry below p was read since the last cursor rewind before R (reads go forward from the rewind). So an entry
q < p that no consumer had been *sent* when R was issued was in the replay queue then, or came with R itself; R was
allowed, so the queue held fewer than L entries and R read at most ``L - queued``: at most L entries below p were
never sent to anyone at R, and fewer still later (sending only adds). *At a receive of p, at most L entries below p
have never been sent to any consumer.* Batches change nothing (the queue and the limit count entries).

What a trace can soundly show: the stored entries below p (``publish`` receipts with a real id, in p's topic
partition) that no ``receive`` logged so far has shown anyone, minus what may have been sent without a receive
being logged yet: each incarnation's receiver queue (``receiver_queue`` of its ``open``; the client asks for no more
than that, so at most that many entries sit sent and unread, plus one entry a batch may overshoot by and the one
being logged) counts once per ``open`` and again per ``redeliver`` request and per ``fault`` (a redeliver or a
reconnect empties the client's queue, which fills again). Every incarnation of the whole trace counts, and L is taken
for as many consumers as the trace ever opened (the broker may count a subscribe not logged yet), so the rule is
decided at the end of the trace, once: the largest count seen at a receive, against L plus that allowance. A fault
excuses every entry stored before it (an expiry acknowledges entries nobody was sent; a reconnect empties queues).
Entries whose receipt is logged before the first ``open`` are not counted (the subscription may not have existed).
Judged only when the header's ``broker_conf`` names a look-ahead threshold (a model run of a scenario or program with
``[broker]``), on a persistent Key_Shared topic of the PIP-379 dispatcher, with one subscription, no delayed delivery
(a delayed entry waits in the delivery tracker, not the replay queue) and no failover.

Witness: the receive with the largest count, and the oldest and newest of the entries below it never received.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Mapping
from typing import Any

from conformance.violations import Kind, Violation, render_elle

__all__ = ["LOOKAHEAD_SETTINGS", "Found", "LookAhead", "effective_limit", "explain", "make_beyond_lookahead"]

PER_CONSUMER = "keySharedLookAheadMsgInReplayThresholdPerConsumer"
PER_SUBSCRIPTION = "keySharedLookAheadMsgInReplayThresholdPerSubscription"
#: the ``broker_conf`` settings that engage the rule (one of them present)
LOOKAHEAD_SETTINGS = (PER_CONSUMER, PER_SUBSCRIPTION)
#: Pulsar 4.0's defaults (``ServiceConfiguration``) of the settings the limit reads
DEFAULTS: Mapping[str, int] = {
    PER_CONSUMER: 2000,
    PER_SUBSCRIPTION: 20000,
    "maxUnackedMessagesPerConsumer": 50000,
    "maxUnackedMessagesPerSubscription": 200000,
}
#: the Pulsar client's ``receiverQueueSize`` default, for an ``open`` that does not record its queue
DEFAULT_RECEIVER_QUEUE = 1000
#: per queue fill: an entry a batch overshoots the permits by, and the message being logged as received
SLACK = 2
_INT_MAX = 2**31 - 1
#: what :meth:`LookAhead.verdict` finds: (count, limit, allowance, receive index, consumer, message, its key,
#: oldest and newest never-received entry below it)
Found = tuple[int, int, int, int, str, str, str, tuple[int, int], tuple[int, int]]


def effective_limit(conf: Mapping[str, int], consumers: int) -> int:
    """``getEffectiveLookAheadLimit`` for ``consumers`` consumers (written from Pulsar's source, not the model's)."""
    per_consumer, per_subscription = conf[PER_CONSUMER], conf[PER_SUBSCRIPTION]
    limit = 0
    if per_consumer > 0:
        limit = per_consumer * consumers
        if 0 < per_subscription < limit:
            limit = per_subscription
    elif per_subscription > 0:
        limit = per_subscription
    if limit > 0:
        return limit
    max_subscription = conf["maxUnackedMessagesPerSubscription"]
    by_consumers = conf["maxUnackedMessagesPerConsumer"] * consumers
    return min(max_subscription if max_subscription > 0 else _INT_MAX, by_consumers if by_consumers > 0 else _INT_MAX)


def _conf_of(header_extra: Mapping[str, Any]) -> dict[str, int] | None:
    conf = header_extra.get("broker_conf")
    if not isinstance(conf, Mapping) or not any(name in conf for name in LOOKAHEAD_SETTINGS):
        return None
    out = dict(DEFAULTS)
    for name in DEFAULTS:
        value = conf.get(name, DEFAULTS[name])
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return None
        out[name] = value
    return out


class LookAhead:
    """The rule's state over one trace (:meth:`of_header` says whether the trace is judged at all)."""

    __slots__ = ("conf", "consumers", "judging", "live", "other_sub", "queue_of", "queues", "sent", "unsent", "worst")

    def __init__(self, conf: dict[str, int]) -> None:
        self.conf = conf
        #: stream -> the stored entries (ledger, entry) no receive has shown anyone yet, sorted
        self.unsent: dict[str, list[tuple[int, int]]] = {}
        #: stream -> the entries a receive has shown (a receipt logged after a receive of its entry adds nothing)
        self.sent: dict[str, set[tuple[int, int]]] = {}
        #: consumer handle -> its latest open's receiver queue (what a redeliver refills); the open handles (what a
        #: fault refills)
        self.queue_of: dict[str, int] = {}
        self.live: set[str] = set()
        self.queues = 0  #: every open's receiver queue, and every refill since (each plus SLACK)
        self.consumers = 0  #: opens so far (ok or unknown outcome): an upper bound of the broker's consumers
        #: (count, receive index, consumer, message, its key, oldest unsent below, newest unsent below) of the
        #: largest count
        self.worst: tuple[int, int, str, str, str, tuple[int, int], tuple[int, int]] | None = None
        self.judging = False
        self.other_sub = False  #: an open named another subscription: not judged (one dispatcher per subscription)

    @classmethod
    def of_header(cls, header: Any) -> LookAhead | None:
        """The rule for a trace with ``header``, or None where it is not judged (see the module doc)."""
        extra = header.extra
        if extra.get("topic_kind") == "non-persistent" or extra.get("delayed_delivery") or extra.get("clusters"):
            return None
        sub = header.subscription
        if sub.type.lower() != "key_shared" or header.implementation == "classic":
            return None
        from conformance.profiles import _claims_pre_pip379  # the era test the profiles use

        if _claims_pre_pip379(header.pulsar_version):
            return None
        conf = _conf_of(extra)
        return None if conf is None else cls(conf)

    def published(self, stream: str, ledger: int, entry: int) -> None:
        """A stored message's receipt (a batch's messages name one entry).  Before the first open the subscription
        may not exist yet (a new subscription starts at the end of the topic): such an entry is not counted."""
        if not self.consumers:
            return
        pos = (ledger, entry)
        sent = self.sent.get(stream)
        if sent is not None and pos in sent:
            return
        unsent = self.unsent.get(stream)
        if unsent is None:
            self.unsent[stream] = [pos]
        elif not unsent or unsent[-1] < pos:
            unsent.append(pos)
        else:
            at = bisect_left(unsent, pos)
            if at == len(unsent) or unsent[at] != pos:
                insort(unsent, pos)

    def received(self, i: int, consumer: str, msg: str, key: str, stream: str, ledger: int, entry: int) -> None:
        """A receive (live or late): its entry was sent; count the entries below it never sent to anyone.  Any
        receive makes the trace one a partitioned engine checks again whole (the count spans keys: a part holding
        some keys' entries sees none of the others')."""
        self.judging = True
        pos = (ledger, entry)
        sent = self.sent.get(stream)
        if sent is None:
            sent = self.sent[stream] = set()
        sent.add(pos)
        unsent = self.unsent.get(stream)
        if not unsent:
            return
        at = bisect_left(unsent, pos)
        if at < len(unsent) and unsent[at] == pos:
            del unsent[at]
        if at == 0:
            return
        worst = self.worst
        if worst is None or at > worst[0]:
            self.worst = (at, i, consumer, msg, key, unsent[0], unsent[at - 1])

    def opened(self, consumer: str, subscription: str | None, default_sub: str, receiver_queue: object) -> None:
        if subscription is not None and subscription != default_sub:
            self.other_sub = True
        queue = receiver_queue if isinstance(receiver_queue, int) and receiver_queue >= 0 else DEFAULT_RECEIVER_QUEUE
        self.queue_of[consumer] = queue
        self.live.add(consumer)
        self.queues += queue + SLACK
        self.consumers += 1

    def left(self, consumer: str) -> None:
        self.live.discard(consumer)

    def redeliver(self, consumer: str) -> None:
        """A redeliver request empties the client's queue (the Java client; the broker sends it all again)."""
        queue = self.queue_of.get(consumer)
        self.queues += (DEFAULT_RECEIVER_QUEUE if queue is None else queue) + SLACK

    def fault(self) -> None:
        """Any fault: what was stored before it is excused, and every live queue may fill again."""
        for unsent in self.unsent.values():
            unsent.clear()
        self.queues += sum(self.queue_of[h] + SLACK for h in self.live)

    def verdict(self) -> Found | None:
        """At the end: ``(count, limit, allowance, receive index, consumer, message, key, oldest, newest)`` when the
        largest count of never-sent entries below a received one exceeds the limit plus the allowance."""
        if self.worst is None or self.other_sub:
            return None
        limit = effective_limit(self.conf, max(self.consumers, 1))
        count, i, consumer, msg, key, oldest, newest = self.worst
        if count <= limit + self.queues:
            return None
        return count, limit, self.queues, i, consumer, msg, key, oldest, newest


def make_beyond_lookahead(subscription: str, found: Found) -> Violation:
    count, limit, allowance, i, consumer, msg, key, oldest, newest = found
    facts: dict[str, Any] = {
        "consumer": consumer,
        "msg": msg,
        "count": count,
        "limit": limit,
        "allowance": allowance,
        "oldest": f"{oldest[0]}:{oldest[1]}",
        "newest": f"{newest[0]}:{newest[1]}",
        "refs": [[i, "receive", consumer, msg]],
    }
    return Violation(Kind.RECEIVED_BEYOND_LOOKAHEAD, key, (consumer,), (i,), explain(facts), subscription, facts)


def explain(facts: Mapping[str, Any]) -> str:
    consumer, msg, count, limit, allowance = (
        facts["consumer"],
        facts["msg"],
        facts["count"],
        facts["limit"],
        facts["allowance"],
    )
    title = (
        f"received_beyond_lookahead: {consumer} received {msg} while {count} stored entries below it had never"
        f" been received by anyone (look-ahead limit {limit})"
    )
    then = [
        f"The entries from {facts['oldest']} to {facts['newest']} below it that no receive had shown were stored"
        f" before; at most {allowance} of them can have been sent and left unread in the consumers' receiver"
        " queues (every open, redeliver and fault refilling one).",
        f"So at least {count - allowance} entries below {msg} had never been sent when the broker read it. A"
        " PIP-379 dispatcher reads only while its replay queue holds fewer entries than the look-ahead limit, and"
        f" at most the room left: never more than {limit} entries below one it sends are unsent.",
    ]
    return render_elle(title, [list(r) for r in facts["refs"]], then)
