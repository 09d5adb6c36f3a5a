"""The built-in scenarios (``conformance/scenarios/builtin/``), one case each: ``builtin/<scenario>``.

Each is run against the target with the case's seed and checked; the contracts listed here are the ones the
scenario is built to probe (the checker judges every contract on every trace, and reports all it finds).
"""

from __future__ import annotations

from typing import Any

import pytest

from conformance.cases._support import case_params, run_case
from conformance.scenarios import builtin_scenarios

#: What each built-in scenario probes.  A built-in not listed here checks the core Key_Shared contracts.
BUILTIN_CONTRACTS: dict[str, tuple[str, ...]] = {
    "steady-state": ("key-exclusivity", "ordering", "delivery"),
    "join-while-pending": ("key-exclusivity", "ordering", "delivery"),
    "leave-while-pending": ("ordering", "delivery", "key-exclusivity"),
    "crash-while-pending": ("ordering", "delivery", "key-exclusivity"),
    "stuck-consumer": ("delivery", "key-exclusivity"),
    "nack-redelivery": ("key-exclusivity", "delivery", "redelivery"),
    "sticky-ranges": ("assignment", "key-exclusivity", "delivery"),
    "sticky-conflict": ("assignment", "key-exclusivity"),
    "dedup-retry": ("deduplication", "delivery"),
    "restart-recovery": ("redelivery", "delivery", "key-exclusivity"),
}
CORE = ("key-exclusivity", "ordering", "delivery")
#: Capabilities a built-in needs beyond its steps (which the runner checks itself).
BUILTIN_REQUIRES: dict[str, tuple[str, ...]] = {"dedup-retry": ("deduplication-switch",)}

_SCENARIOS = builtin_scenarios()


@pytest.mark.parametrize(
    "scenario",
    case_params(
        _SCENARIOS.values(),
        contracts={name: BUILTIN_CONTRACTS.get(name, CORE) for name in _SCENARIOS},
        requires=BUILTIN_REQUIRES,
    ),
)
def test_case(scenario: Any, keyshared_run: Any, keyshared_check: Any) -> None:
    run_case(scenario, keyshared_run, keyshared_check)
