"""``keyshared soak``: bad input is one line and exit 2 before anything starts; a model soak end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_keyshared.cli import main


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--faults", "restart,explode"], "Unknown fault 'explode'"),
        (["--rate", "0"], "--rate > 0"),
        (["--rate", "-3"], "--rate > 0"),
        (["--duration", "ten"], "Expected a duration such as 90s"),
        (["--target", "model", "--faults", "partition"], "no network connections to fault"),
        (["--target", "pulsar://127.0.0.1:1", "--faults", "restart"], "cannot take the fault 'restart'"),
        (["--key-distribution", "pareto"], "uniform or zipf:S"),
        (["--behaviours", "ack,sulk"], "Unknown behaviour 'sulk'"),
        (["--target", "modle"], "Unknown target 'modle'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["soak", "--out", str(tmp_path / "out"), *argv])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out" / "trace").exists()  # nothing started


def test_argparse_errors_exit_2() -> None:
    with pytest.raises(SystemExit) as exc:
        main(["soak", "--duration", "1m", "--messages", "5"])
    assert exc.value.code == 2


def test_model_soak_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["soak", "--target", "model", "--messages", "600", "--rate", "600", "--churn", "120", "--faults", "restart",
         "--seed", "4", "--out", str(tmp_path), "--json"]
    )  # fmt: skip
    out = capsys.readouterr().out
    summary = json.loads(out)
    assert code == 0 and summary["valid"] is True and summary["exit_code"] == 0
    assert summary["published_ok"] == 600 and summary["faults"].get("restart", 0) >= 1
    assert summary["throughput"] and {"t", "produced", "consumed"} <= set(summary["throughput"][0])
    assert Path(summary["artifacts"]["trace"], "part-000000.parquet").exists()
    assert json.loads((tmp_path / "summary.json").read_text())["events"] == summary["events"]
    assert summary["artifacts"]["report"] == str(tmp_path / "report.html") and summary["stall"] is None


def test_model_soak_plain_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["soak", "--target", "model", "--duration", "2s", "--seed", "1", "--out", str(tmp_path)])
    captured = capsys.readouterr()
    assert code == 0
    assert "keyshared soak: reference model" in captured.out and "verdict: VALID" in captured.out
    assert "[done]" in captured.err  # progress lines, plain (not a terminal)
    # the report page, named in the final lines
    assert f"  report: {tmp_path / 'report.html'}" in captured.out.splitlines()
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "keyshared soak: model" in page and "VALID" in page


def test_ctrl_c_completes_the_trace_and_exits_130(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    from interrupt import sigint_as_at_a_terminal

    from conformance.trace.chunks import read_chunks

    out = tmp_path / "soak"
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest_keyshared.cli", "soak", "--target", "model", "--duration", "1h",
         "--churn", "60", "--out", str(out), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=sigint_as_at_a_terminal,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not list((out / "trace").glob("part-*.parquet")) and time.monotonic() < deadline:
            time.sleep(0.2)  # a first chunk (20,000 events) means the load is well under way
        proc.send_signal(signal.SIGINT)
        stdout, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130
    summary = json.loads(stdout)
    # not drained, so undelivered is not judged: unknown, with nothing else found (the model keeps the contract)
    assert summary["interrupted"] is True and summary["validity"] == "unknown" and not any(summary["counts"].values())
    events = list(read_chunks(out / "trace")[1])
    assert events[-1].op.value == "end" and events[-1].extra.get("interrupted") is True
    assert (out / "verdict.json").exists()
