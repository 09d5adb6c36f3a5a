"""Failover scenarios: a failover is a scenario file like any other (``[settings] clusters`` and the failover
steps), run by ``keyshared run`` / ``replay`` / ``check`` and the replication cases; targets without clusters
refuse it in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from failover_runs import cursor_past_unacked
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.cases._support import area_scenarios
from conformance.scenarios import (
    AckPlan,
    ClusterDown,
    ClusterUp,
    Consume,
    DeleteSubscription,
    FailOver,
    InvalidScenario,
    KeySet,
    LinkDown,
    LinkUp,
    Publish,
    Read,
    ReplicatedStatus,
    ReplicatorFaults,
    Scenario,
    Settings,
    Sleep,
    Snapshot,
    dumps_scenario,
    load_scenario,
    loads_scenario,
    parse_scenario,
)
from pytest_keyshared.cli import main
from pytest_keyshared.driver import run_scenario
from pytest_keyshared.targets import UnsupportedByTarget, open_target

CASES = Path(__file__).parents[2] / "conformance" / "cases" / "scenarios" / "replication"
SWITCH = str(CASES / "switch-to-standby.toml")


def test_the_replication_cases_are_failover_scenarios() -> None:
    scenarios = area_scenarios("replication")
    assert len(scenarios) >= 7
    for scenario in scenarios:
        assert scenario.is_failover() and isinstance(scenario.steps[-1], FailOver)
        assert scenario.required_capabilities()["replication"].startswith("[settings] clusters")


def test_an_ack_plan_picks_message_numbers() -> None:
    assert [n for n in range(10) if AckPlan().acks(n)] == list(range(10))
    assert not any(AckPlan(invert=True).acks(n) for n in range(10))
    assert [n for n in range(10) if AckPlan(below=3).acks(n)] == [0, 1, 2]
    assert [n for n in range(9) if AckPlan(every=3, offset=1, invert=True).acks(n)] == [0, 2, 3, 5, 6, 8]


plans = st.builds(
    AckPlan,
    every=st.integers(1, 5),
    offset=st.just(0),
    below=st.none() | st.integers(0, 50),
    invert=st.booleans(),
)
failover_steps = st.one_of(
    st.builds(Publish, count=st.integers(1, 20), keys=st.builds(KeySet, count=st.integers(1, 9)),
              cluster=st.sampled_from([None, "r1", "r3"])),
    st.builds(Consume, ack=plans),
    st.builds(Sleep, ms=st.integers(0, 999)),
    st.just(Snapshot()),
    st.sampled_from([ClusterDown("r2"), ClusterUp("r2"), LinkDown("r2", "r1"), LinkUp("r3", "r2"),
                     DeleteSubscription("r3")]),
    st.builds(ReplicatedStatus, cluster=st.sampled_from(["r1", "r2"]), enabled=st.booleans()),
    st.builds(ReplicatorFaults, cluster=st.just("r1"), remote=st.sampled_from(["r2", "r3"]),
              lose_receipts=st.booleans(), repeat_window=st.integers(0, 5)),
    st.builds(Read, cluster=st.sampled_from(["r2", "r3"])),
)  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(
    steps=st.lists(failover_steps, max_size=6), to=st.sampled_from(["r2", "r3"]), fmt=st.sampled_from(["toml", "json"])
)
def test_any_failover_scenario_round_trips(steps: list[object], to: str, fmt: str) -> None:
    scenario = Scenario(
        name="fo",
        steps=(*steps, FailOver(to=to)),  # type: ignore[arg-type]
        settings=Settings(clusters=("r1", "r2", "r3"), replication_delays=(("r1", "r2", 900),)),
    )
    assert loads_scenario(dumps_scenario(scenario, fmt), fmt) == scenario


def _failover(*steps: dict[str, object], **settings: object) -> dict[str, object]:
    return {"name": "x", "settings": {"clusters": ["r1", "r2"], **settings}, "steps": list(steps)}


PUBLISH = {"do": "publish", "count": 3}
TO_R2 = {"do": "failover", "to": "r2"}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        pytest.param({"name": "x", "steps": [TO_R2]}, "needs [settings] clusters", id="failover-without-clusters"),
        pytest.param(
            {"name": "x", "steps": [{**PUBLISH, "cluster": "r1"}]}, "needs [settings] clusters", id="cluster-publish"
        ),
        pytest.param(_failover(PUBLISH, {"do": "open", "consumer": "c1"}, TO_R2), "not a failover step", id="open"),
        pytest.param(_failover(PUBLISH), "ends with a failover step", id="no-failover"),
        pytest.param(
            _failover({"do": "replicator_faults", "cluster": "r2", "remote": "r2"}, TO_R2),
            "both 'r2'",
            id="replicator-faults-one-cluster",
        ),
        pytest.param(
            _failover({"do": "replicator_faults", "cluster": "r1", "remote": "r2", "repeat_window": -1}, TO_R2),
            "repeat_window",
            id="replicator-faults-negative-window",
        ),
        pytest.param(_failover(TO_R2, PUBLISH), "make it the last step", id="failover-not-last"),
        pytest.param(_failover({"do": "failover", "to": "r1"}), "fail over to another cluster", id="to-home"),
        pytest.param(_failover({"do": "failover", "to": "r9"}), "not one of the clusters", id="unknown-to"),
        pytest.param(_failover({**PUBLISH, "cluster": "r3"}, TO_R2), "not one of the clusters", id="unknown-cluster"),
        pytest.param(_failover({**PUBLISH, "batching": "default"}, TO_R2), "not used here", id="batching"),
        pytest.param(_failover({"do": "consume", "ack": "some"}, TO_R2), "not one of all, none", id="ack-word"),
        pytest.param(_failover({"do": "consume", "ack": {"evry": 2}}, TO_R2), "Did you mean 'every'?", id="ack-typo"),
        pytest.param(_failover({"do": "consume", "ack": {"every": 2, "offset": 2}}, TO_R2), "offset < every", id="off"),
        pytest.param({"name": "x", "settings": {"clusters": ["r1"]}, "steps": [TO_R2]}, "two or more", id="one"),
        pytest.param(_failover(TO_R2, replication_delays=[["r1", "r3", 5]]), "'r3' is not one", id="delay-cluster"),
        pytest.param(_failover(TO_R2, replication_delays=[["r1", "r2"]]), "[from, to, ms]", id="delay-shape"),
        pytest.param(_failover(TO_R2, drain=False), "drain = false", id="no-drain"),
        pytest.param(_failover({"do": "link_down", "cluster": "r2", "remote": "r2"}, TO_R2), "both 'r2'", id="link"),
        pytest.param(_failover({"do": "link_up", "cluster": "r2", "remote": "r7"}, TO_R2), "'r7' is not", id="remote"),
        pytest.param(_failover({"do": "delete_subscription", "cluster": "r1"}, TO_R2), "connected in 'r1'", id="del"),
        pytest.param(_failover({"do": "replicated_status", "cluster": "r2"}, TO_R2), "enabled", id="status"),
    ],
)
def test_bad_failover_scenarios_are_refused_in_one_line(data: object, message: str) -> None:
    with pytest.raises(InvalidScenario) as info:
        parse_scenario(data, source="bad.toml")
    assert message in str(info.value) and "\n" not in str(info.value)


def test_keyshared_run_runs_a_failover_scenario_on_the_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--scenario", SWITCH, "--target", "model", "--out", str(tmp_path / "a"), "-q"]) == 0
    out = capsys.readouterr().out
    assert "verdict: VALID" in out and "report:" in out
    events = [json.loads(line) for line in (tmp_path / "a" / "trace.jsonl").read_text().splitlines()]
    assert events[0]["clusters"] == ["r1", "r2"] and events[0]["scenario"] == "switch-to-standby"
    ops = [e.get("op") for e in events[1:]]
    assert ops.count("snapshot") == 6 and ops.count("failover") == 1 and ops[-1] == "end"
    assert (tmp_path / "a" / "report.html").exists() and (tmp_path / "a" / "verdict.json").exists()
    assert main(["check", str(tmp_path / "a" / "trace.jsonl")]) == 0
    assert main(["run", "--scenario", SWITCH, "--target", "model", "--out", str(tmp_path / "b"), "-q"]) == 0
    assert (tmp_path / "a" / "trace.jsonl").read_bytes() == (tmp_path / "b" / "trace.jsonl").read_bytes()


def test_keyshared_replay_counts_a_planted_replication_bug(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with cursor_past_unacked():
        code = main(["replay", SWITCH, "--target", "model", "--runs", "2", "--out", str(tmp_path / "r"), "--json"])
    assert code == 1
    tally = json.loads(capsys.readouterr().out)
    assert tally["runs"] == 2 and tally["invalid_runs"] == 2
    assert tally["kinds"]["skipped_after_failover"]["runs"] == 2
    stored = tmp_path / "r" / "run-001" / "trace.jsonl"
    assert main(["check", str(stored)]) == 1  # judged again from the stored trace, without the variant


def test_a_target_without_clusters_refuses_before_anything_runs(tmp_path: Path) -> None:
    scenario = area_scenarios("replication")[0]
    with open_target("model", artifacts_dir=tmp_path / "t") as target:
        object.__setattr__(target, "capabilities", type(target.capabilities)())  # no replication
        with pytest.raises(UnsupportedByTarget) as info:
            run_scenario(target, scenario, seed=0, out_dir=tmp_path / "run")
    assert "needs replication" in str(info.value) and info.value.exit_code == 2
    assert not (tmp_path / "run").exists()


def _events(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()[1:]]


def test_an_interrupted_failover_run_saves_its_trace_and_propagates(tmp_path: Path) -> None:
    def interrupt(progress: object) -> None:  # Ctrl-C while the run reports its third step
        if getattr(progress, "step", 0) == 3 and not getattr(progress, "final", False):
            raise KeyboardInterrupt

    with open_target("model", artifacts_dir=tmp_path / "t") as target, pytest.raises(KeyboardInterrupt):
        run_scenario(target, load_scenario(SWITCH), seed=0, out_dir=tmp_path / "run", progress=interrupt)
    end = _events(tmp_path / "run" / "trace.jsonl")[-1]
    assert end["op"] == "end" and end["drained"] is False
    assert (tmp_path / "run" / "scenario.toml").exists() and (tmp_path / "run" / "verdict.json").exists()


def test_a_failover_run_whose_step_fails_ends_its_trace_and_raises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: object, to: str) -> None:
        raise RuntimeError(f"no way to {to}")

    monkeypatch.setattr("pytest_keyshared.driver.replication.Failover.fail_over", broken)
    with open_target("model", artifacts_dir=tmp_path / "t") as target, pytest.raises(RuntimeError, match="no way"):
        run_scenario(target, load_scenario(SWITCH), seed=0, out_dir=tmp_path / "run")
    end = _events(tmp_path / "run" / "trace.jsonl")[-1]
    assert end["op"] == "end" and end["notes"] == ["run stopped: RuntimeError: no way to r2"]


def test_clusters_without_a_step_s_method_refuse_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # real clusters cannot disconnect one replication direction: the case is refused (the plugin skips it)
    from pytest_keyshared.driver.model_sites import ModelSites

    monkeypatch.delattr(ModelSites, "set_link_down")
    scenario = next(s for s in area_scenarios("replication") if s.name == "replicator-one-direction-closed")
    with open_target("model", artifacts_dir=tmp_path / "t") as target, pytest.raises(UnsupportedByTarget) as info:
        run_scenario(target, scenario, seed=0, out_dir=tmp_path / "run")
    assert "offer no link_down, link_up step" in str(info.value) and info.value.exit_code == 2
    assert not (tmp_path / "run").exists()
