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
