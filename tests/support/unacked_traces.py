"""Hand-written traces of a broker's unacked-message limit (importable as ``unacked_traces``), for the checker's
tests on both engines (``conformance/checks/unacked_limit.py``).

A broker with ``maxUnackedMessagesPerConsumer = 2`` sends c1 two messages, then none until one is acknowledged (or
sent back): valid (the limit bounds the entries a consumer holds: batches may overshoot it in messages). The same
trace with a third message received before any ack is INVALID. Acks that may never have reached the broker (a late
ack after the acker's close, an ack by a consumer that did not hold the message, an ack disarmed by a redeliver
request) still excuse: an ack may excuse, never condemn. The messages of one batch entry overshoot the limit
rightly. ``UNACKED_CASES``: name -> (builder, the kinds found).
"""

from __future__ import annotations

from conformance.trace import SubscriptionSpec, TraceHeader
from conformance.trace.builder import TraceBuilder

__all__ = ["UNACKED_CASES"]


def _start(limit: int = 2, setting: str = "maxUnackedMessagesPerConsumer") -> TraceBuilder:
    header = TraceHeader(
        target="hand-written",
        subscription=SubscriptionSpec("s"),
        pulsar_version="4.0",
        deduplication=True,
        extra={"broker_conf": {setting: limit}},
    )
    b = TraceBuilder(header)
    b.open("c1")
    for n in range(4):
        b.publish("k", f"1:{n}")
    b.receive("c1", "k", "1:0")
    b.receive("c1", "k", "1:1")
    return b


def _rest(b: TraceBuilder) -> TraceBuilder:
    """c1 takes 1:2 and 1:3 and acks everything; the run drains."""
    b.receive("c1", "k", "1:2")
    b.receive("c1", "k", "1:3")
    for n in range(4):
        b.ack("c1", f"1:{n}")
    b.end(drained=True)
    return b


def _acked_first() -> TraceBuilder:
    b = _start()
    b.ack("c1", "1:0")
    b.ack("c1", "1:1")
    return _rest(b)


def _over() -> TraceBuilder:
    return _rest(_start())


def _batches(entries: int) -> TraceBuilder:
    """``entries`` batch entries of two messages each to c1, under a limit of 3: a round may send three entries
    (six messages: the estimate counts one message an entry before any batch); a fourth is past the limit."""
    header = TraceHeader(
        target="hand-written",
        subscription=SubscriptionSpec("s"),
        pulsar_version="4.0",
        deduplication=True,
        extra={"broker_conf": {"maxUnackedMessagesPerConsumer": 3}},
    )
    b = TraceBuilder(header)
    b.open("c1")
    ids = [f"1:{n}:-1:{m}" for n in range(entries) for m in range(2)]
    for n, m in enumerate(ids):
        b.publish(f"k{n // 2}", m)
    for n, m in enumerate(ids):
        b.receive("c1", f"k{n // 2}", m)
    for m in ids:
        b.ack("c1", m)
    b.end(drained=True)
    return b


def _over_per_subscription() -> TraceBuilder:
    """A subscription's limit alone is not judged (a read goes out whole once the dispatcher is unblocked)."""
    return _rest(_start(setting="maxUnackedMessagesPerSubscription"))


def _nacked_first() -> TraceBuilder:
    b = _start()
    b.nack("c1", "1:0")
    b.nack("c1", "1:1")
    b.receive("c1", "k", "1:0")
    b.receive("c1", "k", "1:1")
    b.ack("c1", "1:0")
    b.ack("c1", "1:1")
    return _rest(b)


def _ack_by_non_holder() -> TraceBuilder:
    """c2 acks 1:0 and 1:1, which it never received: the ack may have reached the broker (it acts on the
    subscription), so it excuses c1's count."""
    b = _start()
    b.open("c2")
    b.ack("c2", "1:0")
    b.ack("c2", "1:1")
    return _rest(b)


def _disarmed_ack() -> TraceBuilder:
    """c1's ack of 1:0 is followed by its redeliver request, which disarms it (it may never have arrived); the
    request sends back what c1 held, so c1 may take 1:1 again and, once it acks it, 1:2 and 1:3."""
    b = _start()
    b.ack("c1", "1:0")
    b.redeliver("c1")
    b.receive("c1", "k", "1:1")
    b.ack("c1", "1:1")
    return _rest(b)


def _late_ack() -> TraceBuilder:
    """c2 acks 1:0 and 1:1 after its own close (late acks: they may never have arrived): they excuse."""
    b = _start()
    b.open("c2")
    b.close("c2")
    b.ack("c2", "1:0")
    b.ack("c2", "1:1")
    return _rest(b)


