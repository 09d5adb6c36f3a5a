"""Off the client threads: the trace pipeline writes the same bytes as TraceWriter, and the checker process
gives the same verdict as checking the saved trace (or says it failed, so the run can fall back)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from conformance.checks import check_trace
from conformance.scenarios import load_scenario
from conformance.trace import SelectorSpec, SubscriptionSpec, TraceHeader, TraceWriter
from conformance.trace.reader import read_trace
from pytest_keyshared.driver import run_scenario
from pytest_keyshared.driver.checker_process import CheckerProcess, CheckerProcessError
from pytest_keyshared.driver.live import LiveChecker
from pytest_keyshared.driver.pipeline import TracePipeline
from pytest_keyshared.targets import open_target

HEADER = TraceHeader(
    target="pulsar-lite",
    subscription=SubscriptionSpec("ks"),
    pulsar_version="4.0",
    selector=SelectorSpec("consistent-hashing"),
    seed=0,
)


def _record(writer: TraceWriter, n: int) -> None:
    topic = "persistent://public/default/t"
    writer.record("open", consumer="c1", result="ok", topic=topic, subscription="ks", name="c1")
    for i in range(1, n + 1):
        key, mid = f"k{i % 7}", f"0:{i}:-1:-1"
        writer.record(
            "publish", topic=topic, producer="p1", key=key, seq=i, uid=f"p1:{i}", msg_id=mid, result="ok", t0=0
        )
        writer.record("receive", topic=topic, subscription="ks", consumer="c1", key=key, msg_id=mid, uid=f"p1:{i}")
        writer.record("ack", topic=topic, subscription="ks", consumer="c1", key=key, msg_id=mid, uid=f"p1:{i}")
    writer.record("end", drained=True)


def test_the_pipeline_writes_what_the_trace_writer_writes(tmp_path: Path) -> None:
    ticks = iter(range(10**6))
    direct = TraceWriter(tmp_path / "direct.jsonl", HEADER, clock=lambda: next(ticks))
    _record(direct, 500)
    direct.close()

    ticks = iter(range(10**6))
    seen: list[bytes] = []
    writer = TraceWriter(None, HEADER, clock=lambda: next(ticks), keep=False)
    pipeline = TracePipeline(tmp_path / "piped.jsonl", HEADER, [seen.append])
    writer.add_listener(pipeline.append)
    _record(writer, 500)
    assert pipeline.close()
    assert (tmp_path / "piped.jsonl").read_bytes() == (tmp_path / "direct.jsonl").read_bytes()
    direct_lines = (tmp_path / "direct.jsonl").read_bytes().split(b"\n", 1)[1]
    assert b"".join(seen) == direct_lines  # listeners get exactly the lines written


def test_the_checker_process_agrees_with_checking_the_saved_trace(tmp_path: Path) -> None:
    with open_target("model", artifacts_dir=tmp_path / "t") as target:  # a real driver trace, made on the model
        result = run_scenario(target, load_scenario("join-while-pending"), seed=2, out_dir=tmp_path / "run")
    header, events = read_trace(result.trace_path)
    lines = result.trace_path.read_bytes().split(b"\n", 1)[1].splitlines(keepends=True)
    process = CheckerProcess(header, None, log_path=tmp_path / "checker.log")
    for start in range(0, len(lines), 64):
        process.feed_lines(b"".join(lines[start : start + 64]))
    assert process.finish(60) == check_trace(result.trace_path)
    by_name = CheckerProcess(header, "strict", log_path=tmp_path / "checker.log")
    by_name.feed_lines(b"".join(lines))
    assert by_name.finish(60) == check_trace(result.trace_path, profile="strict")
    assert len(events) == len(lines)


def test_a_dead_checker_process_is_reported_and_the_run_falls_back(tmp_path: Path) -> None:
    process = CheckerProcess(HEADER, None, log_path=tmp_path / "checker.log")
    os.kill(process.pid, signal.SIGKILL)
    with pytest.raises(CheckerProcessError, match="checker process"):
        process.feed_lines(b'{"i": 0}\n' * 10000)
        process.finish(5)

    trace = tmp_path / "trace.jsonl"
    writer = TraceWriter(trace, HEADER)
    _record(writer, 3)
    writer.close()
    live = LiveChecker(HEADER, None, process_log=tmp_path / "checker2.log")
    os.kill(live._process.pid, signal.SIGKILL)
    verdict = live.finish(trace)
    assert verdict == check_trace(trace)
    assert any("checked the saved trace instead" in note for note in live.notes)
