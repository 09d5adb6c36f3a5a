"""The target is the seam: a target defined here, outside the package, runs a built-in scenario end to end.

``PocketModel`` is one class of its own (no base class from ``pytest_keyshared``): it satisfies the
``conformance.target.Target`` protocol and opens its own session, a stepped run of a reference-model broker
it builds (Pulsar 3.3, classic dispatcher).  The driver never asks what kind of target it has.  Handed to the
plugin through ``pytest_keyshared_make_target``, the same class runs the suite's built-in cases.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conformance.scenarios import load_scenario
from conformance.target import Target
from pytest_keyshared.driver import run_scenario
from pytest_keyshared.driver.model_session import ModelSession
from pytest_keyshared.targets.base import Capabilities, Claims
from reference_model.broker import ModelBroker

pytest_plugins = ["pytester"]


class PocketModel:
    """A reference-model broker of Pulsar 3.3, brought by a third party."""

    def __init__(self, artifacts_dir: Path) -> None:
        self.name = "pocket-model"
        self.artifacts_dir = artifacts_dir
        self.capabilities = Capabilities(crash_consumer=True, reasons={"broker_restart": "a pocket model"})
        self.claims = Claims(pulsar_version="3.3", implementation="classic", selector="consistent-hashing")
        self.sessions = 0

    deterministic = True
    broker_log = None

    def header_extra(self) -> dict[str, Any]:
        return {"implementation": "classic", "brought_by": "a test module"}

    def describe(self) -> str:
        return "a pocket reference model"

    def start(self) -> None:
        """Nothing to start."""

    def stop(self) -> None:
        """Nothing to stop."""

    def open_session(self, topic: str, run_dir: Path, nonce: str, *, seed: int) -> Any:
        self.sessions += 1
        return ModelSession(self, topic, run_dir, nonce, seed=seed)  # type: ignore[arg-type]

    def new_broker(self, seed: int) -> ModelBroker:  # what ModelSession asks of its target
        return ModelBroker(pulsar_version="3.3", implementation="classic", seed=seed)

    def restart_broker(self, *, kill: bool = False) -> None:
        raise AssertionError("not asked for")

    def set_topic_deduplication(self, topic: str, enabled: bool) -> None:
        raise AssertionError("not asked for")

    def log_position(self) -> int:
        return 0

    def copy_log(self, since: int, dest: Path) -> Path | None:
        return None


def test_a_target_of_its_own_runs_a_builtin_scenario_end_to_end(tmp_path: Path) -> None:
    target = PocketModel(tmp_path / "target")
    assert isinstance(target, Target)  # the protocol of conformance.target, no base class needed
    result = run_scenario(target, load_scenario("leave-while-pending"), seed=7, out_dir=tmp_path / "run")  # type: ignore[arg-type]
    assert target.sessions == 1
    assert result.verdict is not None and result.verdict.valid, result.verdict.render()
    assert result.verdict.profile.name == "classic"  # the contract it claims went into the header
    header = json.loads(result.trace_path.read_text().splitlines()[0])
    assert header["target"] == "pocket-model" and header["brought_by"] == "a test module"
    again = run_scenario(target, load_scenario("leave-while-pending"), seed=7, out_dir=tmp_path / "again")  # type: ignore[arg-type]
    assert again.trace_path.read_bytes() == result.trace_path.read_bytes()  # deterministic, like the model


POCKET_CONFTEST = """
import contextlib
from test_target_seam_source import PocketModel

def pytest_keyshared_make_target(config, spec, artifacts_dir):
    if spec == "pocket-model":
        return contextlib.nullcontext(PocketModel(artifacts_dir))
    return None
"""


def test_the_plugin_runs_the_suite_s_builtin_cases_on_it(pytester: Any) -> None:
    """The same class, handed to the plugin through its hook, runs built-in cases of the suite."""
    pytester.makepyfile(test_target_seam_source=Path(__file__).read_text(encoding="utf-8"))
    pytester.makeconftest(POCKET_CONFTEST)
    result = pytester.runpytest(
        "-p", "pytest_keyshared", "--pyargs", "conformance.cases.test_builtin", "--keyshared-target=pocket-model",
        "-k", "steady-state or leave-while-pending", "-p", "no:cacheprovider",
    )  # fmt: skip
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*keyshared conformance: target=pocket-model*"])
