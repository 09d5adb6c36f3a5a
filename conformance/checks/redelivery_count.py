"""``wrong_redelivery_count``: the ``redelivery_count`` a consumer sees on a message fell, or did not grow after
the consumer itself sent the message back.

What Pulsar does (``docs/checker.md``, "The redelivery count", read from the broker's source per release line):
the count is the dispatcher's in-memory ``InMemoryRedeliveryTracker`` entry for the message's position, read
when the entry is sent.  It is raised by one for each position a redelivery *request* puts back in the replay
queue (``redeliverUnacknowledgedMessages``, both the "all pending" form of ``redeliver`` and the per-message
form the client sends for a ``nack`` or its ack timeout), it is *not* raised when a consumer leaves with the
message pending (``removeConsumer``: ``redeliveryTracker.addIfAbsent`` in 2.10 - 3.x, no tracker call in 4.x),
it is dropped on an acknowledgement (``removeBatch``), when the last consumer leaves the subscription
(``clear``), and with the broker's memory (a restart or an unload).

What a trace can soundly show, on one consumer incarnation C (one connection, so the copies of a message reach
C in the order the broker sent them, whatever C's receiver queue held), for two receives r1, r2 of a message m
by C with no receive of m by another consumer between them:

* **fell**: r2 carries a lower count than r1;
* **not raised**: C sent m back (a ``nack`` of m, or a ``redeliver``, while it held m) between r1 and r2, and r2
  carries no more than r1: the request put m in the replay queue with the count raised, and the broker can
  only have sent C m again after it.  On every release: from 2.11 the request raises it
  (apache/pulsar#17060), before it the request tracks m (``addIfAbsent``: a Key_Shared or Shared consumer has
  pending acks, so ``Consumer.redeliverUnacknowledgedMessages`` sends the positions form even for "all") and
  the next send raises it (``PulsarCommandSenderImpl``);

unless something may have dropped the count: an ``ack`` of m logged anywhere before r2 (it may have reached
the broker late, so any ack counts), or a ``fault`` anywhere in the trace (a restart loses the tracker; a
client's reconnect read from its log may be logged late).  A message of a batch (batch index >= 0) is not
judged: the count is kept per entry, and the other messages' acks and nacks move it.  A first receive, or one
after another consumer's, is not judged (a message released while it sat unseen in a receiver queue comes
back counted, and copies sent to two consumers arrive in any order).

Witness: r1 (and the request that sent m back) and r2.  The streaming engine decides at r2 and reports at the
end of the trace, once it knows there was no fault; the Spark engine runs this same code in the part of m's key
(its nacks and acks travel with it; redeliver and fault events are copied into every part).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance.violations import Kind, Violation, render_elle

__all__ = ["FELL", "NOT_RAISED", "explain", "judge", "make_wrong_count"]

FELL = "fell"
NOT_RAISED = "not_raised"


def judge(before: int, request: str | None, now: int) -> str | None:
    """The rule for two receives of one message by one incarnation with nothing between them that may have
    dropped the count: ``before`` and ``now`` are their counts, ``request`` the op by which the incarnation sent
    the message back between them (``nack`` or ``redeliver``, while holding it), if it did.  ``None`` when the
    counts are right."""
    if now < before:
        return FELL
    if request is not None and now <= before:
        return NOT_RAISED
    return None


def make_wrong_count(
    subscription: str,
    key: str,
    consumer: str,
    first: tuple[int, str, str, str],
    request: tuple[int, str, str, str | None] | None,
    second: tuple[int, str, str, str],
    before: int,
    now: int,
    how: str,
) -> Violation:
    """The violation for ``second`` (a receive with count ``now``) after ``first`` (count ``before``)."""
    refs = [list(first)] + ([list(request)] if request is not None else []) + [list(second)]
    facts = {"how": how, "before": before, "now": now, "refs": refs, "consumer": consumer, "msg": second[3]}
    events = tuple(sorted([first[0], second[0]] + ([request[0]] if request is not None else [])))
    return Violation(Kind.WRONG_REDELIVERY_COUNT, key, (consumer,), events, explain(facts), subscription, facts)


def explain(facts: Mapping[str, Any]) -> str:
    refs = facts["refs"]
    before, now, msg, consumer = facts["before"], facts["now"], facts["msg"], facts["consumer"]
    first, second = refs[0][0], refs[-1][0]
    if facts["how"] == FELL:
        title = f"wrong_redelivery_count: {consumer} received {msg} with redelivery count {now} after {before}"
        then = [
            f"E{first} and E{second} are two copies of {msg} on one connection of {consumer}, sent in this order.",
            "Between them no ack of the message was logged and no fault happened, so nothing dropped its count"
            " in the broker's redelivery tracker.",
            f"However, the count fell from {before} to {now}.",
        ]
    else:
        title = f"wrong_redelivery_count: {consumer} sent {msg} back and received it again with count {now}"
        then = [
            f"At E{refs[1][0]} {consumer} sent {msg} back ({refs[1][1]}): the broker raises its redelivery count"
            " when it puts it back for redelivery, and can only send it to this consumer again after that.",
            "No ack of the message was logged and no fault happened, so nothing dropped the count.",
            f"However, the copy received at E{second} carries {now}, not more than the {before} of E{first}.",
        ]
    return render_elle(title, refs, then)
