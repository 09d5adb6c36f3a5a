"""The project's writers leave a trace in the bucketed layout too when asked (``keyshared run`` and ``keyshared
soak`` with ``--trace-layout bucketed [--buckets N]``; the plugin's ``keyshared_trace_layout``): one writer, the
converter's (:func:`conformance.trace.buckets.write_bucketed_copy`), run on the model target.

Proven both ways: the bucketed copy of a run the model breaks (a known bug at a release before its fix) is judged
with the same violations as the trace as recorded, and a clean run's copy is valid.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conformance.soak import SoakPlan
from conformance.trace.buckets import (
    DEFAULT_BUCKETS,
    TRACE_LAYOUTS,
    bucketed_name,
    parse_layout,
    read_manifest,
)
from pytest_keyshared.cli import main
from pytest_keyshared.commands._layout import LAYOUT_CHOICES, LAYOUT_DEFAULT_BUCKETS
from pytest_keyshared.soak import run_soak
from pytest_keyshared.targets import open_target

ROOT = Path(__file__).resolve().parents[2]
KNOWN_BUG = ROOT / "conformance" / "cases" / "scenarios" / "known_bugs" / "12885-close-during-reads.toml"


def test_the_cli_spells_the_layouts_as_the_layout_module_does() -> None:
    assert LAYOUT_CHOICES == TRACE_LAYOUTS and LAYOUT_DEFAULT_BUCKETS == DEFAULT_BUCKETS


@pytest.mark.parametrize(
    ("text", "buckets"), [("flat", None), ("bucketed", DEFAULT_BUCKETS), ("bucketed:3", 3), (" Bucketed:12 ", 12)]
)
def test_a_layout_setting_names_a_bucket_count(text: str, buckets: int | None) -> None:
    assert parse_layout(text) == buckets


@pytest.mark.parametrize("text", ["", "flat:2", "bucketed:", "bucketed:0", "bucketed:x", "buckets", "parquet"])
def test_a_malformed_layout_setting_says_what_would_work(text: str) -> None:
    with pytest.raises(ValueError, match="bucket"):
        parse_layout(text)


def test_the_bucketed_copy_lies_beside_the_trace() -> None:
    assert bucketed_name("run/trace.jsonl") == Path("run/trace-buckets")
    assert bucketed_name("soak/trace") == Path("soak/trace-buckets")
    assert bucketed_name("a/t-1.jsonl.gz") == Path("a/t-1-buckets")
    assert bucketed_name("b/x.parquet") == Path("b/x-buckets")


def _identities(verdict: dict[str, Any]) -> list[tuple[Any, ...]]:
    return sorted((v["kind"], v["key"], tuple(v["events"])) for v in verdict["violations"])


def _check_json(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    code = main(["check", str(path), "--json"])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    ("scenario", "target", "exit_code"),
    [(str(KNOWN_BUG), "model:2.8.0:classic", 1), ("join-while-pending", "model", 0)],
    ids=["known-bug", "clean"],
)
def test_keyshared_run_writes_the_bucketed_layout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], scenario: str, target: str, exit_code: int
) -> None:
    out = tmp_path / "run"
    args = ["run", scenario, "--target", target, "--seed", "7", "--out", str(out), "--json"]
    assert main([*args, "--trace-layout", "bucketed", "--buckets", "3"]) == exit_code
    result = json.loads(capsys.readouterr().out)
    copy = out / "trace-buckets"
    assert result["artifacts"]["trace_buckets"] == str(copy)
    layout = read_manifest(copy)
    lines = (out / "trace.jsonl").read_text().splitlines()
    assert (layout.buckets, layout.events) == (3, len(lines) - 1)  # every event but the header line
    recorded = json.loads((out / "verdict.json").read_text())
    code, bucketed = _check_json(copy, capsys)
    assert code == exit_code and bucketed["validity"] == recorded["validity"]
    assert _identities(bucketed) == _identities(recorded) and bucketed["counts"] == recorded["counts"]
    assert bucketed["extra"]["layout"] == "bucketed" and bucketed["extra"]["buckets"] == 3
    if exit_code:
        assert _identities(bucketed), "the known bug's run must show its violations"


def test_keyshared_run_writes_no_copy_by_default_and_refuses_buckets_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "join-while-pending", "--target", "model", "--out", str(tmp_path / "a"), "-q"]) == 0
    assert not (tmp_path / "a" / "trace-buckets").exists()
    capsys.readouterr()
    assert main(["run", "join-while-pending", "--target", "model", "--out", str(tmp_path / "b"), "--buckets", "4"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "keyshared run: InvalidArgument: --buckets 4 applies to --trace-layout bucketed; add --trace-layout bucketed"
        " or drop --buckets"
    ]
    assert not (tmp_path / "b").exists()  # refused before anything ran


def test_a_soak_writes_its_chunks_in_the_bucketed_layout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = SoakPlan(duration_s=None, messages=400, rate=1000, churn_per_min=300, faults=("restart",), seed=11)
    with open_target("model", artifacts_dir=tmp_path / "target") as target:
        result = run_soak(target, plan, out_dir=tmp_path / "soak", buckets=4)
    assert result.exit_code == 0, result.verdict.render()
    copy = tmp_path / "soak" / "trace-buckets"
    assert result.artifacts["trace_buckets"] == copy and result.summary()["artifacts"]["trace_buckets"] == str(copy)
    layout = read_manifest(copy)
    assert layout.buckets == 4 and layout.events == result.events
    code, bucketed = _check_json(copy, capsys)
    assert code == 0 and bucketed["counts"] == dict(result.verdict.counts)


def test_keyshared_soak_takes_the_layout_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["soak", "--target", "model", "--messages", "200", "--rate", "1000", "--out", str(tmp_path / "s")]
    assert main([*args, "--trace-layout", "bucketed", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert read_manifest(Path(summary["artifacts"]["trace_buckets"])).buckets == DEFAULT_BUCKETS


def test_a_failover_runs_trace_is_kept_flat_with_a_note(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A failover run's replication check reads fields the layout does not store: no copy, the run says why (and
    ``keyshared convert`` refuses it in one line, exit 2)."""
    scenario = ROOT / "conformance" / "cases" / "scenarios" / "replication" / "ack-holes.toml"
    out = tmp_path / "fo"
    args = ["run", str(scenario), "--target", "model", "--out", str(out), "--json", "--trace-layout", "bucketed"]
    assert main(args) == 0
    result = json.loads(capsys.readouterr().out)
    assert "trace_buckets" not in result["artifacts"] and not (out / "trace-buckets").exists()
    assert any(n.startswith("no bucketed copy of the trace: TraceFormatError:") for n in result["notes"])
    assert main(["convert", str(out / "trace.jsonl"), str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is a failover run's trace" in err[0]
