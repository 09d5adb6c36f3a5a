"""Producer deduplication cases: a resent (producer, sequence id) is stored once.

They need a target that can turn deduplication on for the run's topic (``deduplication-switch``); others
skip them, saying why.  The scenario files are in ``scenarios/dedup/``.
"""

from __future__ import annotations

from typing import Any

import pytest

from conformance.cases._support import area_scenarios, case_params, run_case


@pytest.mark.parametrize("scenario", case_params(area_scenarios("dedup")))
def test_case(scenario: Any, keyshared_run: Any, keyshared_check: Any) -> None:
    run_case(scenario, keyshared_run, keyshared_check)
