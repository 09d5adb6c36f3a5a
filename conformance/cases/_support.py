"""Shared by the case modules: scenario files of an area, turned into parametrized pytest cases.

A case scenario's ``tags`` carry its metadata: ``contract:<name>`` marks the contracts it checks,
``requires:<capability>`` what the target must support.  Each becomes a ``pytest.param`` with the matching
``keyshared_contract`` / ``keyshared_requires`` markers and the scenario name as id, so the case id is
``<area>/<scenario name>``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from importlib import resources
from typing import Any

import pytest

from conformance.scenarios import Scenario, loads_scenario

__all__ = [
    "CONTRACT_TAG",
    "REQUIRES_TAG",
    "area_scenarios",
    "case_params",
    "contracts_of",
    "requires_of",
    "run_case",
]

CONTRACT_TAG = "contract:"
REQUIRES_TAG = "requires:"


def area_scenarios(area: str) -> list[Scenario]:
    """Every scenario file of ``conformance/cases/scenarios/<area>/``, sorted by name."""
    folder = resources.files("conformance.cases.scenarios").joinpath(area)
    out = []
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        if entry.name.endswith(".toml"):
            text = entry.read_text(encoding="utf-8")
            out.append(loads_scenario(text, "toml", source=f"conformance/cases/scenarios/{area}/{entry.name}"))
    return out


def contracts_of(scenario: Scenario) -> tuple[str, ...]:
    return tuple(t[len(CONTRACT_TAG) :] for t in scenario.tags if t.startswith(CONTRACT_TAG))


def requires_of(scenario: Scenario) -> tuple[str, ...]:
    return tuple(t[len(REQUIRES_TAG) :] for t in scenario.tags if t.startswith(REQUIRES_TAG))


def case_params(
    scenarios: Iterable[Scenario],
    *,
    contracts: Mapping[str, tuple[str, ...]] | None = None,
    requires: Mapping[str, tuple[str, ...]] | None = None,
) -> list[Any]:
    """``pytest.param(scenario, id=name, marks=[...])`` per scenario; ``contracts``/``requires`` add to the tags."""
    params = []
    for scenario in scenarios:
        marks = []
        declared = (contracts or {}).get(scenario.name, ()) or contracts_of(scenario)
        if declared:
            marks.append(pytest.mark.keyshared_contract(*declared))
        needs = (*requires_of(scenario), *(requires or {}).get(scenario.name, ()))
        if needs:
            marks.append(pytest.mark.keyshared_requires(*needs))
        params.append(pytest.param(scenario, id=scenario.name, marks=marks))
    return params


def run_case(scenario: Scenario, run: Any, check: Any) -> Any:
    """Run ``scenario`` and judge it with the trace checker.

    Every rule lives in ``conformance/checks/``: an accepted STICKY open that Pulsar refuses is the checker's
    ``accepted_conflicting_open`` (``conformance.checks.assignment``), judged on any trace form.
    """
    return check(run(scenario))
