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

from collections.abc import Mapping, Sequence
from typing import Any

from conformance.violations import Kind, Violation, render_elle

__all__ = ["explain", "make_out_of_order"]


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
