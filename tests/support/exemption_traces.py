"""The hand-written traces of issues 24 and 26 (importable as ``exemption_traces``), for both engines' tests.

``out_of_order`` exemptions (issue 24): an acknowledgement may *excuse* (it may have reached the broker) but may
not *condemn* (it may not have): only an ack that is armed and not since disarmed ends an exemption.  Each case
builds the trace of a correct broker (``released=True``: a nack or redeliver request gives up the key's order,
and an ack that never took effect must not take that back) and its mirror (``released=False``: the same trace
without the nack, which stays INVALID ``out_of_order``: a close or crash keeps the order).  In every case key
``k`` has 1:0, 1:1 and 1:2; 1:1 is never received, so the closing receive of 1:2 overtakes it.

``lost_write`` (issue 26): Pulsar answers a send ``-1:-1`` when its sequence id is at or below the highest one
the producer had stored, gaps or not (``MessageDeduplication.isDuplicate``), so a gapped id is no lost write;
an id above every stored one is.
"""

from __future__ import annotations

from collections.abc import Callable

from conformance.trace.builder import TraceBuilder
from conformance.trace.header import SubscriptionSpec, TraceHeader

__all__ = [
    "EXEMPTION_CASES",
    "batch_answered_below_its_highest",
    "batch_stored_below_its_pushed_id",
    "gapped_sequence",
    "lost_write_above_the_highest",
    "pulsar_40",
]


def pulsar_40() -> TraceBuilder:
    """An empty trace: Pulsar 4.0, Key_Shared, deduplication on, topic ``t``, subscription ``s``."""
    header = TraceHeader(
        target="hand-written", subscription=SubscriptionSpec("s"), pulsar_version="4.0", deduplication=True
    )
    return TraceBuilder(header)


def _published(b: TraceBuilder, *consumers: str) -> None:
    for consumer in consumers:
        b.open(consumer)
    for n in range(3):
        b.publish("k", f"1:{n}")


def _overtake(b: TraceBuilder, consumer: str) -> TraceBuilder:
    b.receive(consumer, "k", "1:2")  # 1:1 is known and waiting: only an exemption allows this
    b.end(drained=False)
    return b


def crash_disarms(released: bool) -> TraceBuilder:
    """The issue's minimal trace: c1's ack of 1:0 never took effect (the crash lost it; 1:0 came back)."""
    b = pulsar_40()
    _published(b, "c1")
    b.receive("c1", "k", "1:0")
    b.ack("c1", "1:0")
    b.crash("c1")
    b.open("c2")
    b.receive("c2", "k", "1:0", redelivery_count=1)
    if released:
        b.nack("c2", "1:0")
    return _overtake(b, "c2")


def redeliver_disarms(released: bool) -> TraceBuilder:
    """c1's redeliver request went out while its ack of 1:0 was still buffered: 1:0 came back."""
    b = pulsar_40()
    _published(b, "c1")
    b.receive("c1", "k", "1:0")
    b.ack("c1", "1:0")
    b.redeliver("c1")
    b.receive("c1", "k", "1:0", redelivery_count=1)
    if released:
        b.nack("c1", "1:0")
    return _overtake(b, "c1")


def fault_disarms(released: bool) -> TraceBuilder:
    """A fault on c1's connection lost its ack of 1:0: 1:0 came back."""
    b = pulsar_40()
    _published(b, "c1")
    b.receive("c1", "k", "1:0")
    b.ack("c1", "1:0")
    b.add("fault", fault="client_reconnect", consumers=["c1"])
    b.receive("c1", "k", "1:0", redelivery_count=1)
    if released:
        b.nack("c1", "1:0")
    return _overtake(b, "c1")


def late_ack_before_release(released: bool) -> TraceBuilder:
    """c1's ack of 1:0 is logged after its close (it may never have been sent); c2 then gets 1:0 and nacks it."""
    b = pulsar_40()
    _published(b, "c1")
    b.receive("c1", "k", "1:0")
    b.close("c1")
    b.ack("c1", "1:0")  # late: c1 is closed
    b.open("c2")
    b.receive("c2", "k", "1:0", redelivery_count=1)
    if released:
        b.nack("c2", "1:0")
    return _overtake(b, "c2")


