"""``out_of_order``: a later message of a key delivered while an earlier one was neither acknowledged nor held.

Property (Key_Shared without ``allowOutOfOrderDelivery``): per key, messages reach the application in
topic-log (message id) order.  At a receive r of message m (key k) by consumer C, a violation is an m' of the
same topic partition and key, with msg_id(m') < msg_id(m), that is

* *known* before r (an ``ok`` publish receipt that reaches the subscription, or a receive of it),
* not acknowledged (no ack since it was last received), and
* not held by C at r (free — waiting for delivery or redelivery — or held by another consumer),

unless the key is *exempt* at r: some message of k before m was negatively acknowledged, or released by a
``redeliver`` request, and has no armed acknowledgement that nothing disarmed since (PIP-379 gives no ordering
after nack/redeliver; releases by close, crash or fault keep the ordering promise: Pulsar redelivers the replay
queue first).  An ack may excuse but not condemn: an ack that arms nothing (a non-holder's, a late one) or that
was disarmed may never have reached the broker, so it neither ends an exemption nor keeps a nack from beginning
one (issue 24; ``docs/checker.md``, "Exempt").

Only messages known before r count, so a late publish receipt can make the check miss, never invent.
Witness: the smallest such m' by msg_id — the event that put it in its state (its publish, the release that
freed it, or its receive by the consumer holding it) — and r.

Cost: O(log n) per receive with lazy heaps of free and exempt messages per key; holdings of other consumers
are scanned only when some other consumer holds the key (which is itself a ``key_overlap``).
The Spark engine runs this same code (:mod:`conformance.checks.partition`).
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from typing import Any

from conformance.checks._state import Incarnation, Record, SubState, event_ref, free_mark, holders_of, msg_of
from conformance.violations import Kind, Violation, render_elle

__all__ = ["exempt_now", "explain", "make_out_of_order", "overtaken"]


def exempt_now(rec: Record, epoch: int) -> bool:
    """Whether ``rec`` exempts its key now: it was negatively acknowledged or released by a redeliver request
    and no armed, not since disarmed ack of it ended that (an ack may excuse, never condemn)."""
    return bool(rec.exempt) and not rec.armed(epoch)


def overtaken(
    sub: SubState, rec: Record, inc: Incarnation, i: int, mkey: str, hold: dict[Incarnation, int] | None, epoch: int
) -> Violation | None:
    """The ``out_of_order`` of a receive at E``i`` of ``rec`` by ``inc``, if any: the earliest message of the scope
    before it that is known, unacknowledged and not held by ``inc`` (the top of the scope's lazy free heap, or a
    message another holder in ``hold`` holds), unless a message of the scope earlier than ``rec`` is exempt now.
    Stale heap entries met on the way are dropped."""
    pos = rec.pos
    scope = rec.scope
    recs = sub.recs
    best: tuple[Any, ...] | None = None
    heap = sub.free_heaps.get(scope)
    if heap:
        while heap:
            top = recs.get(heap[0][1])
            if top is not None and top.free is not None:
                break
            heapq.heappop(heap)  # stale: no longer free, or settled
        if heap and heap[0][0] < pos:
            other_mkey = heap[0][1]
            msg = msg_of(other_mkey)
            best = (heap[0][0], event_ref(free_mark(recs[other_mkey].free), msg), None, msg)
    if hold:
        for holder in hold:
            if holder is inc:
                continue
            for other_mkey, other in holder.held.items():
                if other.scope != scope or other.pos >= pos or other.acked:
                    continue
                if best is not None and other.pos >= best[0]:
                    continue
                holders = holders_of(other)
                if inc in holders:
                    continue
                first_inc, first_i = min(holders.items(), key=lambda kv: kv[1])
                msg = msg_of(other_mkey)
                best = (other.pos, (first_i, "receive", first_inc.consumer, msg), first_inc.consumer, msg)
    if best is None:
        return None
    exempt = sub.exempt_heaps.get(scope)
    if exempt:
        while exempt:
            top = recs.get(exempt[0][1])
            if top is not None and exempt_now(top, epoch):
                break
            heapq.heappop(exempt)  # stale: settled, or its exemption ended (pushed again if it comes back)
        if exempt and exempt[0][0] < pos:
            return None
    ref = (i, "receive", inc.consumer, msg_of(mkey))
    return make_out_of_order(sub.name, rec.key, inc.consumer, ref, best[1], best[3], best[2])


def make_out_of_order(
    subscription: str,
    key: str,
    consumer: str,
    receive_ref: Sequence[Any],
    earlier_ref: Sequence[Any],
    earlier_msg: str,
    earlier_holder: str | None,
) -> Violation:
    facts = {
        "subscription": subscription,
        "key": key,
        "consumer": consumer,
        "msg": receive_ref[3],
        "earlier_msg": earlier_msg,
        "earlier_holder": earlier_holder,
        "refs": [list(earlier_ref), list(receive_ref)],
    }
    consumers = (consumer,) if earlier_holder is None else (consumer, earlier_holder)
    return Violation(
        Kind.OUT_OF_ORDER,
        key,
        consumers,
        tuple(sorted((earlier_ref[0], receive_ref[0]))),
        explain(facts),
        subscription,
        facts,
    )


def explain(facts: Mapping[str, Any]) -> str:
    earlier, got = facts["refs"]
    key, consumer, msg, prior = facts["key"], facts["consumer"], facts["msg"], facts["earlier_msg"]
    holder = facts["earlier_holder"]
    if holder is None:
        where = f"it was waiting for (re)delivery since E{earlier[0]}"
    else:
        where = f"it was outstanding at {holder} since E{earlier[0]}, not at {consumer}"
    return render_elle(
        f"out_of_order: key {key!r}: {consumer} received {msg} before the earlier {prior}"
        f" (subscription {facts['subscription']!r})",
        [earlier, got],
        [
            f"{prior} precedes {msg} in the topic log; both carry key {key!r}.",
            f"{prior} was known and not acknowledged before E{got[0]}; {where}.",
            f"No earlier message of {key!r} was negatively acknowledged or released by a redeliver request"
            " without an armed, not disarmed acknowledgement since (which would exempt the key).",
            f"However, {consumer} received {msg} at E{got[0]}: a later message of {key!r} overtook an earlier one.",
        ],
    )
