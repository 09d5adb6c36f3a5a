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
from conformance.trace.identity import canonical_message

__all__ = ["FAMILIES", "SHAPES", "generate", "race", "shapes"]

FAMILIES = ("synth", "synth-raced", "fuzz", "fuzz-raced")


def _renumber(events: list[Event]) -> list[Event]:
    return [replace(e, i=n) for n, e in enumerate(events)]


def _gaps(events: list[Event], rnd: random.Random) -> tuple[list[Event], dict[str, int]]:
    """The same trace with each producer's sequence ids spread out (``seq * stride``): gaps a producer that
    numbers its own messages leaves, and ids in them that a correct broker answers ``-1:-1`` (issue 26)."""
    producers = sorted({e.producer for e in events if e.producer is not None})
    stride = {p: rnd.choice([1, 2, 3, 5]) for p in producers}
    spread = [replace(e, seq=e.seq * stride[e.producer]) if e.producer is not None and e.seq is not None else e
              for e in events]  # fmt: skip
    return spread, stride


def race(events: list[Event], rnd: random.Random, *, benign: bool = False) -> list[Event]:
    """The same trace with the races of a real run added.

    ``benign``: only what a correct broker's trace may also show (duplicate acks, acks by non-holders after the
    holder's own, late acks of acknowledged messages, equal timestamps, gapped sequence ids and the ``-1:-1``
    answer to an id in a gap below one stored), so the verdict must not change.  Otherwise also: acks before
    the receive, scoped faults, duplicate receipts of any id, and nacks and redeliver requests after acks that
    may never have taken effect (issue 24): an ack disarmed by its consumer's redeliver request, a fault or a
    crash and the message received (and nacked) again; a late ack before or after another consumer's nack; an
    ack by a consumer that does not hold the message before or after the holder's nack.
    """
    consumers = sorted({e.consumer for e in events if e.consumer is not None}) or ["c0"]
    events, stride = _gaps(events, rnd)
    out: list[Event] = []
    acked: list[Event] = []
    live: set[str] = set()
    message: dict[tuple[str | None, str | None], Event] = {}  # (topic, msg_id) -> a receive or publish of it

    def redelivery(of: Event, consumer: str) -> Event | None:
        seen = message.get((of.topic, of.msg_id))
        if seen is None:
            return None
        return replace(seen, t=of.t, op=Op.RECEIVE, consumer=consumer, producer=None, seq=None, result=None,
                       redelivery_count=1, extra={})  # fmt: skip

    def other(than: str | None) -> str | None:
        choices = sorted(live - {than})
        return rnd.choice(choices) if choices else None

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
        if e.op is Op.OPEN and (e.result is None or e.result is Result.OK) and e.consumer is not None:
            live.add(e.consumer)
        elif e.op in (Op.CLOSE, Op.CRASH):
            live.discard(e.consumer or "")
        if e.op in (Op.PUBLISH, Op.RECEIVE) and e.msg_id is not None and not e.msg_id.startswith("-1"):
            message.setdefault((e.topic, e.msg_id), e)
        stored = e.op is Op.PUBLISH and e.result is Result.OK and not (e.msg_id or "-1").startswith("-1")
        if stored and e.producer is not None and e.seq and stride[e.producer] > 1 and rnd.random() < 0.15:
            out.append(replace(e, msg_id="-1:-1", seq=e.seq - 1, uid=f"{e.uid}-gap"))  # an id in the gap below
        if not benign and e.op is Op.RECEIVE and e.consumer in live and rnd.random() < 0.04:
            # an ack by a consumer that does not hold it, and the holder's nack: before or after it
            acker = other(e.consumer)
            if acker is not None:
                ack = replace(e, op=Op.ACK, consumer=acker, uid=None, redelivery_count=None)
                nack = replace(e, op=Op.NACK, uid=None, redelivery_count=None)
                out.extend([ack, nack] if rnd.random() < 0.5 else [nack, ack])
        if e.op is Op.ACK:
            acked.append(e)
            roll = rnd.random()
            if roll < 0.1:
                out.append(replace(e))  # the application acks twice
            elif roll < 0.2:
                out.append(replace(e, consumer=rnd.choice(consumers)))  # someone else acks it too
            elif not benign and roll < 0.3 and e.consumer in live:
                # the ack may never take effect: its consumer's redeliver request, a fault or a crash disarms
                # it, the message comes back, and (mostly) is nacked
                how = rnd.choice(["redeliver", "fault", "crash"])
                if how == "fault":
                    out.append(Event(i=0, t=e.t, op=Op.FAULT, extra={"fault": "client_reconnect",
                                                                  "consumers": [e.consumer]}))  # fmt: skip
                else:
                    out.append(Event(i=0, t=e.t, op=Op(how), consumer=e.consumer))
                    if how == "crash":
                        live.discard(e.consumer or "")
                receiver = e.consumer if e.consumer in live else other(None)
                again = None if receiver is None or rnd.random() < 0.2 else redelivery(e, receiver)
                if again is not None and receiver is not None:
                    out.append(again)
                    if rnd.random() < 0.7:
                        out.append(replace(e, op=Op.NACK, consumer=receiver))
        if not benign and e.op is Op.NACK and rnd.random() < 0.15:  # then acked by a non-holder, or late
            gone = sorted({c for c in consumers if c not in live and any(a.consumer == c for a in acked)})
            acker = rnd.choice(gone) if gone and rnd.random() < 0.5 else other(e.consumer)
            if acker is not None:
                out.append(replace(e, op=Op.ACK, consumer=acker))
        if e.op in (Op.CLOSE, Op.CRASH) and acked and rnd.random() < 0.3:
            late = rnd.choice(acked)  # an ack logged after its consumer's close
            out.append(replace(late, consumer=e.consumer, t=e.t))
            receiver = None if benign or rnd.random() < 0.5 else other(e.consumer)
            again = None if receiver is None else redelivery(late, receiver)
            if again is not None and receiver is not None:  # another consumer gets it and nacks it
                out.extend([replace(again, t=e.t), replace(late, op=Op.NACK, consumer=receiver, t=e.t)])
    if rnd.random() < 0.5:
        out = [replace(e, t=0, extra={**e.extra, "t0": 0} if "t0" in e.extra else e.extra) for e in out]
    return _renumber(out)


