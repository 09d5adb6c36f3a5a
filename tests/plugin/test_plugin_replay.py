"""``keyshared replay``: a scenario N times against one target, violation kinds tallied per run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_keyshared.cli import main

#: join-while-pending on a subscription that allows out-of-order delivery: the broker drains nothing, so
#: judged by the 4.0 contract (--profile pip379) every run shows key overlaps.
NO_ORDERING = """
name = "join-without-ordering"

[subscription]
allow_out_of_order_delivery = true

[[steps]]
do = "open"
consumer = "c1"
behaviour = "hold"

[[steps]]
do = "publish"
count = 20
keys = 5

[[steps]]
do = "open"
consumer = "c2"

[[steps]]
do = "publish"
count = 20
keys = 5

[[steps]]
do = "wait_quiet"
"""


def test_replay_tallies_kinds_per_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = tmp_path / "join.toml"
    scenario.write_text(NO_ORDERING)
    code = main(
        ["replay", str(scenario), "--target", "model", "--runs", "3", "--profile", "pip379",
         "--out", str(tmp_path / "out"), "--json"]
    )  # fmt: skip
    assert code == 1
    captured = capsys.readouterr()
    tally = json.loads(captured.out)
    assert tally["runs"] == 3 and tally["invalid_runs"] == 3
    assert tally["kinds"]["key_overlap"]["runs"] == 3 and tally["kinds"]["key_overlap"]["share"] == 1.0
    assert tally["seeds"] == [0, 1, 2]  # the default seed is 0, as for keyshared run
    assert len(list((tmp_path / "out").glob("run-*/trace.jsonl"))) == 3
    assert "run 3/3 seed=2: INVALID (key_overlap" in captured.err


def test_replay_of_a_valid_scenario_exits_0_and_prints_a_table(tmp_path: Path, capsys) -> None:
    code = main(["replay", "steady-state", "--target", "model", "--runs", "2", "--same-seed", "--out", str(tmp_path)])
    assert code == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "replay steady-state on model: 2 run(s), 0 with violations (0%)"
    assert out[1] == "no violation in any run"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["replay", "nosuch", "--target", "model"], "InvalidScenario: Unknown scenario 'nosuch'"),
        (["replay", "steady-state", "--target", "modle"], "InvalidArgument: Unknown target 'modle'"),
        (["replay", "steady-state", "--target", "model", "--profile", "pip37"], "Did you mean 'pip379'?"),
        (["replay", "steady-state", "--runs", "0"], "expected a number of runs between 1 and 10000 but got 0"),
        (["replay", "steady-state", "--seed", "x"], "expected a seed between 0 and 4294967295 but got 'x'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, message, tmp_path: Path, capsys) -> None:
    try:
        code = main([*argv, "--out", str(tmp_path)])
    except SystemExit as exc:  # argparse usage errors exit through the parser (cli.ArgumentParser.error)
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
