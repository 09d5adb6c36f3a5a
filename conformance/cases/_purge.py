"""The deduplication purge of inactive producers, judged by the case (``not_purged``).

Pulsar forgets a producer that has been disconnected for ``brokerDeduplicationProducerInactivityTimeoutMinutes``:
``MessageDeduplication.purgeInactiveProducers`` removes it from the sequence-id maps, and
``BrokerService.startInactivityMonitor`` runs that purge at a fixed rate of a third of the timeout, first one
period after the broker service started (``scheduleAtFixedRate(checkMessageDeduplicationInfo, timeout / 3,
timeout / 3)``; a restarted broker schedules it anew). A producer of that name created again afterwards is
answered last sequence id -1 and its low ids are stored again. So once a producer has been closed for at least the
timeout plus one purge period, whatever the phase of the purge's schedule (which no client sees: it counts from
the broker's start), the broker must have forgotten it. The exact period is not judged: which purge run forgets a
producer depends on that phase, so a broker purging every quarter of the timeout differs from one purging every
third only for some close times relative to a start a client does not know.

The trace checker judges every trace as if no producer were ever forgotten (``duplicate_publish``,
``last_sequence_id_behind``): no trace records when a producer closed, nor the broker's timeout. A scenario gives
both: its ``[broker]`` timeout and its steps, where the ``sleep`` steps between a ``close_producer`` and the
producer's next creation bound the time it was inactive from below, on any target. For such a scenario this module
says which creations must find the producer forgotten (:func:`purged_creations`), the case permits those two kinds
to the checker and judges them itself, exactly, per *epoch* (the stretch of a producer's events between two
forgetting creations): within an epoch no (producer, id) is stored twice and no creation is answered below an id
stored before it; at an epoch's start the answer is -1 and a resend of an earlier epoch's id is stored
(``not_purged`` otherwise). An inactivity that is not bounded (a broker restart or a deduplication switch between
the close and the creation, or less sleep than timeout plus period) is not judged as a purge: the checker's rules
hold there unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from conformance.scenarios.model import (
    CloseProducer,
    Deduplication,
    OpenProducer,
    Publish,
    Resend,
    RestartBroker,
    Scenario,
    Sleep,
)
from conformance.trace.events import MsgId

__all__ = ["PURGE_TIMEOUT", "purge_problems", "purge_timeout_ms", "purged_creations"]

#: the ``[broker]`` setting: minutes a disconnected producer is kept by deduplication
PURGE_TIMEOUT = "brokerDeduplicationProducerInactivityTimeoutMinutes"


def purge_timeout_ms(scenario: Scenario) -> int | None:
    """The scenario's inactivity timeout in ms, when it sets one and runs with deduplication on."""
    minutes = dict(scenario.broker).get(PURGE_TIMEOUT)
    if not scenario.settings.deduplication or not isinstance(minutes, int) or minutes <= 0:
        return None
    return minutes * 60_000


def _creates(step: Any) -> str | None:
    """The producer a step creates again if it is closed (``open_producer``, ``publish``, ``resend``)."""
    if isinstance(step, (OpenProducer, Publish, Resend)):
        return step.producer
    return None


def purged_creations(scenario: Scenario) -> dict[int, str]:
    """``{step index (1-based): producer}`` for each step that creates a producer closed, on every target, for at
    least the timeout plus one purge period (a third of it) of sleep since its ``close_producer``."""
    timeout = purge_timeout_ms(scenario)
    if timeout is None:
        return {}
    bound = timeout + timeout // 3
    slept: dict[str, int] = {}  # closed producer -> ms of sleep since its close
    found: dict[int, str] = {}
    for index, step in enumerate(scenario.steps, start=1):
        if isinstance(step, CloseProducer):
            slept[step.producer] = 0
        elif isinstance(step, Sleep):
            slept = {name: ms + step.ms for name, ms in slept.items()}
        elif isinstance(step, (RestartBroker, Deduplication)):
            slept.clear()  # recovery or a switch: inactivity since the close is not this rule's to judge
        name = _creates(step)
        if name is not None and name in slept and slept.pop(name) >= bound:  # a creation ends the inactivity
            found[index] = name
    return found