SHAPES = (
    "nack-after-lost-ack",
    "nack-after-late-ack",
    "nack-before-late-ack",
    "nack-after-non-holder-ack",
    "nack-before-non-holder-ack",
    "redeliver-after-ack",
    "gapped-duplicate",
)


def shapes(events: list[Event]) -> set[str]:
    """Which of :data:`SHAPES` a trace shows, read from the events alone (to prove the generator draws them).

    A *lost* ack: its consumer's redeliver request, crash or a fault naming it follows, then a receive of the
    message; a *late* ack: by a consumer with no open handle; a *non-holder's* ack: by a consumer that did not
    receive the message since its last ack; a *gapped duplicate*: a ``-1:-1`` receipt for an id below one the
    producer had stored, and never stored itself.
    """
    found: set[str] = set()
    live: set[str] = set()
    holders: dict[tuple[str | None, str | None], set[str]] = {}
    acks: dict[tuple[str | None, str | None], list[tuple[str, str]]] = {}  # message -> (consumer, how) so far
    disarmed_after: dict[str, list[tuple[str | None, str | None]]] = {}  # consumer -> messages it acked, live
    lost: set[tuple[str | None, str | None]] = set()
    nacked: dict[tuple[str | None, str | None], int] = {}
    stored: dict[str, set[int]] = {}
    duplicates: list[tuple[str, int]] = []
    for e in events:
        m = canonical_message(e.topic, e.msg_id)[:2] if e.topic and e.msg_id else (e.topic, e.msg_id)
        c = e.consumer or ""
        if e.op is Op.OPEN and (e.result is None or e.result is Result.OK):
            live.add(c)
        elif e.op in (Op.CLOSE, Op.CRASH, Op.REDELIVER, Op.FAULT):
            named = [c] if e.op is not Op.FAULT else e.extra.get("consumers")
            if named is None or e.extra.get("unattributed"):
                named = sorted(disarmed_after)
            for who in named:
                for msg in disarmed_after.pop(who, []) if e.op is not Op.CLOSE else []:
                    lost.add(msg)
            if e.op in (Op.CLOSE, Op.CRASH):
                live.discard(c)
            if e.op is Op.REDELIVER and any(who == c for done in acks.values() for who, _ in done):
                found.add("redeliver-after-ack")
        elif e.op is Op.RECEIVE:
            holders.setdefault(m, set()).add(c)
            if m in lost:
                lost.discard(m)
                acks.setdefault(m, []).append(("", "lost"))
        elif e.op is Op.ACK:
            how = "late" if c not in live else "holder" if c in holders.get(m, set()) else "non-holder"
            if m in nacked:
                found.add({"late": "nack-before-late-ack", "non-holder": "nack-before-non-holder-ack"}.get(how, ""))
            acks.setdefault(m, []).append((c, how))
            if how == "holder":
                disarmed_after.setdefault(c, []).append(m)
            holders.pop(m, None)
        elif e.op is Op.NACK:
            nacked[m] = e.i
            for _, how in acks.get(m, []):
                found.add({"lost": "nack-after-lost-ack", "late": "nack-after-late-ack",
                           "non-holder": "nack-after-non-holder-ack"}.get(how, ""))  # fmt: skip
        elif e.op is Op.PUBLISH and e.producer is not None and e.seq is not None and e.result is Result.OK:
            if (e.msg_id or "-1").startswith("-1"):
                duplicates.append((e.producer, e.seq))
                if any(s > e.seq for s in stored.get(e.producer, ())):
                    found.add("gapped-duplicate?")
            else:
                stored.setdefault(e.producer, set()).add(e.seq)
    if "gapped-duplicate?" in found:
        found.discard("gapped-duplicate?")
        if any(seq not in stored.get(p, ()) and any(s > seq for s in stored.get(p, ())) for p, seq in duplicates):
            found.add("gapped-duplicate")
    found.discard("")
    return found


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
