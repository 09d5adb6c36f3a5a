"""The dead-letter contract: ``received_after_dead_letter`` and ``dead_lettered_early``.

A consumer subscribed with a dead-letter policy (``max_redeliver_count``) gets a message at most
``max_redeliver_count + 1`` times (redelivery counts 0 .. max); when it hands the message back once more (a nack
or its ack timeout) the client publishes it to the dead-letter topic and acknowledges the original, without the
application seeing it again (Java ``ConsumerImpl.processPossibleToDLQ``, the C++ client alike; a copy arriving
with a count above the maximum is routed the same way).  A reader of the dead-letter topic that the harness
opens records each message there as a ``dead_letter`` event naming the *original* topic and message id (the
``REAL_TOPIC`` / ``ORIGIN_MESSAGE_ID`` properties the client sets), so the checkers see:

* a dead-lettered message was delivered: it is no longer owed to its subscription (not ``undelivered``);
* ``received_after_dead_letter``: it must not be delivered again on its original subscription after it was
  dead-lettered (nothing in both): neither received there, nor routed to the dead-letter topic a second time
  (a second ``dead_letter`` of it: the broker handed it to a client again, which routed it).  The
  ``dead_letter`` event is recorded after the reader saw it, so the routing happened before.  Excused when a
  ``close`` came between the message's last release and the event, or a ``crash`` or ``fault`` at or after
  that release: the client acknowledges the original only after the dead-letter send completes, so a
  consumer closing meanwhile cannot acknowledge it, and a crash or a broker losing unpersisted
  acknowledgements may drop the acknowledgement later.  A close after the event does not excuse: closing
  flushes the client's pending acknowledgements;
* ``dead_lettered_early``: when the header carries ``dead_letter.max_redeliver_count`` N, the message must have
  been received on the subscription at least N + 1 times before it reached the dead-letter topic.  A
  ``redeliver`` in the subscription makes the broker count redeliveries of messages the application never
  saw (prefetched ones), so a subscription that saw one is not judged.

Witness: the ``dead_letter`` event and the receive.  Memory: one entry per dead-lettered message, and with a
maximum, one counter per received message.  The Spark engine runs this same code (a ``dead_letter`` event
goes to its message's key's part, like a receive).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance.violations import Kind, Violation, render_elle

__all__ = ["explain_early", "explain_received", "make_early", "make_received", "max_redeliver_count"]


def max_redeliver_count(header_extra: Mapping[str, Any]) -> int | None:
    """The header's ``dead_letter.max_redeliver_count``, or None when the trace names no dead-letter policy."""
    policy = header_extra.get("dead_letter")
    if not isinstance(policy, Mapping):
        return None
    value = policy.get("max_redeliver_count")
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def make_received(
    subscription: str, key: str, msg: str, dead_i: int, consumer: str | None, receive_i: int
) -> Violation:
    """The receive by ``consumer`` at E``receive_i`` on ``subscription`` of ``msg``, dead-lettered at E``dead_i``;
    ``consumer`` None: a second ``dead_letter`` of it at E``receive_i`` (the broker delivered it again to a client,
    which routed it to the dead-letter topic again)."""
    again = [receive_i, "receive", consumer, msg] if consumer is not None else [receive_i, "dead_letter", None, msg]
    refs = [[dead_i, "dead_letter", None, msg], again]
    facts = {"subscription": subscription, "key": key, "msg": msg, "refs": refs}
    return Violation(
        Kind.RECEIVED_AFTER_DEAD_LETTER,
        key,
        () if consumer is None else (consumer,),
        (dead_i, receive_i),
        explain_received(facts),
        subscription,
        facts,
    )


def explain_received(facts: Mapping[str, Any]) -> str:
    dead, receive = facts["refs"]
    msg = facts["msg"]
    return render_elle(
        f"received_after_dead_letter: {msg} (key {facts['key']!r}) is in the dead-letter topic and was delivered"
        f" again on {facts['subscription']!r}",
        [dead, receive],
        [
            f"By E{dead[0]} the client had routed {msg} to the dead-letter topic and acknowledged the original.",
            "No consumer closed before the dead letter, and none crashed and no fault came, since the message was"
            " last handed back: the acknowledgement of the original reached the broker.",
            f"However, {receive[2]} received {msg} again at E{receive[0]}: the message is in both."
            if receive[1] == "receive"
            else f"However, {msg} reached the dead-letter topic again at E{receive[0]}: the broker delivered it again.",
        ],
    )


def make_early(subscription: str, key: str, msg: str, dead_i: int, received: int, maximum: int) -> Violation:
    """``msg`` dead-lettered at E``dead_i`` after only ``received`` receives, the policy allowing ``maximum``
    redeliveries."""
    refs = [[dead_i, "dead_letter", None, msg]]
    facts = {"subscription": subscription, "key": key, "msg": msg, "refs": refs, "received": received}
    facts["max_redeliver_count"] = maximum
    return Violation(Kind.DEAD_LETTERED_EARLY, key, (), (dead_i,), explain_early(facts), subscription, facts)


def explain_early(facts: Mapping[str, Any]) -> str:
    (dead,) = facts["refs"]
    maximum = facts["max_redeliver_count"]
    return render_elle(
        f"dead_lettered_early: {facts['msg']} (key {facts['key']!r}) reached the dead-letter topic after"
        f" {facts['received']} deliveries on {facts['subscription']!r}",
        [dead],
        [
            f"The dead-letter policy allows {maximum} redeliveries: the application gets a message {maximum + 1}"
            " times before the client routes it to the dead-letter topic.",
            f"However, it was received only {facts['received']} times before E{dead[0]}.",
        ],
    )
