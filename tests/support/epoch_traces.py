"""Hand-written traces of deduplication epochs (importable as ``epoch_traces``): a producer forgotten by the purge
(closed past the inactivity timeout plus one purge period), and deduplication switched off and on at run time.
Each builder gives a correct broker's trace by default and plants one fault when asked
(:mod:`conformance.checks.epochs`)."""

from __future__ import annotations

from conformance.trace.builder import TraceBuilder
from conformance.trace.header import SubscriptionSpec, TraceHeader

__all__ = ["BOUND_NS", "S", "probed", "purged", "switched"]

#: a 1-minute inactivity timeout plus one purge period (20 s), in ns
BOUND_NS = 80 * 1_000_000_000


def _builder(*, timeout_minutes: int | None = 1) -> TraceBuilder:
    conf = {"brokerDeduplicationProducerInactivityTimeoutMinutes": timeout_minutes}
    extra = {} if timeout_minutes is None else {"broker_conf": conf}
    header = TraceHeader(
        target="hand-written", subscription=SubscriptionSpec("s"), pulsar_version="4.0", deduplication=True,
        extra=extra,
    )  # fmt: skip
    return TraceBuilder(header)


def _open_producer(b: TraceBuilder, answer: int, *, t0: int | None = None, producer: str = "p") -> None:
    b.add("producer_open", topic=b.topic, producer=producer, seq=answer, result="ok", t0=b.t if t0 is None else t0)


def purged(
    *,
    gap_ns: int = BOUND_NS + 1,
    answer: int = -1,
    resend: str = "1:3",
    restart: bool = False,
    timeout_minutes: int | None = 1,
    receive_first: bool = False,
) -> TraceBuilder:
    """Producer ``p`` stores ids 1 and 2 (uids ``u1``, ``u2``), is closed, and is created again ``gap_ns`` after its
    close began its inactivity; it is answered ``answer`` and resends id 1 (uid ``u1`` again), answered ``resend``.
    A correct broker (the defaults): past the bound the producer is forgotten, so -1 and id 1 stored again (``c1``
    receives both copies; ``receive_first``: the second copy's receive logged before its receipt).  ``restart``: a
    broker restart between the close and the creation (nothing is then proven)."""
    b = _builder(timeout_minutes=timeout_minutes)
    b.open("c1")
    _open_producer(b, -1)
    b.publish("k", "1:0", producer="p", seq=1, uid="u1")
    b.publish("k", "1:1", producer="p", seq=2, uid="u2")
    b.receive("c1", "k", "1:0", uid="u1")
    b.ack("c1", "1:0")
    b.receive("c1", "k", "1:1", uid="u2")
    b.ack("c1", "1:1")
    b.add("producer_close", topic=b.topic, producer="p", result="ok")
    closed_t = b.t - b.step
    if restart:
        b.fault("broker_restart")
        b.fault("broker_restarted")
    b.t = closed_t + gap_ns
    _open_producer(b, answer, t0=closed_t + gap_ns)
    stored = not resend.startswith("-1")
    if receive_first and stored:
        b.receive("c1", "k", resend, uid="u1")
    b.publish("k", resend, producer="p", seq=1, uid="u1")
    if stored and not receive_first:
        b.receive("c1", "k", resend, uid="u1")
    if stored:
        b.ack("c1", resend)
    b.end()
    return b


def switched(*, answer: int = 2, resend: str = "-1:-1") -> TraceBuilder:
    """Deduplication switched off and on at run time, then a broker restart: producer ``p`` stores ids 1..3, sends id 1
    again while deduplication is off (stored: the broker judges nothing), and ids 1, 2 after it is on again (stored:
    the broker's maps started afresh, Pulsar's new ``pulsar.dedup`` cursor); after a restart it is created again,
    answered ``answer`` and resends id 2, answered ``resend``.  A correct broker (the defaults) recovered the ids
    written since the switch-on: answers 2 and drops the resend (``-1:-1``)."""
    b = _builder(timeout_minutes=None)
    b.open("c1")
    _open_producer(b, -1)
    sent = [("1:0", 1, "u1"), ("1:1", 2, "u2"), ("1:2", 3, "u3")]
    for msg, seq, uid in sent:
        b.publish("k", msg, producer="p", seq=seq, uid=uid)
    b.add("fault", fault="deduplication_off", consumers=[])
    sent.append(("1:3", 1, "v1"))
    b.publish("k", "1:3", producer="p", seq=1, uid="v1")
    b.add("fault", fault="deduplication_on", consumers=[])
    sent += [("1:4", 1, "w1"), ("1:5", 2, "w2")]
    b.publish("k", "1:4", producer="p", seq=1, uid="w1")
    b.publish("k", "1:5", producer="p", seq=2, uid="w2")
    b.fault("broker_restart")
    b.fault("broker_restarted")
    _open_producer(b, answer)
    b.publish("k", resend, producer="p", seq=2, uid="w2")
    for msg, _seq, uid in sent:
        b.receive("c1", "k", msg, uid=uid)
        b.ack("c1", msg)
    if not resend.startswith("-1"):
        b.receive("c1", "k", resend, uid="w2")
        b.ack("c1", resend)
    b.end()
    return b


S = 1_000_000_000


def probed(period_s: int = 20, phase_s: int = 0, *, restart_at_s: int | None = None, probes: int = 21) -> TraceBuilder:
    """The ``dedup/purge-schedule`` workload against a broker purging every ``period_s`` seconds from ``phase_s``
    (a correct broker with the 1-minute timeout: 20 s, from its start; after ``restart_at_s``, from the restart):
    producers p1..pN store id 1 and close 2 s apart, each created again 68 s after its close, answered -1 when a run
    fell after its close plus 60 s, else 1."""
    b = _builder()
    b.step = 0
    b.open("c1")
    if restart_at_s is not None:
        b.t = restart_at_s * S
        b.fault("broker_restart")
        b.fault("broker_restarted")
        phase_s = restart_at_s
    b.t = 100 * S
    for k in range(probes):
        b.add("producer_open", topic=b.topic, producer=f"p{k}", seq=-1, result="ok", t0=b.t)
        b.publish("k", f"1:{k}", producer=f"p{k}", seq=1, uid=f"u{k}")
    closes = [b.t + 2 * S * k for k in range(probes)]
    for k, c in enumerate(closes):
        b.t = c
        b.add("producer_close", topic=b.topic, producer=f"p{k}", result="ok", t0=c)
    for k, c in enumerate(closes):
        opened = c + 68 * S
        runs = [phase_s * S + j * period_s * S for j in range(100)]
        forgotten = any(c + 60 * S < r < opened for r in runs)
        b.t = opened
        _open_producer(b, -1 if forgotten else 1, t0=opened, producer=f"p{k}")
    for k in range(probes):
        b.receive("c1", "k", f"1:{k}", uid=f"u{k}")
        b.ack("c1", f"1:{k}")
    b.end()
    return b
