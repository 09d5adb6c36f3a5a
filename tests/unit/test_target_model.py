"""The driver against the in-process model: deterministic traces, the recording discipline, every step.

The model target runs consumers in deterministic steps on the simulated clock, so these tests are fast and
exact; the same driver against a real broker is in ``tests/broker/``.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from conformance.scenarios import (
    Behaviour,
    Crash,
    KeySet,
    Open,
    Publish,
    Redeliver,
    Scenario,
    Settings,
    WaitQuiet,
    WaitReceived,
    builtin_scenarios,
    load_scenario,
)
from conformance.trace.reader import read_trace
from pytest_keyshared.driver import Progress, RunResult, run_scenario, topic_for
from pytest_keyshared.driver.selfcheck import discipline_problems
from pytest_keyshared.targets import UnsupportedByTarget, make_target, open_target
from reference_model.errors import InvalidArgument


def run_on(spec: str, scenario: Scenario | str, out: Path, *, seed: int = 1, **kwargs: Any) -> RunResult:
    loaded = load_scenario(scenario) if isinstance(scenario, str) else scenario
    with open_target(spec, artifacts_dir=out / "target") as target:
        return run_scenario(target, loaded, seed=seed, out_dir=out, **kwargs)


def events(result: RunResult) -> list[dict[str, Any]]:
    lines = result.trace_path.read_text().splitlines()
    return [json.loads(line) for line in lines[1:]]


def assert_recording_discipline(trace: list[dict[str, Any]]) -> None:
    """What holds for every trace the driver writes, on any target."""
    assert discipline_problems(trace) == []
    for e in trace:
        if e["op"] == "publish":
            assert e["result"] in ("ok", "fail", "info") and "t0" in e and e["t0"] <= e["t"]


def test_the_self_check_finds_harness_bugs() -> None:
    good = [
        {"i": 0, "t": 0, "op": "open", "consumer": "c1", "result": "ok"},
        {"i": 1, "t": 1, "op": "receive", "topic": "t", "consumer": "c1", "msg_id": "0:1:-1:-1"},
        {"i": 2, "t": 2, "op": "ack", "topic": "t", "consumer": "c1", "msg_id": "0:1:-1:-1"},
        {"i": 3, "t": 2, "op": "close", "consumer": "c1"},
        {"i": 4, "t": 3, "op": "end", "drained": True},
    ]
    assert discipline_problems(good) == []
    bad = [
        {"i": 0, "t": 5, "op": "receive", "topic": "t", "consumer": "c1", "msg_id": "0:1:-1:-1"},
        {"i": 1, "t": 4, "op": "open", "consumer": "c1", "result": "ok"},
        {"i": 2, "t": 6, "op": "ack", "topic": "t", "consumer": "c1", "msg_id": "0:2:-1:-1"},
        {"i": 4, "t": 7, "op": "publish", "result": "ok"},
    ]
    assert discipline_problems(bad) == [
        "event 0 (receive): 'c1' is not open",
        "event 1 (open): t=4 goes back from 5",
        "event 2 (ack): 'c1' never received 0:2:-1:-1 in this incarnation",
        "event 4 (publish): expected i=3",
        "event 4 (publish): ok without a msg_id",
        "no end event",
    ]


def test_the_same_scenario_and_seed_give_the_same_trace_byte_for_byte(tmp_path: Path) -> None:
    first = run_on("model", "join-while-pending", tmp_path / "a", seed=7)
    second = run_on("model", "join-while-pending", tmp_path / "b", seed=7)
    assert first.trace_path.read_bytes() == second.trace_path.read_bytes()
    other = run_on("model", "join-while-pending", tmp_path / "c", seed=8)
    assert other.trace_path.read_bytes() != first.trace_path.read_bytes()
    assert first.topic == topic_for(load_scenario("join-while-pending"), 7, "0")


@pytest.mark.parametrize("name", sorted(builtin_scenarios()))
def test_every_builtin_runs_on_the_model_and_delivers_everything(name: str, tmp_path: Path) -> None:
    result = run_on("model", name, tmp_path)
    assert result.verdict is not None and result.verdict.valid, result.verdict.render()
    assert result.exit_code == 0
    trace = events(result)
    assert_recording_discipline(trace)
    read_trace(result.trace_path)  # the checker's reader accepts it
    assert result.drained and result.quiet
    assert not [n for n in result.notes if n.startswith("harness self-check")]
    c = result.counters
    assert c.expected_uids == c.acked_expected > 0, result.steps
    end = trace[-1]
    assert end["drained"] is True and end["expected"] == end["acked"] == c.expected_uids
    header = json.loads(result.trace_path.read_text().splitlines()[0])
    assert header["target"] == "model" and header["scenario"] == name and header["seed"] == 1
    assert header["implementation"] == "pip379" and header["selector"]["pulsar_version"] == "4.0"


def test_join_while_pending_on_the_model_keeps_moved_keys_back_until_c1_acks(tmp_path: Path) -> None:
    """PIP-379 draining hashes: while c1 holds a key, c2 receives nothing of it."""
    trace = events(run_on("model", "join-while-pending", tmp_path))
    held: dict[str, Counter[str]] = {}
    for e in trace:
        if e["op"] == "receive":
            holders = held.setdefault(e["key"], Counter())
            others = [c for c, n in holders.items() if n > 0 and c != e["consumer"]]
            assert not others, f"{e['consumer']} received {e['key']} while {others} held it"
            holders[e["consumer"]] += 1
        elif e["op"] == "ack":
            held[e["key"]][e["consumer"]] -= 1
    assert any(e["op"] == "receive" and e["consumer"] == "c2" for e in trace)


def test_sticky_conflict_records_the_refused_open_and_goes_on(tmp_path: Path) -> None:
    result = run_on("model", "sticky-conflict", tmp_path)
    opens = {e["consumer"]: e for e in events(result) if e["op"] == "open"}
    assert opens["c2"]["result"] == "fail" and "ConsumerAssignError" in opens["c2"]["error"]
    assert opens["c2"]["policy"] == {
        "key_shared_mode": "STICKY",
        "allow_out_of_order_delivery": False,
        "sticky_ranges": [[30000, 65535]],
    }
    assert opens["c1"]["result"] == opens["c3"]["result"] == "ok"
    failed = [s for s in result.steps if not s.ok]
    assert [s.index for s in failed] == [2] and "Range conflict" in failed[0].note


def test_dedup_retry_on_the_model_gets_dedup_receipts_for_the_resends(tmp_path: Path) -> None:
    result = run_on("model", "dedup-retry", tmp_path)
    publishes = [e for e in events(result) if e["op"] == "publish"]
    resent = [e for e in publishes if e["seq"] > 40 and publishes.index(e) >= 50]
    assert len(publishes) == 60 and len(resent) == 10
    assert {e["msg_id"] for e in resent} == {"-1:-1:-1:-1"}
    assert {e["uid"] for e in resent} == {f"p1:{s}" for s in range(41, 51)}
    assert result.counters.received == 50
    header = json.loads(result.trace_path.read_text().splitlines()[0])
    assert header["deduplication"] is True


def test_crash_and_redeliver_are_recorded_before_the_client_call(tmp_path: Path) -> None:
    scenario = Scenario(
        name="crash-redeliver",
        steps=(
            Open(consumer="c1", behaviour=Behaviour("hold")),
            Open(consumer="c2", behaviour=Behaviour("hold")),
            Publish(count=20, keys=KeySet(count=4)),
            WaitReceived(count=20),
            Redeliver(consumer="c2"),
            WaitQuiet(),
            Crash(consumer="c1"),
            WaitQuiet(),
        ),
    )
    result = run_on("model", scenario, tmp_path)
    trace = events(result)
    assert_recording_discipline(trace)
    ops = [e["op"] for e in trace]
    assert ops.count("redeliver") == 1 and ops.count("crash") == 1
    crash_at = ops.index("crash")
    # after its crash, c1 appears only in the harness's observation that the broker removed it
    assert not [e for e in trace[crash_at:] if e.get("consumer") == "c1" and e["op"] not in ("crash", "gone")]
    assert ops.count("gone") == 1 and ops.index("gone") > crash_at
    assert result.counters.acked_expected == 20


@pytest.mark.parametrize("seed", [1, 56])
def test_a_same_name_reopen_after_a_crash_is_judged_as_the_model_did_it(tmp_path: Path, seed: int) -> None:
    """Regression: a crashed c1 stays in the ring until the broker notices, so a new c1 opened meanwhile is the
    name's second ring entry (index 1) or its first, depending on when the crash was detected. The checker once
    assumed one of the two and called the model's correct deliveries ``misassigned`` (found by a generated
    program, shrunk to this)."""
    scenario = Scenario(
        name="crash-then-reopen-same-name",
        steps=(
            Open(consumer="c1", behaviour=Behaviour("hold")),
            Open(consumer="c2"),
            Crash(consumer="c1"),
            Open(consumer="c1"),
            Publish(count=8, keys=KeySet(count=6)),
            WaitQuiet(),
        ),
    )
    result = run_on("model", scenario, tmp_path, seed=seed)
    assert result.verdict is not None and result.violation_kinds() == []
    receivers = {e["consumer"] for e in events(result) if e["op"] == "receive"}
    assert "c1" in receivers  # the reopened c1 took keys: its placement was judged, not skipped


def test_a_wait_that_cannot_be_met_is_bounded_and_noted(tmp_path: Path) -> None:
    scenario = Scenario(
        name="never",
        steps=(Open(consumer="c1"), Publish(count=3), WaitReceived(count=10, consumer="c1", timeout_ms=250)),
        settings=Settings(drain_quiet_ms=100),
    )
    result = run_on("model", scenario, tmp_path)
    note = result.steps[2].note
    assert not result.steps[2].ok and "received 3 of 10 within 250 ms" in note
    assert result.drained


def test_progress_is_reported_and_the_last_report_is_final(tmp_path: Path) -> None:
    seen: list[Progress] = []
    run_on("model", "steady-state", tmp_path, progress=seen.append)
    assert seen[-1].final and seen[-1].label == "done"
    assert [p.label for p in seen if not p.final][:3] == ["open", "open", "open"]
    assert "published 300" in seen[-1].line()


def test_an_interrupted_run_saves_its_trace_and_propagates(tmp_path: Path) -> None:
    def interrupt(progress: Progress) -> None:
        if progress.label == "wait_quiet":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_on("model", "steady-state", tmp_path, progress=interrupt)
    lines = (tmp_path / "trace.jsonl").read_text().splitlines()
    end = json.loads(lines[-1])
    assert end["op"] == "end" and end["drained"] is False and end["interrupted"] is True
    assert (tmp_path / "scenario.toml").exists()


def test_artifacts_are_written_beside_the_trace(tmp_path: Path) -> None:
    result = run_on("model", "steady-state", tmp_path)
    assert load_scenario(result.scenario_path) == load_scenario("steady-state")
    assert result.artifacts["trace"] == tmp_path / "trace.jsonl"
    assert result.broker_log is None  # the model keeps no log
    if result.verdict is not None:
        assert result.verdict_path is not None and json.loads(result.verdict_path.read_text())


def test_a_target_without_a_capability_refuses_before_anything_runs(tmp_path: Path) -> None:
    target = make_target("pulsar://127.0.0.1:1", artifacts_dir=tmp_path)  # never started: nothing listens there
    with pytest.raises(UnsupportedByTarget, match=r"step 5 \(restart_broker\) needs broker_restart"):
        run_scenario(target, load_scenario("restart-recovery"), seed=0, out_dir=tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    with open_target("model", artifacts_dir=tmp_path) as target:
        with pytest.raises(InvalidArgument, match=r"Expected a conformance\.scenarios\.Scenario"):
            run_scenario(target, "steady-state", seed=0, out_dir=tmp_path)  # type: ignore[arg-type]
        with pytest.raises(InvalidArgument, match="seed=-1"):
            run_scenario(target, load_scenario("steady-state"), seed=-1, out_dir=tmp_path)


def test_redeliver_drops_what_the_client_had_prefetched(tmp_path: Path) -> None:
    """Regression (found by the generated programs): the C++ client keeps its receiver queue on
    redeliver_unacknowledged_messages, so a prefetched message would reach c1 after the broker gave it to
    c2, a key_overlap the broker never caused.  The driver drops the prefetched copy, as a Java client does."""
    scenario = Scenario(
        name="redeliver-prefetched",
        steps=(
            Open(consumer="c1", behaviour=Behaviour("hold")),
            Publish(count=1, keys=KeySet(count=6)),
            Open(consumer="c2"),
            Redeliver(consumer="c1"),
            WaitQuiet(),
        ),
    )
    result = run_on("model", scenario, tmp_path, seed=0)
    assert result.verdict is not None and result.verdict.valid, result.verdict.render()
    receives = [(e["consumer"], e["redelivery_count"]) for e in events(result) if e["op"] == "receive"]
    assert receives == [("c2", 1)]
    assert any("dropped 1 prefetched messages at redeliver" in note for note in result.notes)
