"""``delivered_early`` and the ordering place of a delayed message (delayed delivery, PIP-26).

A message published with a delivery time (``deliver_after_ms`` on its ``publish`` event: the client sent it with
``deliver_after``, so its ``deliverAtTime`` is the client's clock at the send plus the delay) is held by the broker
until then and dispatched afterwards as a replay.  Two rules follow (``docs/checker.md``, "Delayed delivery"):

* **Its delivery time is its own order.**  Until it is first received, a delayed message is not "waiting for
  delivery" in the ordering sense: later messages of its key may be delivered before it, and that is no
  ``out_of_order``.  Once received, it is an ordinary message (released again, it is owed in order as usual).
  It must still be delivered: a drained run that never delivers it reports it ``undelivered``.
* **Not before its time.**  Its first receive must not come before ``t0 + deliver_after_ms`` less the broker's
  allowance :data:`EARLY_ALLOWANCE_MS` (Pulsar's default ``isDelayedDeliveryDeliverAtTimeStrict=false`` delivers
  a message due within one ``delayedDeliveryTickTimeMillis``, 1 s, of now).  ``t0`` is logged before the send is
  called, so the true delivery time is no earlier than the bound; the receive is logged after the client returned
  the message, so it is no earlier than the dispatch.  A trace whose clock did not move between the send and the
  receive (equal timestamps) says nothing about time: nothing is judged early there.  The clocks are the
  harness's and the broker's: on one machine (or NTP-synchronised ones) they agree far within the allowance.

Cost: O(1) per publish and receive of a delayed message, nothing for the others.  The Spark engine runs this same
code (:mod:`conformance.checks.partition`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from conformance.violations import Kind, Violation, render_elle

__all__ = ["EARLY_ALLOWANCE_MS", "Due", "allowance_of", "due_of", "early", "explain", "make_delivered_early"]

#: how much earlier than its delivery time a broker may deliver a delayed message: Pulsar's default
#: ``delayedDeliveryTickTimeMillis`` (1000) under the default, non-strict cutoff
EARLY_ALLOWANCE_MS = 1000

#: what a delayed message's record keeps until its first receive: (earliest allowed receive t in ns, ``t0`` of the
#: send, index of the publish, the delay in ms, the allowance in ms)
Due = tuple[int, int, int, int, int]


def allowance_of(header_extra: Mapping[str, Any]) -> int:
    """The early-delivery allowance of a trace: the tick of the broker's ``[broker]`` settings the header records
    (``broker_conf.delayedDeliveryTickTimeMillis``, a run of the model with a scenario's setting), else Pulsar's
    default, :data:`EARLY_ALLOWANCE_MS`."""
    conf = header_extra.get("broker_conf")
    tick = conf.get("delayedDeliveryTickTimeMillis") if isinstance(conf, Mapping) else None
    if isinstance(tick, int) and not isinstance(tick, bool) and tick >= 0:
        return tick
    return EARLY_ALLOWANCE_MS


def due_of(send_t: int, publish_i: int, deliver_after_ms: Any, allowance_ms: int = EARLY_ALLOWANCE_MS) -> Due | None:
    """The :data:`Due` of a message published at ``publish_i`` (send called at ``send_t``), or None when it was
    not delayed (no ``deliver_after_ms``, or 0)."""
    if deliver_after_ms is None or isinstance(deliver_after_ms, bool) or not isinstance(deliver_after_ms, int):
        return None
    if deliver_after_ms <= 0:
        return None
    allowed = send_t + (deliver_after_ms - allowance_ms) * 1_000_000
    return (allowed, send_t, publish_i, deliver_after_ms, allowance_ms)


def early(due: Due, t: int) -> bool:
    """Whether a first receive at ``t`` came before the delivery time allows (only where the clock moved)."""
    return due[1] < t < due[0]


def make_delivered_early(
    subscription: str, key: str, consumer: str, msg: str, due: Due, receive_i: int, t: int
) -> Violation:
    facts = {
        "subscription": subscription,
        "key": key,
        "consumer": consumer,
        "msg": msg,
        "deliver_after_ms": due[3],
        "after_ms": (t - due[1]) / 1_000_000,
        "allowance_ms": due[4],
        "refs": [[due[2], "publish", None, msg], [receive_i, "receive", consumer, msg]],
    }
    return Violation(Kind.DELIVERED_EARLY, key, (consumer,), (due[2], receive_i), explain(facts), subscription, facts)


def explain(facts: Mapping[str, Any]) -> str:
    refs: Sequence[Sequence[Any]] = facts["refs"]
    published, got = refs
    msg, delay = facts["msg"], facts["deliver_after_ms"]
    return render_elle(
        f"delivered_early: {facts['consumer']} received the delayed {msg} {facts['after_ms']:.0f} ms after its send,"
        f" {delay} ms were asked (subscription {facts['subscription']!r})",
        [published, got],
        [
            f"{msg} (key {facts['key']!r}) was sent with deliver_after = {delay} ms at E{published[0]}'s t0.",
            f"A broker may deliver it up to {facts['allowance_ms']} ms early (one delayed-delivery tick), no earlier.",
            f"However, {facts['consumer']} received it at E{got[0]}, {facts['after_ms']:.0f} ms after the send.",
        ],
    )
