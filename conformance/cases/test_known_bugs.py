"""Known Key_Shared bugs of Apache Pulsar as regression scenarios: ``known-bugs/<issue>-<name>``.

Each reproduces, as far as a client can drive it, the setup of one issue (pulsar-semantics.md §7); a broker
that still has the bug breaks the listed contracts.  The scenario files are in ``scenarios/known_bugs/``.

Progress is judged too: a ``wait_received`` step that times out is a broken ``delivery`` contract (``stalled``),
since the final drain acknowledges everything held and would hide a stall.  Apache Pulsar's fix history of each
case, and the releases of the reference model each one fails on, are in ``docs/known-bugs.md``.
"""

from __future__ import annotations

from typing import Any

import pytest

from conformance.cases._support import area_scenarios, case_params, run_case


@pytest.mark.parametrize("scenario", case_params(area_scenarios("known_bugs")))
def test_case(scenario: Any, keyshared_run: Any, keyshared_check: Any) -> None:
    run_case(scenario, keyshared_run, keyshared_check, progress=True)
