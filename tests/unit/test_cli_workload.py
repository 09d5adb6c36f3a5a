"""``run`` and ``replay`` take a workload the same way (``commands/_workload.py``), and never share a directory."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from pytest_keyshared.cli import build_parser, main
from pytest_keyshared.commands._workload import SEED_MAX, claim_out_dir

SHARED = ("scenario_arg", "scenario_opt", "seed", "target", "option", "out", "profile")


def _subparser(name: str) -> argparse.ArgumentParser:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[name]  # type: ignore[no-any-return]


def _options(name: str) -> dict[str, tuple[object, ...]]:
    return {
        a.dest: (tuple(a.option_strings), a.default, a.type, a.nargs, a.metavar)
        for a in _subparser(name)._actions
        if a.dest in SHARED
    }


def test_run_and_replay_take_the_same_workload_options() -> None:
    run, replay = _options("run"), _options("replay")
    assert set(run) == set(SHARED)
    assert run == replay


@pytest.mark.parametrize("command", ["run", "replay"])
@pytest.mark.parametrize(
    ("seed", "ok"), [("0", True), (str(SEED_MAX), True), ("-1", False), (str(SEED_MAX + 1), False)]
)
def test_seed_bounds_are_the_same(command: str, seed: str, ok: bool, capsys: pytest.CaptureFixture[str]) -> None:
    parser = _subparser(command)
    if ok:
        assert parser.parse_args(["--seed", seed]).seed == int(seed)
    else:
        with pytest.raises(SystemExit) as info:
            parser.parse_args(["--seed", seed])
        assert info.value.code == 2
        assert f"expected a seed between 0 and {SEED_MAX}" in capsys.readouterr().err


def test_the_defaults_agree() -> None:
    for command in ("run", "replay"):
        args = _subparser(command).parse_args([])
        assert (args.scenario_arg, args.scenario_opt, args.seed, args.target) == (None, None, 0, "pulsar-lite")


def test_positional_and_option_name_the_same_scenario(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["run", "leave-while-pending", "--target", "model", "--out", "a", "-q"]) == 0
    assert main(["run", "--scenario", "leave-while-pending", "--target", "model", "--out", "b", "-q"]) == 0
    assert (tmp_path / "a" / "trace.jsonl").read_bytes() == (tmp_path / "b" / "trace.jsonl").read_bytes()


def test_runs_started_in_the_same_second_get_directories_of_their_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("time.strftime", lambda fmt: "20260101-000000")
    for _ in range(2):
        assert main(["run", "steady-state", "--target", "model", "--json"]) == 0
    assert main(["replay", "steady-state", "--target", "model", "--runs", "1", "--json"]) == 0
    names = sorted(p.name for p in (tmp_path / "keyshared-runs").iterdir())
    assert names == [
        "steady-state-replay-seed0-20260101-000000",
        "steady-state-seed0-20260101-000000",
        "steady-state-seed0-20260101-000000-2",
    ]
    for name in names:
        assert list((tmp_path / "keyshared-runs" / name).rglob("trace.jsonl"))
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines[0]["artifacts"]["trace"] != lines[1]["artifacts"]["trace"]
    assert lines[0]["exit_code"] == 0


def test_a_given_out_is_used_as_is(tmp_path: Path) -> None:
    assert claim_out_dir(tmp_path / "mine", "x") == tmp_path / "mine"


NOT_DRAINED = """\
name = "no-drain"
description = "Publishes and stops: the run is not drained, so lost messages cannot be judged."

[settings]
drain = false

[[steps]]
do = "open"
consumer = "c1"

[[steps]]
do = "publish"
count = 5
keys = 2
"""


@pytest.mark.parametrize("command", ["run", "replay"])
def test_a_run_that_cannot_be_fully_judged_is_unknown_not_valid(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("no-drain.toml").write_text(NOT_DRAINED)
    extra = ["--runs", "2"] if command == "replay" else []
    assert main([command, "no-drain.toml", "--target", "model", "--out", "out", *extra]) == 4
    captured = capsys.readouterr()
    if command == "run":
        assert "  verdict: UNKNOWN (no violation found, but not every contract could be judged)" in captured.out
        assert "verdict: VALID" not in captured.out
    else:
        assert "run 2/2 seed=1: unknown" in captured.err
