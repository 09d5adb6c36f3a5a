"""``keyshared`` as a user types it: from a fresh working directory, with relative paths, against pulsar-lite.

The other tests hand every command absolute temporary paths; users type relative ones.  pulsar-lite runs in
its own data directory, so a relative config path once named a file that was not there (issue 13).  These
run the installed ``keyshared`` script in a subprocess, as a shell would.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from interrupt import sigint_as_at_a_terminal

from pytest_keyshared.targets.pulsar_lite import find_binary

pytestmark = pytest.mark.broker

_BOUND_S = 120


def keyshared_argv() -> list[str]:
    """The ``keyshared`` console script of this interpreter's environment (else ``python -m``)."""
    script = Path(sys.executable).parent / "keyshared"
    if script.is_file():
        return [str(script)]
    found = shutil.which("keyshared")
    return [found] if found else [sys.executable, "-m", "pytest_keyshared.cli"]


def keyshared(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*keyshared_argv(), *args], cwd=cwd, capture_output=True, text=True, timeout=_BOUND_S, check=False
    )


def test_readme_run_with_a_relative_out(tmp_path: Path) -> None:
    done = keyshared(tmp_path, "run", "--scenario", "join-while-pending", "--out", "run1")
    assert done.returncode == 1, done.stderr  # pulsar-lite has no draining hashes: violations, not a failure
    assert "Traceback" not in done.stderr
    assert (tmp_path / "run1" / "trace.jsonl").is_file()
    assert (tmp_path / "run1" / "target" / "pulsar-lite.toml").is_file()
    assert "  artifacts: run1 (trace.jsonl" in done.stdout


def test_run_without_out_writes_under_keyshared_runs(tmp_path: Path) -> None:
    done = keyshared(tmp_path, "run", "--scenario", "sticky-ranges", "-q")
    assert done.returncode == 0, done.stderr
    (run_dir,) = (tmp_path / "keyshared-runs").iterdir()
    assert run_dir.name.startswith("sticky-ranges-seed0-")
    assert (run_dir / "trace.jsonl").is_file() and (run_dir / "verdict.json").is_file()


