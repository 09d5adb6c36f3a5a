"""Hand-written traces of message expiry (importable as ``expiry_traces``), for the checker's tests.

Pulsar's ``KeySharedSubscriptionTest.testContinueDispatchMessagesWhenMessageTTL`` in small: c1 holds 1:0 .. 1:2 of
key ``k`` (sent at 0 .. 2 ms); c2 joins; at 2500 ms the driver records the expiry (``fault`` ``expire_messages``,
after the admin call returned) with a TTL of ``seconds``; 1:3 of ``k`` goes to c2.  With a TTL of 2 s the held
messages expired (the broker acknowledged them, c1's hold ended); with 5 s they cannot have.
"""

from __future__ import annotations

from collections.abc import Callable

from conformance.trace import SubscriptionSpec, TraceHeader
from conformance.trace.builder import TraceBuilder

__all__ = ["EXPIRY_CASES"]

MS = 1_000_000


def _held_then_expired(seconds: int) -> TraceBuilder:
    header = TraceHeader(target="hand-written", subscription=SubscriptionSpec("s"), pulsar_version="4.0")
    b = TraceBuilder(header, step=MS, start=0)
    b.open("c1")
    for n in range(3):
        b.publish("k", f"1:{n}")
    for n in range(3):
        b.receive("c1", "k", f"1:{n}")
    b.open("c2")
    b.t = 2500 * MS
    b.add("fault", fault="expire_messages", subscription="s", consumers=[], expire_seconds=seconds)
    return b


def joiner_after_expiry(seconds: int) -> Callable[[], TraceBuilder]:
    def build() -> TraceBuilder:
        b = _held_then_expired(seconds)
        b.publish("k", "1:3")
        b.receive("c2", "k", "1:3")
        b.ack("c2", "1:3")
        for n in range(3):  # c1 acknowledges what it held, after the expiry: these acks change nothing
            b.ack("c1", f"1:{n}")
        b.end(drained=True)
        return b

    return build


def held_then_closed(seconds: int) -> Callable[[], TraceBuilder]:
    """c1 closes without acknowledging; nobody receives the messages again."""

    def build() -> TraceBuilder:
        b = _held_then_expired(seconds)
        b.close("c1")
        b.end(drained=True)
        return b

    return build


#: name -> (trace, the violation kinds a correct checker reports, the same at equal timestamps)
EXPIRY_CASES: dict[str, tuple[Callable[[], TraceBuilder], list[str], list[str]]] = {
    "joiner-after-expiry": (joiner_after_expiry(2), [], []),
    "joiner-before-expiry-could-happen": (joiner_after_expiry(5), ["key_overlap", "out_of_order"], []),
    "expired-not-lost": (held_then_closed(2), [], []),
    "too-young-to-expire-is-lost": (held_then_closed(5), ["undelivered"] * 3, []),
}
