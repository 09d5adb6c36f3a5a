"""The contract of a non-persistent topic: loss allowed, nothing delivered twice.

A non-persistent topic keeps nothing (``NonPersistentTopic``): each message goes at once to its key's consumer if
that consumer has permits, and is dropped otherwise; negative acknowledgements, redelivery requests, closes and
crashes bring nothing back (``NonPersistentStickyKeyDispatcherMultipleConsumers``;
``NonPersistentDispatcherMultipleConsumers.redeliverUnacknowledgedMessages`` is a no-op). So, on a trace whose
header says ``"topic_kind": "non-persistent"``:

* ``undelivered`` is permitted (the derived profile says so, :func:`conformance.profiles.profile_for_header`): a
  message that never arrived was dropped, which the contract allows;
* ``delivered_twice`` (:func:`delivered_twice`): the second receive of a message, by any consumer of the
  subscription, whatever happened in between, is a violation. On a persistent topic the same receive may be a
  rightful redelivery (after a nack, a close, a fault); here nothing is ever redelivered;
* ``key_overlap`` and ``misassigned`` are judged as on a persistent topic: the dispatcher picks a key's consumer
  with the same selector, and a message goes to that consumer or nowhere (never to another one while the owner
  has no permits, ``testSendMessageRespectFlowControl``);
* ``out_of_order`` among what arrives: a message is never *waiting* on a non-persistent topic (sent at once or
  dropped; released by a nack, close or crash, it is gone), so a receive is judged only against earlier messages
  of its key that another consumer still holds, never against ones that were published or released and not
  delivered (the streaming engine keeps no message of such a trace in its free heaps, ``_publish`` / ``_free``).

A consumer that *joins* moves keys at once (``addConsumer`` changes the selector; nothing is pending, nothing
drains), so while another consumer still holds messages of a moved key, the new owner receiving later ones is
Pulsar's behaviour: a ``key_overlap`` or ``out_of_order`` whose earlier witness message was published before a
join of the subscription that precedes the receive is excused (:func:`moved_by_join`). Holds that began after
the latest join are judged as on any topic.

Rule: for each subscription, the first receive of each message is remembered (one index per message received:
O(messages) memory, which a non-persistent run's size bounds); a later receive of the same message is a
``delivered_twice`` with the two receives as its witness. The streaming engine calls it on every receive of a
non-persistent trace (``StreamingChecker._receive``); the Spark engine runs that same code in its parts (both
receives of a message carry its key, so they land in the same part).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance.trace.header import TraceHeader
from conformance.violations import Kind, Violation, render_elle

__all__ = ["NON_PERSISTENT", "delivered_twice", "explain", "is_non_persistent", "moved_by_join"]

#: ``topic_kind`` of a non-persistent run in the trace header (absent: persistent)
NON_PERSISTENT = "non-persistent"


def is_non_persistent(header: TraceHeader) -> bool:
    """Whether the trace is of a non-persistent topic (its header's ``topic_kind``)."""
    return header.extra.get("topic_kind") == NON_PERSISTENT


def moved_by_join(violation: Violation, last_open: int, published_at: Mapping[str, int], topic: str) -> bool:
    """Whether a ``key_overlap`` or ``out_of_order`` found at a receive is excused on a non-persistent topic: the
    other holder's message (the earlier witness) may have been dispatched before ``last_open``, the subscription's
    latest ``open`` before the receive, so a join may have moved the key at once while the other consumer had it.

    The dispatch is bounded by the message's publish (``published_at``: message key -> its first publish event),
    not by its receive: a client logs a receive when the application takes the message from its queue, which may
    be long after the broker sent it. A message with no publish in the trace may have been sent at any time.
    ``topic`` is the canonical topic of the receive (the witness is of the same key scope, so of the same topic).
    """
    published = published_at.get(f"{topic}|{violation.facts['refs'][0][3]}")
    return published is None or published < last_open


def delivered_twice(
    first: dict[tuple[str, str], tuple[int, str]],
    subscription: str,
    key: str,
    mkey: str,
    msg: str,
    i: int,
    consumer: str,
) -> Violation | None:
    """Remember the receive at E``i`` of message ``mkey`` (its canonical topic and id; ``msg`` is the id, for
    people) by ``consumer`` in ``first``: (subscription, mkey) -> (i, consumer); or, when it is a second one,
    return its ``delivered_twice`` (witness: the first receive and this one)."""
    seen = first.get((subscription, mkey))
    if seen is None:
        first[(subscription, mkey)] = (i, consumer)
        return None
    facts = {
        "subscription": subscription,
        "key": key,
        "msg": msg,
        "refs": [[seen[0], "receive", seen[1], msg], [i, "receive", consumer, msg]],
    }
    return Violation(
        Kind.DELIVERED_TWICE,
        key,
        (seen[1], consumer) if seen[1] != consumer else (consumer,),
        (seen[0], i),
        explain(facts),
        subscription,
        facts,
    )


def explain(facts: Mapping[str, Any]) -> str:
    first, again = facts["refs"]
    msg = facts["msg"]
    return render_elle(
        f"delivered_twice: {msg} (key {facts['key']!r}) delivered twice on a non-persistent topic"
        f" (subscription {facts['subscription']!r})",
        [first, again],
        [
            f"{first[2]} received {msg} at E{first[0]}.",
            "A non-persistent topic keeps no message: a nack, a redelivery request, a close or a crash brings"
            " nothing back.",
            f"However, {again[2]} received {msg} again at E{again[0]}.",
        ],
    )
