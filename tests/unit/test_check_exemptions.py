"""Issue 24 and 26 on the Python engine: an ack that may never have taken effect does not end (or prevent) an
``out_of_order`` exemption, and a duplicate receipt for a gapped sequence id is no ``lost_write``.

Each trace is a correct broker's (no violation) and has a mirror that stays INVALID: the same trace without the
nack, or the duplicate receipt of an id above every stored one (``tests/support/exemption_traces.py``).  The
exemption traces end ``drained: false`` as in the issue, so ``undelivered`` is not judged: the verdict is a pass
(``valid``) with validity ``unknown``, never ``invalid``.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from exemption_traces import (
    EXEMPTION_CASES,
    crash_disarms,
    gapped_sequence,
    lost_write_above_the_highest,
    pulsar_40,
)

from conformance.checks import Kind, check_trace
from conformance.trace.builder import TraceBuilder
from conformance.trace.events import Event


def _flat(b: TraceBuilder) -> list[Event]:
    """The same events, every one at t = 0 (as the model target logs many)."""
    return [replace(e, t=0, extra={**e.extra, "t0": 0} if "t0" in e.extra else e.extra) for e in b.events]


def _kinds(b: TraceBuilder) -> list[tuple[str, tuple[int, ...]]]:
    return [(v.kind.value, v.events) for v in check_trace(b.events, header=b.header).all_violations()]


@pytest.mark.parametrize("case", sorted(EXEMPTION_CASES))
def test_an_ack_that_may_not_have_counted_does_not_condemn(case: str) -> None:
    b = EXEMPTION_CASES[case](True)
    verdict = check_trace(b.events, header=b.header)
    assert verdict.all_violations() == (), verdict.render()
    assert verdict.valid and verdict.validity.value == "unknown"  # not drained: undelivered is not judged


@pytest.mark.parametrize("case", sorted(EXEMPTION_CASES))
def test_without_the_release_the_same_trace_stays_out_of_order(case: str) -> None:
    b = EXEMPTION_CASES[case](False)
    verdict = check_trace(b.events, header=b.header)
    assert not verdict.valid
    assert [v.kind for v in verdict.violations] == [Kind.OUT_OF_ORDER]
    assert verdict.violations[0].facts["earlier_msg"] == "1:1:-1:-1"


def test_the_minimal_trace_of_the_issue_also_with_equal_timestamps() -> None:
    b, mirror = crash_disarms(True), crash_disarms(False)
    assert check_trace(_flat(b), header=b.header).all_violations() == ()
    assert [v.kind for v in check_trace(_flat(mirror), header=mirror.header).violations] == [Kind.OUT_OF_ORDER]


def test_an_armed_ack_that_stays_armed_ends_the_exemption() -> None:
    """The neighbour that keeps its verdict: a live, armed ack ends the exemption (a close does not disarm it)."""
    b = pulsar_40()
    b.open("c1")
    for n in range(3):
        b.publish("k", f"1:{n}")
    b.receive("c1", "k", "1:0")
    b.nack("c1", "1:0")
    b.receive("c1", "k", "1:0", redelivery_count=1)
    b.ack("c1", "1:0")  # armed: the key's order holds again
    b.close("c1")  # a close flushes the ack: nothing disarms it
    b.open("c2")
    b.receive("c2", "k", "1:2")
    b.end(drained=False)
    assert _kinds(b) == [("out_of_order", (2, 10))]


def test_a_redeliver_request_does_not_exempt_a_message_whose_ack_may_be_buffered() -> None:
    """Reading 2 of the issue, decided: 1:0 is acknowledged, so it is never the overtaken message, and PIP-379
    replays it ahead of its hash's new messages; the request gives up only the order of what c1 held."""
    b = pulsar_40()
    b.open("c1")
    for n in range(3):
        b.publish("k", f"1:{n}")
    b.receive("c1", "k", "1:0")
    b.ack("c1", "1:0")
    b.redeliver("c1")  # the ack may still be buffered: the broker may redeliver 1:0 (redelivered_after_ack)
    b.receive("c1", "k", "1:2")
    b.end(drained=False)
    assert _kinds(b) == [("out_of_order", (2, 7))]


def test_a_gapped_sequence_answered_as_a_duplicate_is_valid() -> None:
    b = gapped_sequence()
    verdict = check_trace(b.events, header=b.header)
    assert verdict.all_violations() == () and verdict.validity.value == "valid", verdict.render()


@pytest.mark.parametrize("then_higher", [False, True])
def test_a_duplicate_receipt_above_every_stored_id_is_a_lost_write(then_higher: bool) -> None:
    b = lost_write_above_the_highest(then_higher=then_higher)
    verdict = check_trace(b.events, header=b.header)
    assert [(v.kind, v.events) for v in verdict.violations] == [(Kind.LOST_WRITE, (4,))]
    assert "producer 'p' sequence id 6" in verdict.violations[0].explanation


@pytest.mark.parametrize(
    ("t0", "result", "excused"),
    [
        ("before", "ok", True),  # sent before the duplicate receipt was logged, stored after: may have come first
        (None, "ok", True),  # no t0: the send may have been called before the receipt
        ("after", "ok", False),  # called strictly after the receipt was logged: cannot have made 6 a duplicate
        ("before", "fail", True),  # outcome unknown to the client: it may be stored
        ("before", "info", True),
    ],
)
def test_a_higher_id_logged_after_the_receipt_excuses_it_only_if_it_may_have_been_sent_first(
    t0: str | None, result: str, excused: bool
) -> None:
    b = pulsar_40()
    b.open("c1")
    b.publish("k", "1:0", seq=5)
    receipt = b.publish("k", "-1:-1", seq=6, uid="u6")
    sent = {"before": receipt.t, "after": receipt.t + 1, None: None}[t0]
    higher = b.publish("k", "1:1" if result == "ok" else "-1:-1", seq=7, uid="u7", result=result)
    extra = {k: v for k, v in higher.extra.items() if k != "t0"}
    b.events[-1] = replace(higher, extra=extra if sent is None else {**extra, "t0": sent})
    b.end(drained=False)
    kinds = [v.kind for v in check_trace(b.events, header=b.header).violations]
    assert kinds == ([] if excused else [Kind.LOST_WRITE])
