"""Hand-written traces of the client's ack timeout (importable as ``ack_timeout_traces``), for the checker's tests.

Pulsar's ``KeySharedSubscriptionTest.receiveAndCheck``: c1 receives 1:0 .. 1:3 of key ``k`` and acknowledges
every other one; the driver records the timeout's release of 1:1 and 1:3 (a ``nack`` with
``cause = "ack_timeout"``) before anything comes back.  Each case names the messages that come back.
"""

from __future__ import annotations

from collections.abc import Callable

from exemption_traces import pulsar_40

from conformance.trace.builder import TraceBuilder

__all__ = ["ACK_TIMEOUT_CASES", "first_pass", "redelivered"]


def first_pass() -> TraceBuilder:
    b = pulsar_40()
    b.open("c1")
    for n in range(4):
        b.publish("k", f"1:{n}")
    for n in range(4):
        b.receive("c1", "k", f"1:{n}")
        if n % 2 == 0:
            b.ack("c1", f"1:{n}")
    for n in (1, 3):  # the driver's record of the client's timeout, before anything comes back
        b.add("nack", consumer="c1", topic=b.topic, msg_id=f"1:{n}", key="k", cause="ack_timeout")
    return b


def redelivered(b: TraceBuilder, *msg_ids: str) -> TraceBuilder:
    for msg_id in msg_ids:
        b.receive("c1", "k", msg_id, redelivery_count=1)
        b.ack("c1", msg_id)
    b.end(drained=True)
    return b


def late_ack_then_close() -> TraceBuilder:
    """c1 acknowledged 1:1 just as its timeout released it, then closed; 1:1 comes back to c2."""
    b = first_pass()
    b.ack("c1", "1:1")
    b.close("c1")
    b.open("c2")
    b.receive("c2", "k", "1:1", redelivery_count=1)
    b.receive("c2", "k", "1:3", redelivery_count=1)
    b.ack("c2", "1:3")
    b.end(drained=True)
    return b


#: name -> (trace, the violation kinds a correct checker reports)
ACK_TIMEOUT_CASES: dict[str, tuple[Callable[[], TraceBuilder], list[str]]] = {
    "half-back": (lambda: redelivered(first_pass(), "1:1", "1:3"), []),
    "acked-back": (lambda: redelivered(first_pass(), "1:0", "1:1", "1:3"), ["redelivered_after_ack"]),
    "released-never-back": (lambda: redelivered(first_pass(), "1:1"), ["undelivered"]),
    "late-ack": (late_ack_then_close, []),
}
