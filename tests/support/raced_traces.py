"""Generated traces for the differential tests: simulated brokers and arbitrary traces, raced.

:func:`generate` gives a trace of one family — ``synth`` (a correct broker with random kinds planted), ``fuzz``
(well-formed, arbitrary semantics), and each ``-raced`` with :func:`race` applied.  Pure functions of the seed.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

from trace_synth import PLANTABLE, SynthConfig, fuzz, synthesize

from conformance.trace.events import Event, Op, Result
from conformance.trace.header import TraceHeader

__all__ = ["FAMILIES", "generate", "race"]

FAMILIES = ("synth", "synth-raced", "fuzz", "fuzz-raced")


def _renumber(events: list[Event]) -> list[Event]:
    return [replace(e, i=n) for n, e in enumerate(events)]


def race(events: list[Event], rnd: random.Random, *, benign: bool = False) -> list[Event]:
    """The same trace with the races of a real run added.

    ``benign``: only what a correct broker's trace may also show (duplicate acks, acks by non-holders after the
    holder's own, late acks of acknowledged messages, equal timestamps), so the verdict must not change.
    """
    consumers = sorted({e.consumer for e in events if e.consumer is not None}) or ["c0"]
    out: list[Event] = []
    acked: list[Event] = []
    for e in events:
        if not benign and e.op is Op.RECEIVE and rnd.random() < 0.05:  # acked by another before it arrives
            out.append(replace(e, op=Op.ACK, consumer=rnd.choice(consumers), uid=None, redelivery_count=None))
        if not benign and e.op is not Op.END and rnd.random() < 0.02:
            named = rnd.sample(consumers, rnd.randint(0, min(2, len(consumers))))
            extra: dict[str, Any] = {"fault": "client_reconnect", "consumers": named}
            if rnd.random() < 0.2:
                extra["unattributed"] = ["handler-9"]
            out.append(Event(i=0, t=e.t, op=Op.FAULT, extra=extra))
        if not benign and e.op is Op.PUBLISH and e.producer is not None and rnd.random() < 0.04:
            receipt = replace(e, msg_id="-1:-1", result=Result.OK, seq=rnd.choice([e.seq, (e.seq or 0) + 50]))
            out.append(receipt)
        out.append(e)
        if e.op is Op.ACK:
            acked.append(e)
            roll = rnd.random()
            if roll < 0.1:
                out.append(replace(e))  # the application acks twice
            elif roll < 0.2:
                out.append(replace(e, consumer=rnd.choice(consumers)))  # someone else acks it too
        if e.op in (Op.CLOSE, Op.CRASH) and acked and rnd.random() < 0.3:
            late = rnd.choice(acked)  # an ack logged after its consumer's close
            out.append(replace(late, consumer=e.consumer, t=e.t))
    if rnd.random() < 0.5:
        out = [replace(e, t=0, extra={**e.extra, "t0": 0} if "t0" in e.extra else e.extra) for e in out]
    return _renumber(out)


def generate(family: str, seed: int) -> tuple[TraceHeader, list[Event]]:
    rnd = random.Random(seed)
    if family.startswith("synth"):
        plant = frozenset(k for k in PLANTABLE if rnd.random() < 0.3)
        config = SynthConfig(
            messages=rnd.randint(5, 30),
            keys=rnd.randint(1, 4),
            consumers=rnd.randint(1, 3),
            partitions=rnd.choice([0, 0, 2]),
            selector=rnd.choice([None, "auto-split"]),
            deduplication=rnd.random() < 0.7,
            churn=rnd.choice([0.0, 0.05, 0.15]),
            nack_rate=rnd.choice([0.0, 0.05, 0.2]),
            redeliver_rate=rnd.choice([0.0, 0.03]),
            fault_rate=rnd.choice([0.0, 0.0, 0.03]),
            receipt_delay_rate=rnd.choice([0.0, 0.3]),
            batch_rate=rnd.choice([0.0, 0.3]),
            drain=rnd.random() < 0.9,
            plant=plant,
        )
        run = synthesize(seed, config)
    else:
        run = fuzz(seed, events=rnd.randint(20, 80), consumers=rnd.randint(1, 4), messages=rnd.randint(2, 10),
                   selector=None)  # fmt: skip
    events = run.events
    if family.endswith("raced"):
        events = race(events, rnd)
    return run.header, events
