"""Delayed delivery on the checker, both ways (``tests/support/delayed_traces.py``).

A correct broker's trace is valid: later messages of the key delivered before the delayed one are in order, and
delivery inside the broker's one-tick allowance is on time.  A broker that ignores the delay is
``delivered_early``; one that never releases the message leaves it ``undelivered``; once received, a delayed
message is owed in order like any other.  With every event at t = 0 the clock shows nothing, so nothing is early.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from delayed_traces import DELAYED_CASES

from conformance.checks import check_trace
from conformance.checks.delayed import EARLY_ALLOWANCE_MS, due_of, early
from conformance.trace.builder import TraceBuilder
from conformance.trace.events import Event


def _flat(b: TraceBuilder) -> list[Event]:
    return [replace(e, t=0, extra={**e.extra, "t0": 0} if "t0" in e.extra else e.extra) for e in b.events]


@pytest.mark.parametrize("case", sorted(DELAYED_CASES))
@pytest.mark.parametrize("flat", [False, True], ids=["timed", "equal-timestamps"])
def test_a_delayed_message_is_judged_by_its_own_time(case: str, flat: bool) -> None:
    build, timed, equal = DELAYED_CASES[case]
    b = build()
    expected = equal if flat else timed
    verdict = check_trace(_flat(b) if flat else b.events, header=b.header)
    assert sorted(v.kind.value for v in verdict.all_violations()) == expected, verdict.render()


def test_the_early_delivery_is_explained() -> None:
    b = DELAYED_CASES["early"][0]()
    (violation,) = check_trace(b.events, header=b.header).all_violations()
    assert violation.events == (1, 8)
    assert "deliver_after = 3000 ms" in violation.explanation
    assert "up to 1000 ms early" in violation.explanation


def test_without_the_header_flag_the_delay_is_not_read() -> None:
    """The header's ``delayed_delivery`` tells the checker to read ``deliver_after_ms``: without it, the trace is
    judged as if nothing was delayed (the later messages then overtook 1:0)."""
    b = DELAYED_CASES["on-time"][0]()
    header = replace(b.header, extra={})
    kinds = {v.kind.value for v in check_trace(b.events, header=header).all_violations()}
    assert kinds == {"out_of_order"}


@pytest.mark.parametrize("value", [None, 0, -5, True, "3000"])
def test_no_delay_means_no_due_time(value: object) -> None:
    assert due_of(10, 1, value) is None


def test_the_bound_is_strict_and_needs_a_moving_clock() -> None:
    due = due_of(0, 1, 3000)
    assert due is not None
    bound = (3000 - EARLY_ALLOWANCE_MS) * 1_000_000
    assert early(due, bound - 1)
    assert not early(due, bound)
    assert not early(due, 0)  # the clock did not move between the send and the receive


def test_the_allowance_is_the_tick_the_header_records() -> None:
    """A model run with ``[broker] delayedDeliveryTickTimeMillis = 3000`` may deliver 2100 ms after a 3000 ms delay
    and still 100 ms after the send; the header's ``broker_conf`` says so."""
    b = DELAYED_CASES["early"][0]()
    header = replace(b.header, extra={**b.header.extra, "broker_conf": {"delayedDeliveryTickTimeMillis": 3000}})
    assert check_trace(b.events, header=header).valid
