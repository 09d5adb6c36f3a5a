"""``keyshared run`` from outside: exit codes, one-line errors, the summary and the artifacts.

These use the model target (fast, deterministic); ``tests/broker/test_run_command.py`` runs it on pulsar-lite.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_keyshared.cli import main
from pytest_keyshared.commands.run import parse_option


def test_join_while_pending_on_the_pip379_model_is_valid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "--target", "model", "--scenario", "join-while-pending", "--seed", "3", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "scenario 'join-while-pending' on reference model (Pulsar 4.0, pip379), seed 3" in out
    assert "verdict: VALID" in out
    assert "acknowledged 200 of 200; drained (quiet)" in out
    for name in ("trace.jsonl", "verdict.json", "scenario.toml"):
        assert (tmp_path / name).exists(), name


def test_json_output_is_one_object(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "-t", "model", "-s", "steady-state", "--json", "-d", str(tmp_path)])
    result = json.loads(capsys.readouterr().out)
    assert code == result["exit_code"] == 0
    assert result["scenario"] == "steady-state" and result["valid"] is True and result["drained"] is True
    assert Path(result["artifacts"]["trace"]) == tmp_path / "trace.jsonl"


def test_a_scenario_file_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = tmp_path / "mine.toml"
    scenario.write_text('[[steps]]\ndo = "open"\nconsumer = "a"\n\n[[steps]]\ndo = "publish"\ncount = 5\n')
    assert main(["run", "-t", "model", "-s", str(scenario), "-d", str(tmp_path / "out"), "-q"]) == 0
    assert "scenario 'mine'" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "-t", "modle"], "Did you mean 'model'?"),
        (["run", "-t", "model", "-s", "steady-stat"], "Did you mean 'steady-state'?"),
        (["run", "-t", "model", "-o", "novalue"], "Expected --option KEY=VALUE"),
        (["run", "-t", "model", "-o", "colour=1"], "Unknown option 'colour' for target 'model'"),
        (["run", "-t", "pulsar://127.0.0.1:1", "-s", "crash-while-pending"], None),
    ],
)
def test_bad_input_is_one_line_and_exit_code_2_or_3(
    argv: list[str], message: str | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main([*argv, "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    if message is None:  # nothing listens on port 1: a target failure
        assert code == 3 and "No broker answers at pulsar://127.0.0.1:1" in err
    else:
        assert code == 2 and message in err


def test_a_negative_seed_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["run", "--seed", "-4"])
    assert info.value.code == 2
    assert "expected a seed between 0 and 4294967295 but got -4" in capsys.readouterr().err


def test_list_names_every_builtin(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--list"]) == 0
    names = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert {"steady-state", "join-while-pending", "dedup-retry", "stuck-consumer"} <= set(names)


def test_options_parse_as_json_when_they_can() -> None:
    assert parse_option("startup_timeout_s=2.5") == ("startup_timeout_s", 2.5)
    assert parse_option("binary=/opt/pulsar-lite") == ("binary", "/opt/pulsar-lite")
    assert parse_option('broker_conf={"keySharedUnblockingIntervalMs": 0}') == (
        "broker_conf",
        {"keySharedUnblockingIntervalMs": 0},
    )
