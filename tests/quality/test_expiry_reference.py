"""The message-expiry traces (``tests/support/expiry_traces.py``): the reference checker, written from
``docs/checker.md``, finds exactly what the engine finds, with real and with equal timestamps."""

from __future__ import annotations

from dataclasses import replace

import pytest
from expiry_traces import EXPIRY_CASES
from reference_checker import engine_identities, reference_check

from conformance.checks import check_trace


@pytest.mark.parametrize("case", sorted(EXPIRY_CASES))
@pytest.mark.parametrize("flat", [False, True], ids=["timed", "equal-timestamps"])
def test_the_reference_checker_agrees(case: str, flat: bool) -> None:
    b = EXPIRY_CASES[case][0]()
    events = b.events
    if flat:
        events = [replace(e, t=0, extra={**e.extra, "t0": 0} if "t0" in e.extra else e.extra) for e in events]
    verdict = check_trace(events, header=b.header)
    assert reference_check(b.header, events) == engine_identities(verdict.all_violations())
