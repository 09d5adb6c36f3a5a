"""Key placement against answers pinned in the case files: ``pinned/<name>``.

The ``assignment`` contract of the other cases asks the reference model which consumer owns a key, so a bug in
the model's selector moves the expected answer with it.  These cases carry their own answer: each file's
``[pinned.owners]`` table maps keys to the consumer (handle) that must receive them, or to ``"none"`` for a
key no consumer may receive (a STICKY gap).  The tables come from Apache Pulsar's selector unit tests (the
golden vectors) or were computed from Murmur3 (``mmh3``) and the documented rule, independently of
``reference_model``; ``tests/unit/test_pinned_tables.py`` recomputes every table that way.  The scenario
files are in ``scenarios/pinned/``.  A table holds for the versions and dispatcher its ``[pinned]`` section names
(``applies_from``, ``implementation``); a target claiming another skips the case with the reason.
"""

from __future__ import annotations

from typing import Any

import pytest

from conformance.cases._support import PinnedCase, case_params, pinned_cases, pinned_mismatches, run_case
from conformance.violations import Kind

_CASES = {case.scenario.name: case for case in pinned_cases("pinned")}


@pytest.mark.parametrize("scenario", case_params(case.scenario for case in _CASES.values()))
def test_case(scenario: Any, keyshared_target: Any, keyshared_run: Any, keyshared_check: Any) -> None:
    case: PinnedCase = _CASES[scenario.name]
    claims = keyshared_target.claims
    why = case.not_applicable(claims.pulsar_version, claims.implementation)
    if why is not None:
        pytest.skip(why)

    def run(loaded: Any) -> Any:
        result = keyshared_run(loaded)
        for problem in pinned_mismatches(result.trace_path, case.owners, case.source):
            keyshared_check.violation("assignment", problem, kind=Kind.PINNED_OWNER, defer=True)
        return result

    run_case(scenario, run, keyshared_check)
