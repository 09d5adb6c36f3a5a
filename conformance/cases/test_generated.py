"""Generated workloads: Hypothesis-drawn programs against the model, fixed programs against every target.

``generated/model-programs`` draws programs (joins, leaves, crashes, holds, acks, nacks) with Hypothesis and
runs each against a deterministic target (the reference model); on a violation Hypothesis shrinks the
program, and the minimal one is saved as ``shrunk.toml`` (with its trace, ``shrunk-trace.jsonl``) in the
case's artifacts, ready for ``keyshared replay``.  Against a real broker that case skips: a broker is not
deterministic, so a shrink step may not reproduce and Hypothesis would report a flaky test instead of a
minimal program.  Instead ``generated/program-NN`` replays the fixed programs of ``conformance/generated/
programs/`` (derived once from fixed seeds) against every target.

The Hypothesis programs span every workload dimension (``conformance.generated.program.SHAPE_CHOICES``:
broker settings, batching, deduplication, keys in the ring's tail, the selector, STICKY ranges, out-of-order
delivery, five consumers).  On an older release of the model (``model:2.10``, ``model:4.0:classic``) a program
may break a contract because that release has a known bug: such a failure is rerun at later releases and
passes the case when a known bug of the release explains it, and only then.
"""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from conformance.cases._support import case_params, client_view_problems, run_case
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

    from conformance.generated.attribution import attribute
    from conformance.generated.strategies import profile, programs
    from conformance.scenarios import dump_scenario

    capabilities = keyshared_target.capabilities
    # the ack timeout only here, on the model's simulated clock, where waiting past it costs nothing
    options = GeneratorOptions(
        crash=capabilities.has("crash_consumer"),
        restart=capabilities.has("broker_restart"),
        ack_timeout=True,
        delayed=capabilities.has("delayed_delivery"),
        expiry=capabilities.has("message_expiry"),
        gaps=True,
        highest_ids=capabilities.has("raw_send"),
        producers=capabilities.has("dedup_switch"),
    )
    shrunk_scenario = keyshared_artifacts / "shrunk.toml"
    shrunk_trace = keyshared_artifacts / "shrunk-trace.jsonl"
    failing: dict[str, Any] = {}

    explained: list[str] = []

    def known_bug(program: Any, verdict: Any) -> bool:
        """An older release failing a program one of its known bugs explains (conformance.generated.attribution):
        expected there, and only that; the model's newest lines have none, so every failure there is a finding."""

        def passes(spec: str) -> bool:
            other = keyshared_target.at_release(spec)
            if other is None:  # a target that cannot be rebuilt at another release explains nothing by it
                return False
            rerun = keyshared_run(program, label="attribution", record=False, target=other)
            return bool(rerun.verdict.valid)

        version, implementation = str(keyshared_target.version), keyshared_target.implementation
        broken = {keyshared_check.contract_of(v) for v in verdict.violations}
        attribution = attribute(keyshared_target.name, version, implementation, passes, broken)
        if attribution.expected:
            explained.append(attribution.render())
        return attribution.expected

    @profile(keyshared_settings.value("hypothesis_profile"))
    @hypothesis_seed(keyshared_seed)
    @given(programs(options=options))
    def explore(program: Any) -> None:
        result = keyshared_run(program, label="hypothesis-example", record=False)
        # what the client saw of its batches and metadata, judged on any release (no known bug is about them)
        seen = client_view_problems(result.trace_path)
        if seen:
            dump_scenario(program, shrunk_scenario)
            shutil.copyfile(result.trace_path, shrunk_trace)
            raise AssertionError(f"generated program broke the contract: {seen[0][2]}")
        if not result.verdict.valid and not known_bug(program, result.verdict):
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
