"""Check-safe verdicts (Jepsen's ``check-safe``): a check that raises makes the verdict ``unknown``, naming it.

The exception is injected into one check's own module (its explanation renderer), so the traceback runs
through that check as a real bug would; the verdict names the check, carries the exception in its notes, and
``keyshared check`` exits 4 with one readable summary, no traceback.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from small_traces import key_overlap

import conformance.checks.replication as replication
import conformance.checks.unexpected as unexpected
from conformance.checks import Validity, check_trace
from conformance.trace import SubscriptionSpec, TraceHeader
from conformance.trace.builder import TraceBuilder
from pytest_keyshared.cli import main


def _boom(*args: Any, **kwargs: Any) -> str:
    raise RuntimeError("injected into the check")


def stray_receive() -> TraceBuilder:
    """A receive of a uid nobody published: the ``unexpected`` check has something to explain."""
    b = TraceBuilder()
    b.open("c1")
    b.receive("c1", "k", "1:0")
    b.ack("c1", "1:0")
    b.end()
    return b


def test_a_crashing_check_makes_the_verdict_unknown_and_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    b = stray_receive()
    assert check_trace(b.events, header=b.header).validity is Validity.INVALID  # the check works untouched
    monkeypatch.setattr(unexpected, "explain", _boom)
    verdict = check_trace(b.events, header=b.header)
    assert verdict.validity is Validity.UNKNOWN and not verdict.valid
    assert verdict.crashed == ("unexpected",)
    (note,) = [n for n in verdict.notes if "crashed" in n]
    assert "check 'unexpected' crashed at the end: RuntimeError: injected into the check" in note
    assert verdict.exit_code == 4 and verdict.to_json()["crashed"] == ["unexpected"]
    assert verdict.render().startswith("UNKNOWN (check unexpected crashed)")


def test_findings_of_other_checks_still_make_it_invalid(monkeypatch: pytest.MonkeyPatch) -> None:
    """invalid > unknown > valid: a key overlap found before the crash is not lost."""
    b = key_overlap(end=False)
    b.receive("c1", "k", "9:9")  # never published: the crashing check's input
    b.end()
    monkeypatch.setattr(unexpected, "explain", _boom)
    verdict = check_trace(b.events, header=b.header)
    assert verdict.validity is Validity.INVALID and verdict.crashed == ("unexpected",)
    assert "key_overlap" in {v.kind.value for v in verdict.violations}


def test_a_crash_while_feeding_stops_that_check_only(monkeypatch: pytest.MonkeyPatch) -> None:
    header = TraceHeader(target="x", subscription=SubscriptionSpec("s"), extra={"clusters": ["r1", "r2"]})
    b = TraceBuilder(header)
    b.open("c1", topic="t@r1")
    b.publish("k", "1:0", topic="t@r1")
    b.add("failover", topic="t@r1", cluster="r1", to="r2")
    b.end()
    monkeypatch.setattr(replication.ReplicationCheck, "_failover", _boom)
    verdict = check_trace(b.events, header=b.header)
    assert verdict.crashed == ("replication",) and verdict.validity is Validity.UNKNOWN
    assert any("check 'replication' crashed at E2: RuntimeError" in n for n in verdict.notes)


def test_keyshared_check_exits_4_naming_the_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = stray_receive().write(tmp_path / "t.jsonl")
    monkeypatch.setattr(unexpected, "explain", _boom)
    assert main(["check", str(path)]) == 4
    out = capsys.readouterr()
    assert out.out.startswith("UNKNOWN (check unexpected crashed)") and "Traceback" not in out.out + out.err
    assert "RuntimeError: injected into the check" in out.out
    assert main(["check", "--json", str(path)]) == 4
    body = json.loads(capsys.readouterr().out)
    assert body["validity"] == "unknown" and body["crashed"] == ["unexpected"]


def test_keyshared_run_exits_4_when_a_check_crashes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The live checker crashes, the stored trace is checked at the end, that crashes too: unknown, exit 4.

    Injected where the streaming engine calls out (the membership timeline, at every open): the engine's own
    classes may be compiled (mypyc), which cannot be patched."""
    from conformance.checks.assignment import Timeline

    monkeypatch.setattr(Timeline, "apply", _boom)
    code = main(["run", "--target", "model", "--scenario", "steady-state", "--seed", "1", "--out", str(tmp_path)])
    assert code == 4
    verdict = json.loads((tmp_path / "verdict.json").read_text())
    assert verdict["validity"] == "unknown" and verdict["crashed"] == ["streaming"]


def test_a_crash_on_the_spark_engine_is_an_unknown_verdict_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Spark engine is guarded like the Python one (no Spark is started: the engine's entry raises)."""
    import conformance.spark

    monkeypatch.setattr(conformance.spark, "check_with_spark", _boom)
    verdict = check_trace(stray_receive().write(tmp_path / "t.jsonl"), engine="spark")
    assert verdict.validity is Validity.UNKNOWN and verdict.crashed == ("spark",) and verdict.engine == "spark"
    assert "check 'spark' crashed at the end: RuntimeError: injected into the check" in verdict.notes[0]