def late_ack_after_release(released: bool) -> TraceBuilder:
    """c2 nacks 1:0 (exempting k); then c1's ack of 1:0, logged after c1's close, arrives in the trace."""
    b = pulsar_40()
    _published(b, "c1")
    b.receive("c1", "k", "1:0")
    b.close("c1")
    b.open("c2")
    b.receive("c2", "k", "1:0", redelivery_count=1)
    if released:
        b.nack("c2", "1:0")
    b.ack("c1", "1:0")  # late: c1 is closed
    return _overtake(b, "c2")


def non_holder_ack_before_release(released: bool) -> TraceBuilder:
    """c2 acks 1:0, which c1 holds (it arms nothing); c1 then nacks 1:0."""
    b = pulsar_40()
    _published(b, "c1", "c2")
    b.receive("c1", "k", "1:0")
    b.ack("c2", "1:0")
    if released:
        b.nack("c1", "1:0")
    return _overtake(b, "c1")


def non_holder_ack_after_release(released: bool) -> TraceBuilder:
    """c1 nacks 1:0 (exempting k); c2, which never held 1:0, then acks it."""
    b = pulsar_40()
    _published(b, "c1", "c2")
    b.receive("c1", "k", "1:0")
    if released:
        b.nack("c1", "1:0")
    b.ack("c2", "1:0")
    return _overtake(b, "c1")


def armed_ack_disarmed_later(released: bool) -> TraceBuilder:
    """c1 nacks 1:0, gets it again and acks it (armed: the exemption ends), then crashes before the ack could be
    sent (disarmed: the exemption holds again)."""
    b = pulsar_40()
    _published(b, "c1")
    b.receive("c1", "k", "1:0")
    if released:
        b.nack("c1", "1:0")
        b.receive("c1", "k", "1:0", redelivery_count=1)
    b.ack("c1", "1:0")
    b.crash("c1")
    b.open("c2")
    return _overtake(b, "c2")


#: name -> builder(released): VALID with the release, INVALID ``out_of_order`` without it
EXEMPTION_CASES: dict[str, Callable[[bool], TraceBuilder]] = {
    "crash-disarms": crash_disarms,
    "redeliver-disarms": redeliver_disarms,
    "fault-disarms": fault_disarms,
    "late-ack-before-release": late_ack_before_release,
    "late-ack-after-release": late_ack_after_release,
    "non-holder-ack-before-release": non_holder_ack_before_release,
    "non-holder-ack-after-release": non_holder_ack_after_release,
    "armed-ack-disarmed-later": armed_ack_disarmed_later,
}


def _stored(b: TraceBuilder, seqs: tuple[int, ...]) -> None:
    b.open("c1")
    for n, seq in enumerate(seqs):
        b.publish("k", f"1:{n}", seq=seq)


def _drain(b: TraceBuilder, count: int) -> TraceBuilder:
    for n in range(count):
        b.receive("c1", "k", f"1:{n}")
        b.ack("c1", f"1:{n}")
    b.end()
    return b


def gapped_sequence() -> TraceBuilder:
    """Sequence ids 0, 1, 5 stored, then 3 answered as a duplicate (``-1:-1``): Pulsar's documented behaviour."""
    b = pulsar_40()
    _stored(b, (0, 1, 5))
    b.publish("k", "-1:-1", seq=3, uid="u3")
    return _drain(b, 3)


def lost_write_above_the_highest(*, then_higher: bool = False) -> TraceBuilder:
    """0, 1, 5 stored, then 6 answered ``-1:-1`` and never stored: a lost write.  ``then_higher``: 7 is sent after
    the receipt was logged and stored (it cannot have made 6 a duplicate)."""
    b = pulsar_40()
    _stored(b, (0, 1, 5))
    b.publish("k", "-1:-1", seq=6, uid="u6")
    count = 3
    if then_higher:
        b.publish("k", "1:3", seq=7)
        count = 4
    return _drain(b, count)


