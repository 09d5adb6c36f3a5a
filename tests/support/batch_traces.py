"""Small traces of batches: default (non-key-based) batches whose messages carry several keys, and entries
delivered whole again until one copy of them is acknowledged whole.

Pulsar dispatches a batch entry whole, by the key of its metadata: the C++ client copies the first message's
``partition_key`` / ``ordering_key`` into it (``Commands::initBatchMessageMetadata``) and the broker reads only
that (``Commands.peekStickyKey``), so a message of key ``B`` inside a batch led by ``A`` goes to ``A``'s consumer
and is ordered and held exclusively under ``A``.  Each trace here comes with the violations a correct checker
finds in it; every one is built twice, with distinct timestamps and with one timestamp for every event.
"""

from __future__ import annotations

from collections import Counter

from conformance.trace.builder import TraceBuilder
from conformance.trace.header import SubscriptionSpec, TraceHeader

__all__ = [
    "acked_across_a_reconnect",
    "handed_over_twice",
    "mixed_batch_traces",
    "nacked_and_back",
    "second_subscription_failover",
    "whole_then_again",
]


def _mixed(step: int) -> list[tuple[str, TraceBuilder, Counter[str]]]:
    cases: list[tuple[str, TraceBuilder, Counter[str]]] = []

    b = TraceBuilder(step=step)  # entry 0 led by A holds a B; entry 1 led by B goes to c2 meanwhile: clean
    b.open("c1"), b.open("c2")
    b.publish("A", "1:0:-1:0", t0=b.t), b.publish("B", "1:0:-1:1", t0=b.t), b.publish("B", "1:1:-1:0", t0=b.t)
    b.receive("c1", "A", "1:0:-1:0"), b.receive("c1", "B", "1:0:-1:1"), b.receive("c2", "B", "1:1:-1:0")
    b.ack("c2", "1:1:-1:0"), b.ack("c1", "1:0:-1:1"), b.ack("c1", "1:0:-1:0"), b.end()
    cases.append(("a batch's other keys go with its first", b, Counter()))

    b = TraceBuilder(step=step)  # the B of A's batch split off to c2 while c1 holds the A: both rules, under A
    b.open("c1"), b.open("c2")
    b.publish("A", "1:0:-1:0", t0=b.t), b.publish("B", "1:0:-1:1", t0=b.t)
    b.receive("c1", "A", "1:0:-1:0"), b.receive("c2", "B", "1:0:-1:1")
    b.ack("c2", "1:0:-1:1"), b.ack("c1", "1:0:-1:0"), b.end()
    cases.append(("a batch split between consumers", b, Counter({"key_overlap": 1, "out_of_order": 1})))

    for acked in (1, 2):  # released partly acknowledged, the batch comes back whole: clean; fully: one finding
        b = TraceBuilder(step=step)
        batch = [("A", "1:0:-1:0"), ("B", "1:0:-1:1")]
        b.open("c1"), b.open("c2")
        for key, msg in batch:
            b.publish(key, msg, t0=b.t)
        for key, msg in batch:
            b.receive("c1", key, msg)
        for _key, msg in batch[-acked:]:
            b.ack("c1", msg)
        b.close("c1")
        for key, msg in batch:
            b.receive("c2", key, msg), b.ack("c2", msg)
        b.end()
        want = Counter() if acked == 1 else Counter({"redelivered_after_ack": 1})
        cases.append((f"a mixed batch redelivered with {acked} of 2 acknowledged", b, want))

    for nacked in (True, False):  # generated program 114: a nack of one message sends the whole entry back
        b = TraceBuilder(step=step)
        batch = [("A", "1:0:-1:0"), ("B", "1:0:-1:1"), ("C", "1:0:-1:2")]
        b.open("c1"), b.open("c2")
        for key, msg in batch:
            b.publish(key, msg, t0=b.t)
        for key, msg in batch:
            b.receive("c1", key, msg)
        if nacked:
            b.nack("c1", "1:0:-1:0")  # c1's application still holds B and C: the broker does not
        for key, msg in batch:
            b.receive("c2", key, msg), b.ack("c2", msg)
        b.ack("c1", "1:0:-1:1"), b.ack("c1", "1:0:-1:2")  # late: c2 already acknowledged them
        b.end()
        name = "one message of a batch nacked, the entry goes to c2 whole" if nacked else "... its mirror: no nack"
        cases.append((name, b, Counter() if nacked else Counter({"key_overlap": 3})))  # one per receive by c2
    return cases


def mixed_batch_traces() -> list[tuple[str, TraceBuilder, Counter[str]]]:
    """``(name, trace, expected violation kinds)``: each trace with distinct timestamps, then with one for all."""
    return [*_mixed(10), *((f"{name} (one timestamp)", b, want) for name, b, want in _mixed(0))]


