"""Cases from Apache Pulsar's own Key_Shared test catalogue, as far as a client can observe them.

Each follows one test of ``KeySharedSubscriptionTest`` (or a dispatcher unit test), named in the scenario's
description; the scenario files are in ``scenarios/catalogue/``.  What a client cannot observe (read
positions, replay-queue sizes, broker config switches) is left out: see ``docs/conformance.md``.
"""

from __future__ import annotations

from typing import Any

import pytest

from conformance.cases._support import area_scenarios, case_params, run_case


@pytest.mark.parametrize("scenario", case_params(area_scenarios("catalogue")))
def test_case(scenario: Any, keyshared_run: Any, keyshared_check: Any) -> None:
    run_case(scenario, keyshared_run, keyshared_check)
