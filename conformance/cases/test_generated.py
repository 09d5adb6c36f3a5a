"""Generated workloads: Hypothesis-drawn programs against the model, fixed programs against every target.

``generated/model-programs`` draws programs (joins, leaves, crashes, holds, acks, nacks) with Hypothesis and
runs each against a deterministic target (the reference model); on a violation Hypothesis shrinks the
program, and the minimal one is saved as ``shrunk.toml`` (with its trace, ``shrunk-trace.jsonl``) in the
case's artifacts, ready for ``keyshared replay``.  Against a real broker that case skips: a broker is not
deterministic, so a shrink step may not reproduce and Hypothesis would report a flaky test instead of a
minimal program.  Instead ``generated/program-NN`` replays the fixed programs of ``conformance/generated/
programs/`` (derived once from fixed seeds) against every target.
"""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from conformance.cases._support import case_params, run_case
from conformance.generated import GeneratorOptions, stored_programs

GENERATED_CONTRACTS = ("key-exclusivity", "ordering", "delivery", "redelivery")

_PROGRAMS = stored_programs()


@pytest.mark.parametrize(
    "scenario", case_params(_PROGRAMS.values(), contracts=dict.fromkeys(_PROGRAMS, GENERATED_CONTRACTS))
)
def test_case(scenario: Any, keyshared_run: Any, keyshared_check: Any) -> None:
    run_case(scenario, keyshared_run, keyshared_check)


@pytest.mark.keyshared_contract(*GENERATED_CONTRACTS)
def test_model_programs(
    keyshared_target: Any,
    keyshared_run: Any,
    keyshared_check: Any,
    keyshared_settings: Any,
    keyshared_seed: int,
    keyshared_artifacts: Any,
) -> None:
    if not keyshared_target.deterministic:
        pytest.skip(
            f"target {keyshared_target.name} is not deterministic: Hypothesis shrinks only against the model"
            " (the fixed generated/program-NN cases replay instead)"
        )
    from hypothesis import given
    from hypothesis import seed as hypothesis_seed

    from conformance.generated.strategies import profile, programs
    from conformance.scenarios import dump_scenario

    # the ack timeout only here, on the model's simulated clock, where waiting past it costs nothing
    options = GeneratorOptions(crash=keyshared_target.capabilities.has("crash_consumer"), ack_timeout=True)
    shrunk_scenario = keyshared_artifacts / "shrunk.toml"
    shrunk_trace = keyshared_artifacts / "shrunk-trace.jsonl"
    failing: dict[str, Any] = {}

    @profile(keyshared_settings.value("hypothesis_profile"))
    @hypothesis_seed(keyshared_seed)
    @given(programs(options=options))
    def explore(program: Any) -> None:
        result = keyshared_run(program, label="hypothesis-example", record=False)
        if not result.verdict.valid:
            # Hypothesis replays the minimal failing program last, so these files end up holding it.
            dump_scenario(program, shrunk_scenario)
            shutil.copyfile(result.trace_path, shrunk_trace)
            failing["result"] = result
            kinds = sorted({str(v.kind) for v in result.verdict.violations})
            raise AssertionError(f"generated program broke the contract: {', '.join(kinds)}")

    try:
        explore()
    except AssertionError:
        if "result" not in failing:
            raise
        record = keyshared_check.case.record
        record.scenarios.append(str(shrunk_scenario))
        record.traces.append(str(shrunk_trace))
        keyshared_check(failing["result"].verdict)  # raises, with the explained violations of the minimal program
        raise
