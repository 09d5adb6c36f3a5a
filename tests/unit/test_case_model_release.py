"""``model-release:`` tags (:func:`conformance.cases._support.model_releases_of`): on the model target a case also
runs, and is judged, at the releases it names; a target that cannot be rebuilt at another release runs it once."""

from __future__ import annotations

from importlib import resources
from types import SimpleNamespace
from typing import Any

import pytest

from conformance.cases import _support
from conformance.cases._support import model_releases_of, run_case
from conformance.scenarios import load_scenario, parse_scenario
from conformance.violations import Kind

DISPATCH = resources.files("conformance.cases") / "scenarios" / "dispatch"


def _scenario(*tags: str) -> Any:
    return parse_scenario({"name": "s", "tags": list(tags), "steps": [{"do": "open", "consumer": "c1"}]})


def test_the_tag_names_model_targets() -> None:
    assert model_releases_of(_scenario("contract:delivery", "model-release:4.0.13", "model-release:3.2:classic")) == (
        "model:4.0.13",
        "model:3.2:classic",
    )
    assert model_releases_of(_scenario("contract:delivery")) == ()
    for name, spec in (
        ("out-of-order-replay-behind-paused-consumer", "model:4.0.13"),
        ("joiner-behind-unsendable-replay", "model:3.0.4"),
    ):
        assert model_releases_of(load_scenario(str(DISPATCH / f"{name}.toml"))) == (spec,)


class _Runner:
    """``keyshared_run`` as :func:`run_case` calls it: records which target each run was on."""

    def __init__(self, rebuildable: bool) -> None:
        self.runs: list[str] = []
        self.target = SimpleNamespace(
            name="model", at_release=(lambda spec: SimpleNamespace(name=spec)) if rebuildable else (lambda spec: None)
        )

    def __call__(self, scenario: Any, *, label: str | None = None, target: Any = None) -> Any:
        self.runs.append((target or self.target).name)
        return SimpleNamespace(on=(target or self.target).name)


class _Check:
    """``keyshared_check``: deferred violations are raised by the next call, as the fixture does."""

    def __init__(self) -> None:
        self.pending: list[str] = []

    def violation(self, contract: str, explanation: str, *, kind: Any = None, defer: bool = False) -> None:
        self.pending.append(explanation)

    def __call__(self, result: Any, profile: Any = None) -> Any:
        pending, self.pending = self.pending, []
        if pending:
            raise AssertionError("; ".join(pending))
        return result


@pytest.fixture
def stalls_at_the_old_release(monkeypatch: pytest.MonkeyPatch) -> None:
    """The judgement of a run finds a stall only on the run at ``model:4.0.13``."""

    def problems(scenario: Any, result: Any, *, progress: bool = True) -> list[tuple[str, Kind, str]]:
        return [("delivery", Kind.STALLED, "stalled: step 7")] if result.on == "model:4.0.13" else []

    monkeypatch.setattr(_support, "case_problems", problems)


@pytest.mark.usefixtures("stalls_at_the_old_release")
def test_a_broken_contract_at_the_named_release_fails_the_case_with_the_release_named() -> None:
    runner = _Runner(rebuildable=True)
    with pytest.raises(AssertionError, match=r"^at model:4\.0\.13: stalled: step 7$"):
        run_case(_scenario("model-release:4.0.13"), runner, _Check())
    assert runner.runs == ["model:4.0.13"]


@pytest.mark.usefixtures("stalls_at_the_old_release")
def test_the_target_itself_runs_after_the_named_releases_pass() -> None:
    runner = _Runner(rebuildable=True)
    assert run_case(_scenario("model-release:3.0.4"), runner, _Check()).on == "model"
    assert runner.runs == ["model:3.0.4", "model"]


@pytest.mark.usefixtures("stalls_at_the_old_release")
def test_a_real_broker_runs_the_case_once() -> None:
    runner = _Runner(rebuildable=False)
    assert run_case(_scenario("model-release:4.0.13"), runner, _Check()).on == "model"
    assert runner.runs == ["model"]
