"""``received_beyond_permits``: on a non-persistent topic, a paused consumer gets no more than its permits.

Pulsar's non-persistent Key_Shared dispatcher sends a message to its key's consumer only while that consumer has
permits (``consumer.getAvailablePermits() > 0``, apache/pulsar#11692, from 2.8.1 / 2.9.0), and drops it otherwise
(``NonPersistentStickyKeyDispatcherMultipleConsumersTest.testSendMessageRespectFlowControl``). A client grants a
consumer at most its receiver queue in permits outstanding (the initial ``Flow`` of ``receiver_queue_size``, then
more only as the application takes messages), so while the application does not receive (a ``paused`` open, a
``pause`` step, until its ``resume``, close or crash), the consumer can be sent at most ``receiver_queue``
messages: of the messages published while it was paused, it receives at most that many, ever. More means the
broker sent beyond the permits (before #11692 it sent everything, filling the client's memory).

Judged from the scenario (which steps paused whom, with which queue) and the trace (the step outcomes say which
events each step recorded): a case-level judgement, since the trace does not record the application's pauses.
On a persistent topic the rule says nothing (the broker keeps what it does not send, and sends it after the
resume), so it is judged only for ``[settings] topic = "non-persistent"``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conformance.scenarios import Close, Crash, Open, Pause, Resume, Scenario

__all__ = ["pause_windows", "received_beyond_permits"]


def pause_windows(scenario: Scenario, result: Any) -> list[tuple[str, int, int, int]]:
    """``(handle, first event, end event, receiver queue)`` of each stretch a consumer was paused: from the end of
    the step that paused it to the start of the step that resumed, closed or crashed it (or the run's end)."""
    outcomes = {o.index: o for o in result.steps}
    queues: dict[str, int] = {}
    paused: dict[str, int] = {}
    windows: list[tuple[str, int, int, int]] = []
    last_end = 0
    for index, step in enumerate(scenario.steps, start=1):
        outcome = outcomes.get(index)
        if outcome is None:
            continue
        last_end = max(last_end, outcome.end_event)
        if isinstance(step, Open):
            queue = step.receiver_queue
            queues[step.consumer] = scenario.settings.receiver_queue if queue is None else queue
            if step.paused and outcome.ok:
                paused[step.consumer] = outcome.end_event
        elif isinstance(step, Pause):
            paused.setdefault(step.consumer, outcome.end_event)
        elif isinstance(step, (Resume, Close, Crash)) and step.consumer in paused:
            windows.append((step.consumer, paused.pop(step.consumer), outcome.first_event, queues[step.consumer]))
    for handle, start in paused.items():  # paused to the end: the drain resumes it
        windows.append((handle, start, last_end, queues[handle]))
    return windows


def received_beyond_permits(scenario: Scenario, result: Any) -> list[str]:
    """Explanations of each pause in which the consumer received more messages published during it than its
    receiver queue (its permits) allowed; empty on a persistent topic."""
    if scenario.settings.topic != "non-persistent":
        return []
    windows = pause_windows(scenario, result)
    if not windows:
        return []
    from conformance.trace.identity import canonical_message
    from conformance.trace.reader import open_trace

    published_at: dict[str, int] = {}  # message key (canonical topic and id) -> its first publish
    receives: list[tuple[int, str, str]] = []  # (i, handle, message key)
    for event in open_trace(Path(result.trace_path)).events():
        op = event.op.value
        if op in ("publish", "receive") and event.msg_id is not None and event.topic is not None:
            mkey = canonical_message(event.topic, event.msg_id)[0]
            if op == "publish":
                published_at.setdefault(mkey, event.i)
            else:
                receives.append((event.i, str(event.consumer), mkey))
    problems = []
    for handle, start, end, queue in windows:
        got = sorted((i, msg) for i, who, msg in receives if who == handle and start <= published_at.get(msg, -1) < end)
        if len(got) > queue:
            i, mkey = got[queue]
            msg = mkey.rpartition("|")[2]
            problems.append(
                f"received_beyond_permits: consumer {handle} was paused from E{start} to E{end} with a receiver queue"
                f" of {queue}, so it had at most {queue} permits, yet it received {len(got)} of the messages"
                f" published meanwhile on a non-persistent topic (the {queue + 1}th: {msg} at E{i}); the broker sent"
                " beyond its permits instead of dropping them"
            )
    return problems
