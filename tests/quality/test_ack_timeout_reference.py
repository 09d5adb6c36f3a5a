"""The ack-timeout traces (``tests/support/ack_timeout_traces.py``): the reference checker, written from
``docs/checker.md``, finds exactly what the engine finds."""

from __future__ import annotations

import pytest
from ack_timeout_traces import ACK_TIMEOUT_CASES
from reference_checker import engine_identities, reference_check

from conformance.checks import check_trace


@pytest.mark.parametrize("case", sorted(ACK_TIMEOUT_CASES))
def test_the_reference_checker_agrees(case: str) -> None:
    b = ACK_TIMEOUT_CASES[case][0]()
    verdict = check_trace(b.events, header=b.header)
    assert reference_check(b.header, b.events) == engine_identities(verdict.all_violations())
