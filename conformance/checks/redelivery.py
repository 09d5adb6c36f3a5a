"""``redelivered_after_ack``: the same message received again after a consumer acknowledged it.

Property: an acknowledged message is not delivered again.  An ``ack`` *arms* the check when the acking
consumer held the message at that moment (an ack of a message it did not hold — already released — may race
with the redelivery the release caused, so it proves nothing).  The first receive of the message (by any live
consumer of the subscription) after an armed ack is a violation unless, between the two, the broker had a
reason to forget the ack:

* a ``fault`` (a broker restart may lose acknowledgements that were not yet persisted);
* a ``crash`` of the acking consumer (an ack still in the client's ack-grouping buffer is lost);
* a ``redeliver`` by the acking consumer: the C++/Python client sends RedeliverUnacknowledgedMessages at once
  while a grouped ack may still be buffered (``ConsumerImpl::redeliverMessages`` does not flush the
  ack-grouping tracker; ``closeAsync`` does, so a ``close`` does not excuse a redelivery).

Nor is it one when the message is one of a batch (batch index >= 0) and another message of the same entry (in
its scope) was not acknowledged in the same copy of the entry as this one: without batch-index acknowledgements
the client acknowledges an entry only once every message of one copy of it it received is acknowledged, so the
broker rightly delivers the whole batch again, the acknowledged messages with it (the receive is a late copy,
holding no key).  The same copy: armed by the same acker, not disarmed since, and no ``nack`` of the entry by
the acker between the receives that began the two acknowledged holds (``StreamingChecker._acked_with``).

A later ack that does not arm (the acker did not hold the message) neither arms nor disarms.
Witness: the ack and the receive.  Memory: the armed acks since the last fault (one small entry each).
The Spark engine runs this same code (:mod:`conformance.checks.partition`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from conformance.checks._state import Incarnation, Record, SubState, msg_of
from conformance.trace.identity import parse_position
from conformance.violations import Kind, Violation, render_elle

__all__ = ["acked_with", "batch_owed", "explain", "make_redelivered", "redelivered"]


def redelivered(sub: SubState, rec: Record, inc: Incarnation, i: int, mkey: str, epoch: int) -> Violation | None:
    """The ``redelivered_after_ack`` of the first live receive at E``i`` of ``rec`` (by ``inc``) after the ack
    that armed it, if any: none when a fault (``epoch``: unscoped faults so far) or the acker disarmed that ack,
    nor when ``rec`` is a message of a batch entry the broker may rightly deliver whole again."""
    ack_i, acker = rec.arm_i, rec.arm_inc
    if rec.arm_epoch != epoch or acker.last_disarm >= ack_i or batch_owed(sub, rec, acker, epoch):
        return None
    msg = msg_of(mkey)
    ref = (i, "receive", inc.consumer, msg)
    ack_ref = (ack_i, "ack", acker.consumer, msg)
    return make_redelivered(sub.name, rec.key, acker.consumer, ack_ref, inc.consumer, ref, rec.pos[2] >= 0)


def batch_owed(sub: SubState, rec: Record, acker: Incarnation, epoch: int) -> bool:
    """Whether ``rec`` is one message of a batch (batch index >= 0) whose entry the broker may rightly deliver
    whole again.  Without batch-index acks the client acknowledges an entry only once every message of one
    copy of it it received is acknowledged (``docs/checker.md``, "Batches"), so the receive is judged only
    when every other message of the entry, in its scope, was acknowledged in the very copy the acker
    acknowledged this one in (:func:`acked_with`).  Scanned only at a receive an armed ack would judge."""
    ledger, entry, batch = rec.pos
    if batch < 0:
        return False
    scope = rec.scope
    nacks = acker.batch_nacks.get((scope, ledger, entry)) if acker.batch_nacks else None
    hold_i = rec.hold_i
    for other in sub.recs.values():
        pos = other.pos
        if (
            pos[1] == entry
            and pos[0] == ledger
            and other is not rec
            and other.scope == scope
            and not (
                other.acked
                and acked_with(other.arm_i, other.arm_inc, other.arm_epoch, other.hold_i, acker, hold_i, nacks, epoch)
            )
        ):
            return True
    if sub.settled:
        for mkey, left in sub.settled.items():
            if left.scope == scope and not acked_with(
                left.arm_i, left.arm_inc, left.arm_epoch, left.hold_i, acker, hold_i, nacks, epoch
            ):
                lo, en, _b = parse_position(msg_of(mkey))
                if en == entry and lo == ledger:
                    return True
    return False


def acked_with(
    arm_i: int, arm_inc: Any, arm_epoch: int, arm_hold: int, acker: Incarnation, hold_i: int,
    nacks: list[int] | None, epoch: int,
) -> bool:  # fmt: skip
    """Whether a message of a batch entry whose armed ack is ``(arm_i, arm_inc, arm_epoch)``, acknowledging
    the hold that began at ``arm_hold``, was acknowledged in the same copy of the entry as the acker's hold
    that began at ``hold_i``: by the acker itself, holding it (an ack by a non-holder, or by another consumer
    holding another copy, completes no copy the acker's client tracks), not disarmed since (a fault touching
    the acker, its crash or its redeliver request may have lost it), and no negative ack of the entry by the
    acker between the two holds' receives (the client asks for the whole entry again, and what it receives
    after that nack is another copy)."""
    if arm_inc is not acker or arm_i < 0 or arm_epoch != epoch or acker.last_disarm > arm_i:
        return False
    if nacks:
        lo, hi = (arm_hold, hold_i) if arm_hold < hold_i else (hold_i, arm_hold)
        for n in nacks:
            if lo < n < hi:
                return False
    return True


def make_redelivered(
    subscription: str,
    key: str,
    acker: str,
    ack_ref: Sequence[Any],
    receiver: str,
    receive_ref: Sequence[Any],
    batch: bool = False,
) -> Violation:
    """``batch``: the message is one of a batch entry (the explanation says its whole copy was acknowledged)."""
    facts = {
        "subscription": subscription,
        "key": key,
        "acker": acker,
        "receiver": receiver,
        "msg": receive_ref[3],
        "refs": [list(ack_ref), list(receive_ref)],
    }
    if batch:
        facts["batch"] = True
    return Violation(
        Kind.REDELIVERED_AFTER_ACK,
        key,
        (acker, receiver),
        (ack_ref[0], receive_ref[0]),
        explain(facts),
        subscription,
        facts,
    )


def explain(facts: Mapping[str, Any]) -> str:
    ack, got = facts["refs"]
    msg, acker = facts["msg"], facts["acker"]
    return render_elle(
        f"redelivered_after_ack: {msg} (key {facts['key']!r}) delivered again after {acker} acknowledged it"
        f" (subscription {facts['subscription']!r})",
        [ack, got],
        [
            f"{acker} held {msg} and acknowledged it at E{ack[0]}.",
            *(
                [
                    f"{msg} is one of a batch, and {acker} acknowledged every other message of the same copy of its"
                    " entry too, so its client acknowledged the entry."
                ]
                if facts.get("batch")
                else []
            ),
            f"Between E{ack[0]} and E{got[0]} there was no broker fault, and {acker} neither crashed nor asked"
            " for redelivery (either could lose an acknowledgement still in flight).",
            f"However, {facts['receiver']} received {msg} again at E{got[0]}.",
        ],
    )
