"""Key placement: does the broker put each key where the selector of the Pulsar version it claims would?

The trace header names the claimed selector (consistent hashing for AUTO_SPLIT in 4.0, sticky ranges for
STICKY); the checker rebuilds the membership from the trace and reports every delivery no possible
membership explains (``misassigned``).  The scenario files are in ``scenarios/assignment/``.
"""

from __future__ import annotations

from typing import Any

import pytest

from conformance.cases._support import area_scenarios, case_params, run_case


@pytest.mark.parametrize("scenario", case_params(area_scenarios("assignment")))
def test_case(scenario: Any, keyshared_run: Any, keyshared_check: Any) -> None:
    run_case(scenario, keyshared_run, keyshared_check)
