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

from conformance.violations import Kind, Violation, render_elle

__all__ = ["explain", "make_redelivered"]


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