def test_replay_with_relative_out_and_binary(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    os.symlink(find_binary(), tmp_path / "bin" / "pulsar-lite")
    done = keyshared(
        tmp_path, "replay", "join-while-pending", "--target", "pulsar-lite", "--runs", "2",
        "-o", "binary=bin/pulsar-lite", "--out", "replays/jwp", "--json",
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    tally = json.loads(done.stdout)
    assert tally["runs"] == 2 and tally["seeds"] == [0, 1]
    assert sorted(p.name for p in (tmp_path / "replays" / "jwp").glob("run-*")) == ["run-001", "run-002"]


INTERRUPTIBLE = """\
name = "long-wait"
description = "One consumer, a few messages, then a long sleep: something to interrupt."

[[steps]]
do = "open"
consumer = "c1"

[[steps]]
do = "publish"
count = 10
keys = 2

[[steps]]
do = "sleep"
ms = 60000
"""


def test_ctrl_c_exits_130_with_a_complete_trace_and_stops_the_broker(tmp_path: Path) -> None:
    (tmp_path / "long.toml").write_text(INTERRUPTIBLE)
    proc = subprocess.Popen(
        [*keyshared_argv(), "run", "long.toml", "--out", "cut"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=sigint_as_at_a_terminal,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # printed once the broker is up
        assert first.startswith("keyshared run: scenario 'long-wait' on pulsar-lite"), first
        broker_pid = int(first.split("(pid ", 1)[1].split(",", 1)[0])
        trace = tmp_path / "cut" / "trace.jsonl"
        deadline = time.monotonic() + 30
        while b'"op":"receive"' not in (trace.read_bytes() if trace.exists() else b""):
            assert time.monotonic() < deadline, "no receive recorded within 30s"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=_BOUND_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == "keyshared run: interrupted; what was recorded is in cut"
    last = json.loads(trace.read_text().splitlines()[-1])
    assert last["op"] == "end" and last.get("interrupted") is True
    with pytest.raises(ProcessLookupError):
        os.kill(broker_pid, 0)


# --- issue 28: what the line after a failure points at, and the one summary ------------------------------------


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _failure_line(done: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in done.stderr and "Exception" not in done.stderr
    (line,) = done.stderr.splitlines()
    assert len(line) < 300
    return line


@pytest.mark.parametrize("command", ["run", "replay", "soak"])
def test_an_unreachable_target_points_at_nothing_unwritten(tmp_path: Path, command: str) -> None:
    """``--out url1`` against a dead URL: nothing was written, so ``url1`` is neither made nor named; without
    ``--out`` no empty ``keyshared-runs/...`` directory is left and named (issue 28, item 4)."""
    url = f"pulsar://127.0.0.1:{_closed_port()}"
    extra = ["--duration", "2s"] if command == "soak" else []
    done = keyshared(tmp_path, command, "--target", url, "--out", "url1", *extra)
    assert done.returncode == 3
    line = _failure_line(done)
    assert url in line and "url1" not in line
    assert not (tmp_path / "url1").exists()
    if command != "soak":
        done = keyshared(tmp_path, command, "--target", url)
        assert done.returncode == 3
        assert "keyshared-runs" not in _failure_line(done)
        assert not any((tmp_path / "keyshared-runs").glob("*"))


def test_a_broker_that_fails_to_start_points_at_its_log(tmp_path: Path) -> None:
    """Where something was written (pulsar-lite's log of a start that did not finish in time), the line names it."""
    done = keyshared(tmp_path, "run", "-o", "startup_timeout_s=0.01", "--out", "pl0")
    assert done.returncode == 3
    line = _failure_line(done)
    assert line.endswith("(see pl0)") and (tmp_path / "pl0" / "target" / "pulsar-lite.log").is_file()


def test_run_replay_soak_and_check_cut_violations_in_the_same_words(tmp_path: Path) -> None:
    """pulsar-lite's steady-state run breaks the assignment contract many times over: ``run`` used to end with
    "... 7 more lines in .../verdict.json", hiding how many it cut; every command now says it in ``check``'s words
    (issue 28, item 5)."""
    import re

    run = keyshared(tmp_path, "run", "--out", "run1", "-q")
    assert run.returncode == 1, run.stderr
    cut = re.compile(r"\.\.\. and (\d+) more (\w+) \(violation\); (\S+) lists them all$")
    run_cuts = {m.group(2): (int(m.group(1)), m.group(3)) for m in map(cut.search, run.stdout.splitlines()) if m}
    assert run_cuts and {where for _, where in run_cuts.values()} == {"run1/verdict.json"}
    verdict = json.loads((tmp_path / "run1" / "verdict.json").read_text())
    for kind, (more, _) in run_cuts.items():  # the count cut: all of that kind but the 3 shown
        assert more == verdict["counts"][kind] - 3
    check = keyshared(tmp_path, "check", "run1/trace.jsonl", "--max-examples", "3")
    check_cuts = {m.group(2): int(m.group(1)) for m in map(cut.search, check.stdout.splitlines()) if m}
    assert check_cuts == {kind: more for kind, (more, _) in run_cuts.items()}
    replay = keyshared(tmp_path, "replay", "--runs", "1", "--out", "rp1")
    assert replay.returncode == 1, replay.stderr
    replay_cuts = {m.group(2): m.group(3) for m in map(cut.search, replay.stdout.splitlines()) if m}
    assert set(replay_cuts) == set(run_cuts) and set(replay_cuts.values()) == {"rp1/run-001/verdict.json"}
    soak = keyshared(tmp_path, "soak", "--messages", "400", "--out", "sk1")
    assert soak.returncode == 1, soak.stderr[-3000:]
    soak_cuts = {m.group(2): m.group(3) for m in map(cut.search, soak.stdout.splitlines()) if m}
    assert "misassigned" in soak_cuts and all(where.endswith("sk1/verdict.json") for where in soak_cuts.values())
