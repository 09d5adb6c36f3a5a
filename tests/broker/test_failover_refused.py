"""pulsar-lite is one broker without geo-replication: it refuses a failover scenario in one line, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_keyshared.cli import main

SWITCH = str(
    Path(__file__).parents[2] / "conformance" / "cases" / "scenarios" / "replication" / "switch-to-standby.toml"
)


def test_pulsar_lite_refuses_a_failover_scenario_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--scenario", SWITCH, "--target", "pulsar-lite", "--out", str(tmp_path / "a"), "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "needs replication" in err and "pulsar-lite" in err
