"""``[settings] selector`` / ``points``: a scenario chooses the AUTO_SPLIT selector; and the progress contract.

The model builds each run's broker with the asked selector and its trace header claims it (so the checker's
``misassigned`` oracle follows); a target that cannot switch (a running broker) refuses with a reason before
anything runs.  A ``wait_received`` step that times out is reported as ``stalled`` by the cases.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from conformance.cases._support import progress_problems
from conformance.scenarios import loads_scenario
from conformance.scenarios.model import InvalidScenario
from conformance.violations import Kind
from pytest_keyshared.driver import run_scenario
from pytest_keyshared.driver.run import StepOutcome
from pytest_keyshared.targets import UnsupportedByTarget, open_target
from pytest_keyshared.targets.base import Claims

SCENARIO = """
name = "selector-choice"
[settings]
{settings}
[[steps]]
do = "open"
consumer = "c1"
[[steps]]
do = "open"
consumer = "c2"
[[steps]]
do = "publish"
count = 20
keys = 10
"""


def _scenario(settings: str):  # type: ignore[no-untyped-def]
    return loads_scenario(SCENARIO.format(settings=settings), "toml")


def test_the_setting_is_read_and_round_trips() -> None:
    from conformance.scenarios import dumps_scenario

    scenario = _scenario('selector = "consistent-hashing"\npoints = 3')
    assert (scenario.settings.selector, scenario.settings.points) == ("consistent-hashing", 3)
    assert loads_scenario(dumps_scenario(scenario), "toml") == scenario


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ('selector = "consistent-hash"', "not one of consistent-hashing, auto-split"),
        ('selector = "auto-split"\npoints = 3', "points applies only to"),
        ("points = 0", "expected an integer >= 1"),
        ("selector = 3", "expected a string"),
    ],
)
def test_bad_settings_name_the_problem(settings: str, message: str) -> None:
    with pytest.raises(InvalidScenario, match=message):
        _scenario(settings)


@pytest.mark.parametrize(
    ("settings", "kind", "points"),
    [
        ('selector = "auto-split"', "auto-split", 100),
        ("points = 3", "consistent-hashing", 3),
        ("", "consistent-hashing", 100),
    ],
)
def test_the_model_runs_with_the_asked_selector_and_claims_it(
    tmp_path: Path, settings: str, kind: str, points: int
) -> None:
    with open_target("model", artifacts_dir=tmp_path / "target") as target:
        result = run_scenario(target, _scenario(settings), seed=1, out_dir=tmp_path / "run")
        assert target.claims.selector == "consistent-hashing"  # the shared target is left as it was
    header = json.loads(result.trace_path.read_text().splitlines()[0])
    assert header["selector"]["kind"] == kind and header["selector"]["points"] == points
    assert result.valid


def test_a_target_that_cannot_switch_refuses_with_the_reason(tmp_path: Path) -> None:
    with open_target("model", artifacts_dir=tmp_path / "target") as target:
        base_switch = type(target).__mro__[1].with_selector
        assert base_switch(target, "", 100) is target  # asks for what it claims: fine
        assert base_switch(target, "consistent-hashing", 0) is target
        with pytest.raises(UnsupportedByTarget, match="cannot switch its selector to auto-split"):
            base_switch(target, "auto-split", 0)
        target_claims = target.claims
        assert isinstance(target_claims, Claims)


def _outcome(index: int, do: str, ok: bool, note: str = "") -> StepOutcome:
    return StepOutcome(index=index, do=do, ok=ok, duration_s=0.0, note=note)


def test_an_expired_bounded_wait_breaks_progress() -> None:
    scenario = loads_scenario(
        """
name = "waits"
[[steps]]
do = "open"
consumer = "c1"
[[steps]]
do = "wait_quiet"
[[steps]]
do = "wait_quiet"
timeout_ms = 3000
[[steps]]
do = "wait_received"
count = 40
""",
        "toml",
    )
    result = SimpleNamespace(
        steps=(
            _outcome(2, "wait_quiet", False, "still receiving after 10000 ms"),
            _outcome(3, "wait_quiet", False, "still receiving after 3000 ms"),
            _outcome(4, "wait_received", False, "all consumers received 9 of 40 within 10000 ms"),
        )
    )
    assert progress_problems(result, scenario) == [
        ("redelivery", Kind.NOT_QUIET, "not_quiet: step 3 (wait_quiet): still receiving after 3000 ms"),
        ("delivery", Kind.STALLED, "stalled: step 4 (wait_received): all consumers received 9 of 40 within 10000 ms"),
    ]
    ok = SimpleNamespace(steps=(_outcome(3, "wait_quiet", True), _outcome(4, "wait_received", True)))
    assert progress_problems(ok, scenario) == []


def test_a_pinned_case_file_runs_as_a_scenario() -> None:
    """The loader accepts (and a run ignores) the ``[pinned]`` table, so ``keyshared run`` takes those files."""
    from conformance.scenarios import load_scenario

    path = Path(__file__).resolve().parents[2] / "conformance/cases/scenarios/pinned/ring-three-points.toml"
    scenario = load_scenario(path)
    assert (scenario.settings.selector, scenario.settings.points) == ("consistent-hashing", 3)
