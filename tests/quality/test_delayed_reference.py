"""The delayed-delivery traces (``tests/support/delayed_traces.py``): the reference checker, written from
``docs/checker.md``, finds exactly what the engine finds, with real and with equal timestamps."""

from __future__ import annotations

from dataclasses import replace

import pytest
from delayed_traces import DELAYED_CASES
from reference_checker import engine_identities, reference_check

from conformance.checks import check_trace


@pytest.mark.parametrize("case", sorted(DELAYED_CASES))
@pytest.mark.parametrize("flat", [False, True], ids=["timed", "equal-timestamps"])
def test_the_reference_checker_agrees(case: str, flat: bool) -> None:
    b = DELAYED_CASES[case][0]()
    events = b.events
    if flat:
        events = [replace(e, t=0, extra={**e.extra, "t0": 0} if "t0" in e.extra else e.extra) for e in events]
    verdict = check_trace(events, header=b.header)
    assert reference_check(b.header, events) == engine_identities(verdict.all_violations())


def test_the_reference_checker_reads_the_tick_from_the_header_too() -> None:
    """The allowance comes from ``broker_conf``'s ``delayedDeliveryTickTimeMillis`` in both checkers: the "early"
    trace is valid under a 3000 ms tick (tests/unit/test_check_delayed.py has the engine's side)."""
    b = DELAYED_CASES["early"][0]()
    header = replace(b.header, extra={**b.header.extra, "broker_conf": {"delayedDeliveryTickTimeMillis": 3000}})
    assert check_trace(b.events, header=header).valid
    assert not reference_check(header, b.events)
