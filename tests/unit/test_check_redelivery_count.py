"""``wrong_redelivery_count`` (issue 24, "what the client sees"), both ways and on both engines.

Each planted trace is a broker that sent one consumer a message again with a count that fell, or did not grow
after the consumer sent it back; its clean twin is the same trace with the counts Pulsar gives.  Equal
timestamps change nothing (the rule reads the event order), an ack that may never have arrived (any ack of the
message, by anyone, live or late) and a fault anywhere excuse, a copy at another consumer is not judged, and a
``redeliver`` after a count of 0 is judged on every release (before 2.11 the request tracks the message and the
next send raises it: ``Consumer.redeliverUnacknowledgedMessages`` with pending acks, branch-2.8 to branch-2.10).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest
from part_checks import same_verdicts

from conformance.checks import Kind, check_trace
from conformance.spark.engine import _in_memory, _merged, check_task
from conformance.trace import SubscriptionSpec, TraceHeader
from conformance.trace.builder import TraceBuilder
from conformance.trace.events import Event


def _trace(version: str | None = "4.0") -> TraceBuilder:
    header = TraceHeader(target="hand-written", subscription=SubscriptionSpec("s"), pulsar_version=version)
    b = TraceBuilder(header)
    b.open("c1")
    b.publish("k", "1:0")
    b.publish("k", "1:1")
    return b


def _two_receives(
    first: int, second: int, between: Callable[[TraceBuilder], None], version: str = "4.0"
) -> TraceBuilder:
    b = _trace(version)
    b.receive("c1", "k", "1:0", redelivery_count=first)
    between(b)
    b.receive("c1", "k", "1:0", redelivery_count=second)
    b.ack("c1", "1:0")
    b.receive("c1", "k", "1:1", redelivery_count=0)
    b.ack("c1", "1:1")
    b.end(drained=True)
    return b


def _nack(b: TraceBuilder) -> None:
    b.nack("c1", "1:0")


def _redeliver(b: TraceBuilder) -> None:
    b.redeliver("c1")


def _nothing(b: TraceBuilder) -> None:
    return None


#: (first count, second count, what lies between, release) -> the violation, or None for a clean trace
CASES: dict[str, tuple[int, int, Callable[[TraceBuilder], None], str, str | None]] = {
    "nack raises": (0, 1, _nack, "4.0", None),
    "nack does not raise": (0, 0, _nack, "4.0", "not_raised"),
    "nack lowers": (2, 1, _nack, "3.0", "fell"),
    "redeliver raises": (1, 2, _redeliver, "2.10", None),
    "redeliver of a counted message does not raise (2.10)": (1, 1, _redeliver, "2.10", "not_raised"),
    "redeliver of an uncounted message before 2.11 does not raise": (0, 0, _redeliver, "2.10", "not_raised"),
    "redeliver of an uncounted message before 2.11 raises": (0, 1, _redeliver, "2.8", None),
    "redeliver of an uncounted message from 2.11": (0, 0, _redeliver, "3.0", "not_raised"),
    "redeliver of an uncounted message, no release named": (0, 0, _redeliver, "", "not_raised"),
    "a duplicate with the same count": (1, 1, _nothing, "4.0", None),
    "a duplicate with a lower count": (3, 0, _nothing, "4.0", "fell"),
}


def _flat(events: list[Event]) -> list[Event]:
    """The same events, every one at t = 0 (as the model target logs many)."""
    return [replace(e, t=0) for e in events]


def _wrong(b: TraceBuilder, events: list[Event] | None = None) -> list[tuple[str, tuple[int, ...]]]:
    verdict = check_trace(b.events if events is None else events, header=b.header)
    return [(v.facts["how"], v.events) for v in verdict.all_violations() if v.kind is Kind.WRONG_REDELIVERY_COUNT]


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_case_both_ways_also_with_equal_timestamps(case: str) -> None:
    first, second, between, version, want = CASES[case]
    b = _two_receives(first, second, between, version)
    got = _wrong(b)
    witnesses = (3, 4, 5) if between is not _nothing else (3, 4)  # the receives, and the request between them
    assert got == ([] if want is None else [(want, witnesses)])
    assert _wrong(b, _flat(b.events)) == got


def test_the_violation_names_the_two_receives_and_the_request() -> None:
    b = _two_receives(0, 0, _nack)
    [v] = [v for v in check_trace(b.events, header=b.header).violations if v.kind is Kind.WRONG_REDELIVERY_COUNT]
    assert v.events == (3, 4, 5) and v.consumers == ("c1",)
    text = v.explanation
    assert "E3 = receive 1:0:-1:-1 by c1" in text and "E4 = nack 1:0:-1:-1 by c1" in text
    assert "E5 = receive 1:0:-1:-1 by c1" in text and "However" in text


@pytest.mark.parametrize(
    "excuse",
    [
        lambda b: b.ack("c2", "1:0"),  # an ack by a consumer that never held it: arms nothing, may have counted
        lambda b: (b.ack("c1", "1:0"), b.crash("c1"), b.open("c1")),  # a lost ack (the copy goes to a new inc.)
        lambda b: b.fault("restart"),  # the tracker lives in the broker's memory
    ],
    ids=["non-holder ack", "crashed acker", "fault"],
)
def test_what_may_have_dropped_the_count_excuses(excuse: Callable[[TraceBuilder], object]) -> None:
    def between(b: TraceBuilder) -> None:
        b.nack("c1", "1:0")
        excuse(b)

    b = _trace()
    b.open("c2")
    b.receive("c1", "k", "1:0", redelivery_count=2)
    between(b)
    b.receive("c1", "k", "1:0", redelivery_count=0)
    b.end(drained=False)
    assert _wrong(b) == []


def test_a_fault_after_the_second_receive_still_excuses_and_says_so() -> None:
    """A client's reconnect read from its log may be logged late: a fault anywhere in the trace excuses."""
    b = _two_receives(2, 0, _nack)
    b.events.pop()  # the end
    b.fault("reconnect")
    b.end(drained=True)
    verdict = check_trace(b.events, header=b.header)
    assert not [v for v in verdict.all_violations() if v.kind is Kind.WRONG_REDELIVERY_COUNT]
    assert any("wrong_redelivery_count not judged" in note for note in verdict.notes)