def gapped_id_stored(*, step: int = 1000) -> TraceBuilder:
    """0, 1, 5 stored, then 3 sent after 5's receipt was logged and stored as well: what a broker that keeps a set of
    stored ids (not the highest pushed one) does; ``stored_below_highest``.  ``step``: ns between events (0: equal
    timestamps, where the send of 3 cannot be shown to follow 5's receipt)."""
    b = pulsar_40()
    b.step = step
    _stored(b, (0, 1, 5))
    b.publish("k", "1:3", seq=3, t0=b.t - step // 2 if step else b.t)
    return _drain(b, 4)


def producer_answered(answer: int, *, step: int = 1000) -> TraceBuilder:
    """0, 1, 5 stored by producer ``p``, which is then created again and told ``answer`` as its last sequence id
    (``producer_open``): Pulsar answers 5; below it is ``last_sequence_id_behind``.  ``step``: ns between events."""
    b = pulsar_40()
    b.step = step
    _stored(b, (0, 1, 5))
    b.add("producer_open", topic=b.topic, producer="p", seq=answer, result="ok", t0=b.t - step // 2 if step else b.t)
    return _drain(b, 3)


def failed_send_delivered(*, then: str | None = None, receive_first: bool = False) -> TraceBuilder:
    """Producer ``p`` sends id 1 (uid ``u1``) and the send fails (``fail``: not stored), yet ``c1`` receives it:
    ``unexpected_message``.  ``then``: a resend of it with that result (``ok`` or ``info``: it may be stored, so the
    receive is expected).  ``receive_first``: the receive is logged before the failed publish."""
    b = pulsar_40()
    b.open("c1")
    if receive_first:
        b.receive("c1", "k", "1:0", uid="u1")
    b.add("publish", topic=b.topic, producer="p", key="k", seq=1, uid="u1", result="fail", t0=b.t)
    if then is not None:
        b.publish("k", "1:0" if then == "ok" else "-1:-1", seq=1, uid="u1", result=then)
    if not receive_first:
        b.receive("c1", "k", "1:0", uid="u1")
    b.ack("c1", "1:0")
    b.end()
    return b


def batch_answered_below_its_highest(*, second_send: int = 4, step: int = 1000) -> TraceBuilder:
    """``MessageDuplicationTest.testIsDuplicate`` against a broker: the raw producer sends ids 1..5 as one batch
    ``1, highest 5`` (stored), then 4..8 as ``second_send, highest 8``, every message answered ``-1:-1``.  With
    ``second_send`` 4 (at or below the pushed 5) that is Pulsar's answer: 6, 7 and 8 are never stored and no lost
    write; with 6 (above everything stored) it is three lost writes.  ``step``: ns between events (0: equal)."""
    b = pulsar_40()
    b.step = step
    b.open("c1")
    for n, seq in enumerate(range(1, 6)):
        b.publish("k", f"1:0:-1:{n}", seq=seq, uid=f"u{seq}", send_ids=(1, 5))
    for n, seq in enumerate(range(4, 9)):
        b.publish("k", f"-1:-1:-1:{n}", seq=seq, uid=f"u{seq}" if seq <= 5 else f"v{seq}", send_ids=(second_send, 8))
    for n in range(5):
        b.receive("c1", "k", f"1:0:-1:{n}", uid=f"u{n + 1}")
        b.ack("c1", f"1:0:-1:{n}")
    b.end()
    return b


def batch_stored_below_its_pushed_id(*, send: int = 4, then_alone: int | None = None) -> TraceBuilder:
    """1..5 stored as one batch ``1, highest 5``, then 6..8 sent as ``send, highest 8`` and stored: with ``send`` 4
    (at or below the pushed 5) a broker that stores it is ``stored_below_highest``; with 6, Pulsar's answer.
    ``then_alone``: an unbatched id never sent before, sent after and stored (0: below the pushed 8 or 5,
    ``stored_below_highest``)."""
    b = pulsar_40()
    b.open("c1")
    for n, seq in enumerate(range(1, 6)):
        b.publish("k", f"1:0:-1:{n}", seq=seq, uid=f"u{seq}", send_ids=(1, 5))
    for n, seq in enumerate(range(6, 9)):
        b.publish("k", f"1:1:-1:{n}", seq=seq, uid=f"u{seq}", send_ids=(send, 8))
    if then_alone is not None:
        b.publish("k", "1:2", seq=then_alone, uid="alone")
    b.end(drained=False)
    return b
