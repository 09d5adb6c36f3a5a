"""The dead-letter contract (``conformance.checks.dead_letter``), both engines and the reference, both ways.

A consumer with ``max_redeliver_count`` N gets a message N + 1 times; handed back once more, the client routes it
to the dead-letter topic and acknowledges the original, and the harness's reader of that topic records a
``dead_letter`` event.  Proven: the clean trace passes (distinct and equal timestamps, with the application's
last ack of another message never arriving); a message lost (no ``dead_letter``) is ``undelivered``; one
dead-lettered and delivered again on its subscription is ``received_after_dead_letter`` unless a consumer left
meanwhile; one dead-lettered before its N + 1 receives is ``dead_lettered_early``; the Spark engine's split by
key gives the same verdict; the validator refuses a ``dead_letter`` without a stored message id.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from reference_checker import engine_identities, reference_check

from conformance.checks import Kind, check_trace
from conformance.spark.engine import _in_memory, _merged, check_routed_task
from conformance.spark.route import WHOLE
from conformance.trace import SubscriptionSpec, TraceHeader
from conformance.trace.builder import TraceBuilder
from conformance.trace.reader import read_trace
from conformance.trace.validation import TraceFormatError

STEPS = pytest.mark.parametrize("step", [10, 0], ids=["distinct-timestamps", "equal-timestamps"])
MAX = 2


def header(maximum: int | None = MAX) -> TraceHeader:
    extra: dict[str, Any] = {} if maximum is None else {"dead_letter": {"max_redeliver_count": maximum}}
    return TraceHeader(target="hand-written", subscription=SubscriptionSpec("s"), extra=extra)


def run(
    *,
    step: int,
    dead: bool = True,
    receives: int = MAX + 1,
    again: bool = False,
    leave_between: bool = False,
    redeliver: bool = False,
    tail: Callable[[TraceBuilder], object] | None = None,
) -> TraceBuilder:
    """c1 nacks every copy of 1:0 (key "bad", ``receives`` times), the client dead-letters it (``dead``); 1:1
    (key "good") is received and acknowledged.  ``again``: c2 receives 1:0 after the dead letter
    (``leave_between``: c1 closes between its last nack and the dead letter); ``redeliver``: c1 asks for
    everything again once (its prefetched messages' counts rise unseen); ``tail`` adds events before the end."""
    b = TraceBuilder(header(), step=step)
    b.open("c1")
    b.open("c2")
    b.publish("bad", "1:0")
    b.publish("good", "1:1")
    for _ in range(receives):
        b.receive("c1", "bad", "1:0")
        b.nack("c1", "1:0")
    if redeliver:
        b.redeliver("c1")
    if leave_between:
        b.close("c1")
    if dead:
        b.dead_letter("bad", "1:0")
    b.receive("c2", "good", "1:1")
    b.ack("c2", "1:1")
    if again:
        b.receive("c2", "bad", "1:0")
        b.ack("c2", "1:0")
    if tail is not None:
        tail(b)
    b.end(drained=True)
    return b


def split_verdict(b: TraceBuilder, parts: int = 3) -> Counter[Any]:
    """The Spark engine's split by key, without Spark (as ``tests/unit/test_spark_router.py``)."""
    given = _in_memory(b.events)
    results = [(0, WHOLE, part, check_routed_task(b.header, None, given, part, parts)[0]) for part in range(parts)]
    verdict = _merged(results, {0: b.header}, None)[0]
    return Counter(v.identity() for v in verdict.violations)


def kinds(b: TraceBuilder) -> Counter[Kind]:
    verdict = check_trace(b.events, header=b.header)
    identities = engine_identities(verdict.violations)
    assert identities == reference_check(b.header, b.events)  # the reference agrees
    assert Counter(v.identity() for v in verdict.violations) == split_verdict(b)  # so does the split by key
    return Counter(v.kind for v in verdict.violations)


@STEPS
def test_a_dead_lettered_message_was_delivered(step: int) -> None:
    assert kinds(run(step=step)) == Counter()


@STEPS
def test_a_message_neither_redelivered_nor_dead_lettered_is_undelivered(step: int) -> None:
    assert kinds(run(step=step, dead=False)) == Counter({Kind.UNDELIVERED: 1})


@STEPS
def test_a_dead_lettered_message_delivered_again_is_in_both(step: int) -> None:
    found = run(step=step, again=True)
    violations = check_trace(found.events, header=found.header).violations
    assert [v.kind for v in violations] == [Kind.RECEIVED_AFTER_DEAD_LETTER]
    assert violations[0].events == (10, 13) and violations[0].key == "bad"
    assert kinds(found) == Counter({Kind.RECEIVED_AFTER_DEAD_LETTER: 1})


@STEPS
def test_a_consumer_leaving_before_the_ack_of_the_original_excuses_a_redelivery(step: int) -> None:
    assert kinds(run(step=step, again=True, leave_between=True)) == Counter()


def leave_then_redeliver(op: str) -> Callable[[TraceBuilder], object]:
    def tail(b: TraceBuilder) -> None:
        getattr(b, op)("c1")
        b.receive("c2", "bad", "1:0")
        b.ack("c2", "1:0")

    return tail


@STEPS
def test_a_close_after_the_dead_letter_excuses_nothing(step: int) -> None:
    # closing flushes the ack of the original: the broker must not deliver it again
    assert kinds(run(step=step, tail=leave_then_redeliver("close"))) == Counter({Kind.RECEIVED_AFTER_DEAD_LETTER: 1})


@STEPS
def test_a_crash_after_the_dead_letter_may_lose_the_ack(step: int) -> None:
    assert kinds(run(step=step, tail=leave_then_redeliver("crash"))) == Counter()


@STEPS
def test_a_second_dead_letter_is_a_delivery_again(step: int) -> None:
    def again(b: TraceBuilder) -> None:
        b.close("c1")  # after the dead letter: the ack of the original was flushed
        b.dead_letter("bad", "1:0")  # yet a client got it again and routed it again

    assert kinds(run(step=step, tail=again)) == Counter({Kind.RECEIVED_AFTER_DEAD_LETTER: 1})


def test_a_second_dead_letter_after_a_close_before_the_first_is_excused() -> None:
    def again(b: TraceBuilder) -> None:
        b.dead_letter("bad", "1:0")

    assert kinds(run(step=10, leave_between=True, tail=again)) == Counter()


@STEPS
def test_a_message_dead_lettered_before_its_last_delivery_is_early(step: int) -> None:
    assert kinds(run(step=step, receives=MAX)) == Counter({Kind.DEAD_LETTERED_EARLY: 1})


def test_a_redeliver_request_leaves_the_count_unjudged() -> None:
    assert kinds(run(step=10, receives=MAX, redeliver=True)) == Counter()


def test_without_a_maximum_in_the_header_the_count_is_not_judged() -> None:
    b = run(step=10, receives=1)
    b.header = header(None)
    assert kinds(b) == Counter()


def test_an_ack_never_logged_does_not_matter() -> None:
    b = run(step=10)
    b.events = [e for e in b.events if not (e.op.value == "ack" and e.msg_id == "1:1")]
    assert kinds(b) == Counter()  # 1:1 held at the end: delivered


@pytest.mark.parametrize(
    ("fields", "problem"),
    [({"topic": "t"}, "has no 'msg_id'"), ({"topic": "t", "msg_id": "-1:-1"}, "not a stored message's id")],
)
def test_the_validator_wants_a_stored_original(tmp_path: Path, fields: dict[str, Any], problem: str) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"i": 0, "t": 0, "op": "dead_letter", **fields}) + "\n")
    with pytest.raises(TraceFormatError, match=problem):
        read_trace(path)