def test_another_consumers_copy_and_a_batch_message_are_not_judged() -> None:
    b = _trace()
    b.receive("c1", "k", "1:0", redelivery_count=3)
    b.close("c1")  # a close does not raise the count (3.0+), and another consumer's copy is not compared
    b.open("c2")
    b.receive("c2", "k", "1:0", redelivery_count=0)
    b.publish("k", "1:2:-1:0")
    b.receive("c2", "k", "1:2:-1:0", redelivery_count=2)
    b.nack("c2", "1:2:-1:0")
    b.receive("c2", "k", "1:2:-1:0", redelivery_count=0)  # counted per entry: its other messages move it
    b.end(drained=False)
    assert _wrong(b) == []


def _in_parts(b: TraceBuilder, parts: int) -> object:
    given = _in_memory(b.events)
    results = [
        (0, pass_, part, result)
        for part in range(parts)
        for pass_, result in check_task(b.header, None, given, part, parts, one_pass=False)[1]
    ]
    return _merged(results, {0: b.header}, None)[0]


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_spark_engines_parts_say_the_same(case: str) -> None:
    first, second, between, version, _want = CASES[case]
    b = _two_receives(first, second, between, version)
    b.events.pop()
    b.open("c9")
    b.publish("other", "1:5")
    b.receive("c9", "other", "1:5", redelivery_count=0)
    b.nack("c9", "1:5")
    b.receive("c9", "other", "1:5", redelivery_count=0)  # planted in every trace, in another key's part
    b.end(drained=False)
    want = check_trace(b.events, header=b.header)
    assert [v.consumers for v in want.violations if v.kind is Kind.WRONG_REDELIVERY_COUNT][-1] == ("c9",)
    for parts in (2, 3):
        same_verdicts(_in_parts(b, parts), want)