def purge_problems(scenario: Scenario, result: Any) -> list[tuple[str, str]]:
    """``(kind, explanation)`` for every purge the run shows missing, and every duplicate or stale answer within one
    epoch (the kinds the case permits the checker to leave to it); empty when the scenario forgets no producer."""
    from conformance.trace.reader import open_trace

    creations = purged_creations(scenario)
    if not creations:
        return []
    # the trace events each forgetting creation recorded: its producer_open starts a new epoch of that producer
    starts: dict[int, str] = {}
    for outcome in result.steps:
        name = creations.get(outcome.index)
        if name is not None:
            starts.update({i: name for i in range(outcome.first_event, outcome.end_event)})
    return _judge(open_trace(result.trace_path).events() if isinstance(result.trace_path, (str, Path)) else (), starts)


def _judge(events: Iterable[Any], starts: dict[int, str]) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    epoch: dict[str, int] = {}  # producer -> epoch number
    stored: dict[tuple[str, int, int], str] = {}  # (producer, epoch, seq) -> message id
    highest: dict[tuple[str, int], int] = {}  # (producer, epoch) -> highest id stored
    earlier: dict[str, set[int]] = {}  # producer -> ids stored in an earlier epoch
    fresh: set[str] = set()  # producers whose epoch just started: their resends of earlier ids must be stored
    for event in events:
        op, producer = event.op.value, event.producer
        if producer is None:
            continue
        if op == "producer_open" and event.result == "ok":
            if starts.get(event.i) == producer:
                if event.seq != -1:
                    problems.append(
                        (
                            "not_purged",
                            f"not_purged: E{event.i} producer {producer!r} was created again after it had been closed"
                            " longer than the deduplication inactivity timeout plus one purge period, and answered"
                            f" last sequence id {event.seq}: the broker did not forget it (expected -1)",
                        )
                    )
                earlier.setdefault(producer, set()).update(
                    seq for (name, ep, seq) in stored if name == producer and ep == epoch.get(producer, 0)
                )
                epoch[producer] = epoch.get(producer, 0) + 1
                fresh.add(producer)
                continue
            top = highest.get((producer, epoch.get(producer, 0)))
            if top is not None and event.seq is not None and event.seq < top:
                problems.append(
                    (
                        "last_sequence_id_behind",
                        f"last_sequence_id_behind: E{event.i} producer {producer!r} was answered last sequence id"
                        f" {event.seq} after {top} was stored (since it was last forgotten)",
                    )
                )
            continue
        if op != "publish" or event.result != "ok" or event.seq is None or event.msg_id is None:
            continue
        ep, seq = epoch.get(producer, 0), int(event.seq)
        dropped = MsgId.parse(str(event.msg_id)).is_dedup_receipt
        if producer in fresh and seq in earlier.get(producer, set()) and (producer, ep, seq) not in stored and dropped:
            problems.append(
                (
                    "not_purged",
                    f"not_purged: E{event.i} producer {producer!r}'s send of sequence id {seq} after the broker"
                    " must have forgotten it was answered -1:-1 (a duplicate): its id from before the purge was"
                    " kept, and the message is lost",
                )
            )
        if dropped:
            continue
        if (producer, ep, seq) in stored:
            problems.append(
                (
                    "duplicate_publish",
                    f"duplicate_publish: E{event.i} producer {producer!r} sequence id {seq} stored as {event.msg_id}"
                    f" and {stored[(producer, ep, seq)]} with no purge between",
                )
            )
        stored.setdefault((producer, ep, seq), str(event.msg_id))
        highest[(producer, ep)] = max(seq, highest.get((producer, ep), seq))
    return problems