def second_subscription_failover(dropped: bool, step: int = 10) -> TraceBuilder:
    """A failover run (clusters r1, r2) in which subscription ``s`` fails over from r1 while a second subscription,
    ``audit``, keeps consuming on r1.  ``dropped``: r1 never delivers m2 to ``audit`` (``undelivered`` there: the
    failover of ``s`` excuses nothing of another subscription's)."""
    header = TraceHeader("model", SubscriptionSpec("s"), extra={"clusters": ["r1", "r2"]})
    b = TraceBuilder(header, topic="t@r1", step=step)
    b.open("c1", topic="t@r1"), b.open("a1", subscription="audit", topic="t@r1")
    for n in (1, 2):
        b.publish("k", f"1:{n}", uid=f"u{n}", t0=b.t)
    for n in (1, 2):
        b.receive("c1", "k", f"1:{n}", uid=f"u{n}"), b.ack("c1", f"1:{n}")
    for n in (1,) if dropped else (1, 2):
        b.receive("a1", "k", f"1:{n}", uid=f"u{n}"), b.ack("a1", f"1:{n}")
    b.close("c1")
    b.add("failover", topic="t@r1", subscription="s", cluster="r1", to="r2")
    b.open("c1", topic="t@r2")
    b.end()
    return b


# --- a batch entry comes back whole until one copy of it is acknowledged whole (tests/quality/test_batch_copies.py)
M0, M1 = "1:5:-1:0", "1:5:-1:1"  # one entry of two messages of key k


def _start(step: int, *consumers: str) -> TraceBuilder:
    b = TraceBuilder(step=step)
    for name in consumers:
        b.open(name)
    b.publish("k", M0)
    b.publish("k", M1)
    return b


def handed_over_twice(*, step: int, whole_at_c3: bool = False, planted: bool = False) -> TraceBuilder:
    """c1 acknowledges M0 and closes; c2 gets the entry again and acknowledges only M1 before closing (its
    ack of M0 arrived first, from c1, recorded before c2's arming ack); c3 gets the entry a third time, rightly.
    ``planted``: c3 acknowledges both, closes, and c4 still gets the entry."""
    b = _start(step, "c1", "c2", "c3", "c4")
    b.receive("c1", "k", M0), b.receive("c1", "k", M1), b.ack("c1", M0), b.close("c1")
    b.receive("c2", "k", M0), b.receive("c2", "k", M1), b.ack("c2", M1), b.close("c2")
    b.receive("c3", "k", M0), b.receive("c3", "k", M1)
    if planted:
        b.ack("c3", M0), b.ack("c3", M1), b.close("c3")
        b.receive("c4", "k", M0), b.receive("c4", "k", M1), b.ack("c4", M0), b.ack("c4", M1)
    else:
        b.ack("c3", M0), b.ack("c3", M1)
    b.end()
    return b


def nacked_and_back(*, step: int, nack_first: bool = False, planted: bool = False) -> TraceBuilder:
    """c1 acknowledges M1 and negatively acknowledges M0 (``nack_first``: in the other order): the client asks
    for the entry again and c1 gets both back, acknowledges M0 first, then receives M1 again (rightly: no copy
    was acknowledged whole).  ``planted``: c1 acknowledges that second copy whole and gets the entry a third
    time."""
    b = _start(step, "c1")
    b.receive("c1", "k", M0), b.receive("c1", "k", M1)
    if nack_first:
        b.nack("c1", M0), b.ack("c1", M1)
    else:
        b.ack("c1", M1), b.nack("c1", M0)
    b.receive("c1", "k", M0), b.ack("c1", M0), b.receive("c1", "k", M1), b.ack("c1", M1)
    if planted:
        b.receive("c1", "k", M0), b.receive("c1", "k", M1), b.ack("c1", M0), b.ack("c1", M1)
    b.end()
    return b


def acked_across_a_reconnect(*, step: int) -> TraceBuilder:
    """c2's connection drops while it holds the entry, which goes to c1; c2's application then acknowledges
    M0 (an ack by a consumer that no longer holds it, recorded before c1's arming ack of M1): two copies, each
    partly acknowledged, so the entry comes back to c3 when c1 closes."""
    b = _start(step, "c1", "c2", "c3")
    b.receive("c2", "k", M0), b.receive("c2", "k", M1)
    b.add("fault", fault="client_reconnect", consumers=["c2"])
    b.receive("c1", "k", M0), b.receive("c1", "k", M1)
    b.ack("c2", M0)
    b.ack("c1", M1), b.close("c1")
    b.receive("c3", "k", M0), b.receive("c3", "k", M1), b.ack("c3", M0), b.ack("c3", M1)
    b.end()
    return b


def whole_then_again(*, step: int, raced: bool) -> TraceBuilder:
    """Planted: c1 acknowledges its copy whole, closes, and c2 gets the entry again.  ``raced``: c3, which never
    held it, acknowledges each message too, right after c1 (a duplicate ack racing in the trace)."""
    b = _start(step, "c1", "c2", "c3")
    b.receive("c1", "k", M0), b.receive("c1", "k", M1)
    for msg in (M0, M1):
        b.ack("c1", msg)
        if raced:
            b.ack("c3", msg)
    b.close("c1")
    b.receive("c2", "k", M0), b.receive("c2", "k", M1), b.ack("c2", M0), b.ack("c2", M1)
    b.end()
    return b
