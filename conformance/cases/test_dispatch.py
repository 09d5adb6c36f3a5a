"""Dispatch behaviours that only show under a particular interplay of acks, joins, leaves and full receiver
queues: ``dispatch/<name>``.

Each scenario drives one behaviour a Key_Shared broker can get wrong while every simpler case passes (a
draining hash released too early, replay-queue hashes forgotten, acknowledged messages re-read after a rewind,
a stuck consumer stalling the others, ...); its description says which, and what a broker with that bug
breaks.  The scenario files are in ``scenarios/dispatch/``.
"""

from __future__ import annotations

from typing import Any

import pytest

from conformance.cases._support import area_scenarios, case_params, run_case


@pytest.mark.parametrize("scenario", case_params(area_scenarios("dispatch")))
def test_case(scenario: Any, keyshared_run: Any, keyshared_check: Any) -> None:
    run_case(scenario, keyshared_run, keyshared_check)