def _fault_between() -> TraceBuilder:
    """A broker restart drops c1 at the broker: 1:0 and 1:1 come again and count from nothing."""
    b = _start()
    b.fault()
    b.receive("c1", "k", "1:0")
    b.receive("c1", "k", "1:1")
    b.ack("c1", "1:0")
    b.ack("c1", "1:1")
    return _rest(b)


def _ack_before_its_queued_copy(acked: bool = True) -> TraceBuilder:
    """Generated program 685's shape: after a restart the broker sends c1 again the 1:0 and 1:1 it held, then takes
    c1's acks of them (sent for the copies received before the restart): off c1's count although the queued copies
    are read after the acks.  Without those acks (``acked=False``) the copies are held and 1:2 is over the limit."""
    b = _start()
    b.fault()
    if acked:
        b.ack("c1", "1:0")
        b.ack("c1", "1:1")
    b.receive("c1", "k", "1:0")
    b.receive("c1", "k", "1:1")
    return _rest(b)


def _over_across_keys() -> TraceBuilder:
    """Under a limit of 7, c1 receives one message of each of 8 keys before an ack: INVALID at the eighth (the count
    spans keys, so an engine that splits by key must judge this trace whole: without that, each part of two sees
    fewer than 8 and finds nothing)."""
    header = TraceHeader(
        target="hand-written",
        subscription=SubscriptionSpec("s"),
        pulsar_version="4.0",
        deduplication=False,  # nothing else sends the trace whole (stored_below_highest judges across parts)
        extra={"broker_conf": {"maxUnackedMessagesPerConsumer": 7}},
    )
    b = TraceBuilder(header)
    b.open("c1")
    keys = [f"key-{n}" for n in range(8)]
    for n, key in enumerate(keys):
        b.publish(key, f"1:{n}")
    for n, key in enumerate(keys):
        b.receive("c1", key, f"1:{n}")
    for n in range(len(keys)):
        b.ack("c1", f"1:{n}")
    b.end(drained=True)
    return b


def _batch_overshoot() -> TraceBuilder:
    """1:1 opens a batch entry of three: with one message held (under the limit of 2) the broker sends the
    whole entry, three over the limit's edge: allowed (the check is before the entry)."""
    header = TraceHeader(
        target="hand-written",
        subscription=SubscriptionSpec("s"),
        pulsar_version="4.0",
        deduplication=True,
        extra={"broker_conf": {"maxUnackedMessagesPerConsumer": 2}},
    )
    b = TraceBuilder(header)
    b.open("c1")
    ids = ["1:0", "1:1:-1:0", "1:1:-1:1", "1:1:-1:2"]
    for m in ids:
        b.publish("k", m)
    for m in ids:
        b.receive("c1", "k", m)
    for m in ids:
        b.ack("c1", m)
    b.end(drained=True)
    return b


def _batch_after_limit() -> TraceBuilder:
    """A batch entry of key ``j`` sent after 1:0 and 1:1 reached the limit of 2: INVALID."""
    b = _start()
    batch = ("1:4:-1:0", "1:4:-1:1")
    for m in batch:
        b.publish("j", m)
    for m in batch:
        b.receive("c1", "j", m)
    b.receive("c1", "k", "1:2")
    b.receive("c1", "k", "1:3")
    for m in ("1:0", "1:1", "1:2", "1:3", *batch):
        b.ack("c1", m)
    b.end(drained=True)
    return b


UNACKED_CASES = {
    "acked-first": (_acked_first, []),
    "over": (_over, ["received_beyond_unacked_limit"]),
    "only-a-subscription-limit": (_over_per_subscription, []),
    "batches-in-one-round": (lambda: _batches(3), []),
    "batch-past-the-entries": (lambda: _batches(4), ["received_beyond_unacked_limit"]),
    "nacked-first": (_nacked_first, []),
    "ack-by-non-holder": (_ack_by_non_holder, []),
    "disarmed-ack": (_disarmed_ack, []),
    "late-ack": (_late_ack, []),
    "fault-between": (_fault_between, []),
    "batch-overshoot": (_batch_overshoot, []),
    "batch-after-limit": (_batch_after_limit, ["received_beyond_unacked_limit"]),
    "over-across-keys": (_over_across_keys, ["received_beyond_unacked_limit"]),
    "ack-before-its-queued-copy": (_ack_before_its_queued_copy, []),
    "queued-copy-without-ack": (lambda: _ack_before_its_queued_copy(acked=False), ["received_beyond_unacked_limit"]),
}
