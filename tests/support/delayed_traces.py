"""Hand-written traces of delayed delivery (importable as ``delayed_traces``), for the checker's tests.

Pulsar's ``KeySharedSubscriptionTest.testContinueDispatchMessagesWhenMessageDelayed`` in small: 1:0 of key ``k``
is sent with ``deliver_after_ms = 3000``, then 1:1 and 1:2 of ``k`` without a delay.  The normal messages are
delivered first; 1:0 comes when the broker releases it (a broker may be one 1000 ms tick early).  Times are in
milliseconds from the first send (the builder's clock advances 1 ms per event unless set).
"""

from __future__ import annotations

from collections.abc import Callable

from conformance.trace import SubscriptionSpec, TraceHeader
from conformance.trace.builder import TraceBuilder

__all__ = ["DELAYED_CASES", "MS"]

MS = 1_000_000


def _start() -> TraceBuilder:
    header = TraceHeader(
        target="hand-written",
        subscription=SubscriptionSpec("s"),
        pulsar_version="4.0",
        deduplication=True,
        extra={"delayed_delivery": True},
    )
    b = TraceBuilder(header, step=MS, start=0)
    b.open("c1")
    event = b.publish("k", "1:0")
    event.extra["deliver_after_ms"] = 3000
    b.publish("k", "1:1")
    b.publish("k", "1:2")
    for n in (1, 2):  # the later messages of k go first: no out_of_order
        b.receive("c1", "k", f"1:{n}")
        b.ack("c1", f"1:{n}")
    return b


def _delayed_at(ms: int, *, ack: bool = True) -> TraceBuilder:
    b = _start()
    b.t = ms * MS
    b.receive("c1", "k", "1:0")
    if ack:
        b.ack("c1", "1:0")
    return b


def on_time() -> TraceBuilder:
    b = _delayed_at(3001)
    b.end(drained=True)
    return b


def within_the_tick() -> TraceBuilder:
    """2100 ms after the send: inside the broker's one-tick allowance (3000 - 1000 ms)."""
    b = _delayed_at(2100)
    b.end(drained=True)
    return b


def early() -> TraceBuilder:
    """500 ms after the send: the delay was ignored."""
    b = _delayed_at(500)
    b.end(drained=True)
    return b


def never() -> TraceBuilder:
    b = _start()
    b.end(drained=True)
    return b


def ordinary_once_received() -> TraceBuilder:
    """Received on time and released by c1's close: from then on 1:0 is owed in order, so 1:3 may not pass it."""
    b = _delayed_at(3001, ack=False)
    b.publish("k", "1:3")
    b.close("c1")
    b.open("c2")
    b.receive("c2", "k", "1:3")
    b.ack("c2", "1:3")
    b.receive("c2", "k", "1:0")
    b.ack("c2", "1:0")
    b.end(drained=True)
    return b


def late_ack() -> TraceBuilder:
    """c1's ack of 1:1 is logged after its close (it may never have arrived); 1:1 comes back to c2 after 1:0."""
    b = TraceBuilder(_start().header, step=MS, start=0)
    b.open("c1")
    b.publish("k", "1:0").extra["deliver_after_ms"] = 3000
    b.publish("k", "1:1")
    b.receive("c1", "k", "1:1")
    b.close("c1")
    b.ack("c1", "1:1")
    b.open("c2")
    b.t = 3001 * MS
    b.receive("c2", "k", "1:0")
    b.ack("c2", "1:0")
    b.receive("c2", "k", "1:1", redelivery_count=1)
    b.ack("c2", "1:1")
    b.end(drained=True)
    return b


#: name -> (trace, the violation kinds a correct checker reports, the same at equal timestamps)
DELAYED_CASES: dict[str, tuple[Callable[[], TraceBuilder], list[str], list[str]]] = {
    "on-time": (on_time, [], []),
    "within-the-tick": (within_the_tick, [], []),
    "early": (early, ["delivered_early"], []),
    "never": (never, ["undelivered"], ["undelivered"]),
    "ordinary-once-received": (ordinary_once_received, ["out_of_order"], ["out_of_order"]),
    "late-ack": (late_ack, [], []),
}
