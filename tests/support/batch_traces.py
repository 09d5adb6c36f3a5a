"""Small traces of default (non-key-based) batches whose messages carry several keys.

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

__all__ = ["mixed_batch_traces", "second_subscription_failover"]


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
