"""Soaks against the reference model: byte-for-byte reproducible, clean under churn and restarts, and a model
that breaks the contract is caught."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from conformance.soak import SoakPlan
from conformance.trace.chunks import chunk_paths, read_chunks
from pytest_keyshared.soak import SoakStatus, run_soak
from pytest_keyshared.targets import UnsupportedByTarget, open_target


def _soak(spec: str, plan: SoakPlan, out: Path, **kwargs: object):  # type: ignore[no-untyped-def]
    with open_target(spec, artifacts_dir=out / "target") as target:
        return run_soak(target, plan, out_dir=out, **kwargs)


PLAN = SoakPlan(duration_s=None, messages=2000, rate=1000, churn_per_min=300, faults=("restart",), seed=11)


def test_same_seed_gives_the_same_chunks_byte_for_byte(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """And the model's trimming of consumed entries changes nothing: the second run keeps every entry."""
    from reference_model.storage import TopicLog

    trimmed: list[int] = []
    trim_through = TopicLog.trim_through

    def counting(self: TopicLog, position: tuple[int, int], *, min_batch: int = 0) -> int:
        trimmed.append(trim_through(self, position, min_batch=min_batch))
        return trimmed[-1]

    monkeypatch.setattr(TopicLog, "trim_through", counting)
    monkeypatch.setattr("reference_model.broker.topic._TRIM_BATCH", 64)  # trims often within 2,000 messages
    first = _soak("model", PLAN, tmp_path / "a")
    assert sum(trimmed) > PLAN.messages // 2  # type: ignore[operator]
    calls = len(trimmed)
    monkeypatch.setattr("pytest_keyshared.driver.model_session.ModelSession.keep_memory_bounded", lambda self: None)
    second = _soak("model", PLAN, tmp_path / "b")
    assert len(trimmed) == calls  # nothing trimmed in the second run
    a, b = chunk_paths(first.trace_dir), chunk_paths(second.trace_dir)
    assert [p.name for p in a] == [p.name for p in b]
    assert all(x.read_bytes() == y.read_bytes() for x, y in zip(a, b, strict=True))
    other = _soak("model", SoakPlan(duration_s=None, messages=300, rate=1000, seed=12), tmp_path / "c")
    assert [e.to_json() for e in read_chunks(other.trace_dir)[1]] != [e.to_json() for e in read_chunks(a[0].parent)[1]]


def test_model_soak_with_churn_and_restarts_is_clean(tmp_path: Path) -> None:
    reports: list[SoakStatus] = []
    result = _soak("model", PLAN, tmp_path, status=reports.append, status_every_s=0.2)
    assert result.exit_code == 0, result.verdict.render()
    assert result.verdict.valid and result.live_violations == 0
    assert result.faults.get("restart", 0) >= 1 and result.steps["open"] > PLAN.consumers  # churn happened
    assert result.steps.get("close", 0) + result.steps.get("crash", 0) >= 1
    c = result.counters
    assert c.published_ok == 2000 and c.acked_expected == 2000 and result.drained
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["exit_code"] == 0 and summary["throughput"] and summary["published_ok"] == 2000
    assert {row["t"] for row in summary["throughput"]} and all("produced" in r for r in summary["throughput"])
    assert (tmp_path / "verdict.json").exists() and (tmp_path / "soak.json").exists()
    assert reports and reports[-1].phase == "done" and "violations 0" in reports[-1].line()
    # the trace's restarts are fault events, and every open has a later close, crash or the end
    ops = [e.op.value for e in read_chunks(result.trace_dir)[1]]
    assert ops.count("fault") >= 2 and ops[-1] == "end"


def test_classic_dispatcher_held_to_pip379_is_caught_within_60s(tmp_path: Path) -> None:
    """The load stops at the first violation the live check reports (a stop, then drain and the full check)."""
    stop = threading.Event()

    def on_status(status: SoakStatus) -> None:
        if status.violations:
            stop.set()

    plan = SoakPlan(duration_s=60, rate=300, churn_per_min=600, seed=1)
    result = _soak("model:classic", plan, tmp_path, profile="pip379", status=on_status, status_every_s=0.1, stop=stop)
    assert result.exit_code == 1
    kinds = set(result.violation_kinds())
    assert kinds & {"key_overlap", "out_of_order"}, kinds
    assert result.live_violations > 0  # seen live, not only at the end
    first = min(v.events[0] for v in result.verdict.violations)
    events = list(read_chunks(result.trace_dir)[1])
    assert (events[first].t - events[0].t) / 1e9 < 60


def test_network_faults_on_the_model_and_restarts_on_a_url_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedByTarget, match="no network connections to fault"):
        _soak("model", SoakPlan(faults=("cut",)), tmp_path)
    from pytest_keyshared.soak import check_soak_plan
    from pytest_keyshared.targets import make_target

    with pytest.raises(UnsupportedByTarget, match="cannot take the fault 'restart'"):
        check_soak_plan(make_target("pulsar://127.0.0.1:1", artifacts_dir=tmp_path), SoakPlan(faults=("restart",)))


def test_the_soak_runs_in_the_one_run_shape() -> None:
    """Soaks, scenario runs and failover runs share one skeleton (``RunLoop.execute``); each fills in hooks."""
    from pytest_keyshared.driver.failover_run import _FailoverRun
    from pytest_keyshared.driver.run import _Run
    from pytest_keyshared.driver.run_loop import RunLoop
    from pytest_keyshared.soak.runner import _SoakRun

    for run in (_Run, _FailoverRun, _SoakRun):
        assert issubclass(run, RunLoop) and run.execute is RunLoop.execute, run
        assert run._step is RunLoop._step, run  # steps are timed and framed in one place
