"""``keyshared run`` on the default target, the embedded pulsar-lite broker."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_keyshared.cli import main

pytestmark = pytest.mark.broker


def _lite_processes_for(path: Path) -> list[int]:
    pids = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmdline = fh.read()
        except OSError:
            continue
        if b"pulsar-lite" in cmdline and str(path).encode() in cmdline:
            pids.append(int(entry))
    return pids


def test_join_while_pending_on_pulsar_lite_exits_1_with_key_overlap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--scenario", "join-while-pending", "--seed", "5", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "on pulsar-lite at pulsar://127.0.0.1:" in out
    assert "verdict: INVALID" in out and "key_overlap" in out
    assert "[violation] key_overlap" in out  # the explanation is printed, not only counted
    verdict = json.loads((tmp_path / "verdict.json").read_text())
    assert verdict["counts"]["key_overlap"] > 0
    for name in ("trace.jsonl", "scenario.toml", "broker.log", "target/pulsar-lite.log"):
        assert (tmp_path / name).stat().st_size > 0, name
    assert (tmp_path / "pulsar-client.log").exists()  # the C++ client may flush it only at exit
    assert _lite_processes_for(tmp_path) == []  # the broker was stopped


def test_sticky_ranges_on_pulsar_lite_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kinds_in_verdict_file: Callable[[Path, Path], set[str]]
) -> None:
    code = main(["run", "-s", "sticky-ranges", "--json", "-d", str(tmp_path)])
    result = json.loads(capsys.readouterr().out)
    assert result["acknowledged"] == result["expected"] == 200
    if code == 1:  # only pulsar-lite's known spurious duplicate may spoil the run (conftest)
        assert kinds_in_verdict_file(tmp_path / "verdict.json", tmp_path / "trace.jsonl") == set()
        assert result["valid"] is False
    else:
        assert code == 0 and result["valid"] is True
