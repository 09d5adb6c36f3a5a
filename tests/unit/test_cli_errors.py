"""The one error and exit-code policy of every ``keyshared`` subcommand (``commands/_errors.py``).

Each subcommand is fed bad arguments, bad files and a dead target; each must answer with exactly one line on
stderr (no traceback) and the agreed code: 2 bad input, 3 target failure, 4 verdict unknown.
"""

from __future__ import annotations

import argparse
import gzip
import json
import socket
from pathlib import Path
from typing import Any

import pytest

from conformance.trace.builder import TraceBuilder
from conformance.trace.parquet import convert_to_parquet
from pytest_keyshared.cli import COMMANDS, main
from pytest_keyshared.commands._errors import (
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    EXIT_TARGET,
    EXIT_UNKNOWN,
    EXIT_VALID,
    EXIT_VIOLATIONS,
    invoke,
    look_at,
    policy,
    verdict_exit,
)
from pytest_keyshared.targets import TargetError
from reference_model.errors import InvalidArgument


def _call(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse usage errors leave through the parser (cli.ArgumentParser.error)
        return int(exc.code or 0)


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    return lines[0]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- the policy itself -------------------------------------------------------------------------------------


def _raiser(exc: BaseException) -> Any:
    def handler(args: argparse.Namespace) -> int:
        look_at(args.where)
        Path(args.where).mkdir(parents=True, exist_ok=True)
        (Path(args.where) / "trace.jsonl").touch()  # what was recorded before the failure: the line names it
        raise exc

    return handler


@pytest.mark.parametrize(
    ("exc", "code", "fragment"),
    [
        (InvalidArgument("Unknown thing 'x'.\nChoices: a, b."), EXIT_BAD_INPUT, "InvalidArgument: Unknown thing 'x'."),
        (TargetError("the broker died"), EXIT_TARGET, "TargetError: the broker died (see "),
        (ConnectionRefusedError(111, "Connection refused"), EXIT_TARGET, "target failure: ConnectionRefusedError"),
        (TimeoutError("no answer"), EXIT_TARGET, "target failure: TimeoutError: no answer"),
        (FileNotFoundError(2, "No such file or directory", "x.toml"), EXIT_BAD_INPUT, "FileNotFoundError"),
    ],
)
def test_each_failure_is_one_line_and_its_code(
    exc: BaseException, code: int, fragment: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert invoke("demo", _raiser(exc), argparse.Namespace(where=tmp_path)) == code
    line = _one_line(capsys)
    assert line.startswith("keyshared demo: ") and fragment in line


def test_a_pulsar_client_error_is_a_target_failure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import pulsar

    assert invoke("demo", _raiser(pulsar.ConnectError("refused")), argparse.Namespace(where=tmp_path)) == EXIT_TARGET
    line = _one_line(capsys)
    assert "target failure: pulsar client: ConnectError" in line and str(tmp_path) in line


def test_an_unexpected_error_names_the_traceback_file_and_the_artifacts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = invoke("demo", _raiser(ZeroDivisionError("boom")), argparse.Namespace(where=tmp_path))
    assert code == EXIT_TARGET
    line = _one_line(capsys)
    saved = tmp_path / "keyshared-demo-error.txt"
    assert f"unexpected error (a bug in keyshared): ZeroDivisionError: boom; traceback in {saved}" in line
    assert f"(see {tmp_path})" in line
    assert "Traceback (most recent call last)" in saved.read_text() and "ZeroDivisionError: boom" in saved.read_text()


def test_an_unexpected_error_without_artifacts_keeps_its_traceback_in_a_temporary_file(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def handler(args: argparse.Namespace) -> int:
        raise KeyError("k")

    assert invoke("demo", handler, argparse.Namespace()) == EXIT_TARGET
    line = _one_line(capsys)
    saved = Path(line.split("traceback in ", 1)[1])
    try:
        assert "KeyError" in saved.read_text()
    finally:
        saved.unlink()


def test_ctrl_c_exits_130_naming_what_was_kept(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert invoke("demo", _raiser(KeyboardInterrupt()), argparse.Namespace(where=tmp_path)) == EXIT_INTERRUPTED
    assert _one_line(capsys) == f"keyshared demo: interrupted; what was recorded is in {tmp_path}"


def test_the_decorator_applies_the_same_policy(capsys: pytest.CaptureFixture[str]) -> None:
    @policy("demo")
    def handler(args: argparse.Namespace) -> int:
        raise InvalidArgument("bad")

    assert handler(argparse.Namespace()) == EXIT_BAD_INPUT
    assert _one_line(capsys) == "keyshared demo: InvalidArgument: bad"


def test_a_failure_names_only_places_holding_something(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Issue 28 item 4: a directory never made, or left empty, is not named (nothing there to look at)."""

    def handler(args: argparse.Namespace) -> int:
        look_at(tmp_path / "never-made")
        look_at(tmp_path)  # exists, empty
        raise TargetError("no broker answers")

    assert invoke("demo", handler, argparse.Namespace()) == EXIT_TARGET
    assert _one_line(capsys) == "keyshared demo: TargetError: no broker answers"


def test_look_at_is_forgotten_between_commands(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    invoke("demo", _raiser(TargetError("x")), argparse.Namespace(where=tmp_path))
    capsys.readouterr()
    assert invoke("demo", _raiser(KeyboardInterrupt()), argparse.Namespace(where=tmp_path / "b")) == 130
    assert str(tmp_path / "b") in _one_line(capsys) and f"{tmp_path}," not in capsys.readouterr().err


class _V:
    def __init__(self, validity: str, valid: bool) -> None:
        self.validity, self.valid = validity, valid


@pytest.mark.parametrize(
    ("verdict", "code"),
    [
        (_V("valid", True), EXIT_VALID),
        (_V("invalid", False), EXIT_VIOLATIONS),
        (_V("unknown", True), EXIT_UNKNOWN),
        (_V("unknown", False), EXIT_UNKNOWN),  # a profile counting unknown as invalid: still not judged
        (None, EXIT_UNKNOWN),
    ],
)
def test_verdict_exit(verdict: Any, code: int) -> None:
    assert verdict_exit(verdict) == code


# --- every subcommand, from outside -------------------------------------------------------------------------


def _files(tmp: Path) -> dict[str, Path]:
    b = TraceBuilder()
    b.open("c1")
    b.publish("k", "1:0")
    b.receive("c1", "k", "1:0")
    b.ack("c1", "1:0")
    b.end()
    full = b.write(tmp / "full.jsonl")
    (tmp / "empty.jsonl").write_text("")
    (tmp / "blank.jsonl").write_text("\n  \n\n")
    header = tmp / "header.jsonl"
    header.write_text(full.read_text().splitlines()[0] + "\n")
    with gzip.open(tmp / "header.jsonl.gz", "wt") as fh:
        fh.write(header.read_text())
    convert_to_parquet(header, tmp / "header.parquet")
    convert_to_parquet(full, tmp / "full.parquet")
    data = (tmp / "full.parquet").read_bytes()
    (tmp / "corrupt.parquet").write_bytes(data[: len(data) // 2] + data[-8:])
    (tmp / "bad.toml").write_text("[[steps]\ndo = 'publish'\n")
    return {p.name: p for p in tmp.iterdir()}


BAD_INPUT = [
    ["run", "--seed", "-1"],
    ["run", "--seed", "4294967296"],
    ["run", "--target", "modle"],
    ["run", "nosuch-scenario", "--target", "model"],
    ["run", "{bad.toml}", "--target", "model"],
    ["run", "{missing}.toml", "--target", "model"],
    ["run", "steady-state", "--scenario", "join-while-pending", "--target", "model"],
    ["run", "--target", "model", "-o", "no-equals-sign"],
    ["run", "--target", "model", "-o", "nope=1"],
    ["run", "--target", "model", "--profile", "pip37"],
    ["replay", "--runs", "0"],
    ["replay", "--seed", "x"],
    ["replay", "nosuch-scenario", "--target", "model"],
    ["replay", "{bad.toml}", "--target", "model"],
    ["replay", "--target", "model", "-o", "nope=1"],
    ["replay", "--target", "model", "--profile", "pip37"],
    ["check"],
    ["check", "{missing}.jsonl"],
    ["check", "{dir}"],
    ["check", "{empty.jsonl}"],
    ["check", "{blank.jsonl}"],
    ["check", "{empty.jsonl}", "--engine", "spark"],
    ["check", "{blank.jsonl}", "--engine", "spark"],
    ["check", "{corrupt.parquet}"],
    ["check", "{full.jsonl}", "--profile", "nope"],
    ["check", "{full.jsonl}", "--engine", "duckdb"],
    ["convert"],
    ["convert", "{missing}.jsonl", "{dir}/out"],
    ["convert", "{full.jsonl}", "{dir}/out", "--buckets", "0"],
    ["convert", "{corrupt.parquet}", "{dir}/out"],
    ["convert", "{full.jsonl}", "{dir}"],  # not an empty directory
    ["ranges"],
    ["ranges", "--pulsar-version", "9.9", "c1"],
    ["ranges", "--points", "99999999", "c1"],  # once took minutes to build the ring
    ["ranges", "--selector", "sticky", "c1=0-99", "c2=50-150"],
    ["select", "--consumers", "c1"],
    ["select", "--consumers", "c1", "--points", "x", "k"],
    ["soak", "--target", "model", "--faults", "restart,flood"],
    ["soak", "--target", "model", "--rate", "0"],
    ["soak", "--target", "model", "--duration", "ten minutes"],
    ["soak", "--target", "model", "--faults", "cut"],  # the model has no connections to cut
    ["soak", "--target", "model", "--key-distribution", "zipf:x"],
    ["soak", "--target", "modle"],
    ["report"],
    ["report", "{missing}.jsonl"],
    ["report", "{empty.jsonl}"],
    ["report", "{corrupt.parquet}"],
    ["report", "{full.jsonl}", "--verdict", "{missing}.json"],
    ["nosuch-command"],
]


def _fill(argv: list[str], files: dict[str, Path], tmp: Path) -> list[str]:
    out = []
    for arg in argv:
        if arg.startswith("{"):
            name, _, rest = arg[1:].partition("}")
            path = {"missing": tmp / "missing", "dir": tmp}.get(name) or files[name]
            arg = f"{path}{rest}"
        out.append(arg)
    return out


@pytest.mark.parametrize("argv", BAD_INPUT, ids=" ".join)
def test_bad_input_is_one_line_and_exit_2(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    files = _files(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert _call(_fill(argv, files, tmp_path)) == EXIT_BAD_INPUT
    line = _one_line(capsys)
    assert line.startswith("keyshared")


def test_every_subcommand_is_covered() -> None:
    covered = {argv[0] for argv in BAD_INPUT}
    assert set(COMMANDS) <= covered


@pytest.mark.parametrize("command", ["run", "replay"])
def test_a_dead_target_is_one_line_and_exit_3(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    url = f"pulsar://127.0.0.1:{_closed_port()}"
    argv = [command, "steady-state", "--target", url, "-o", "connect_timeout_s=1"]
    assert _call(argv + (["--runs", "1"] if command == "replay" else ["-q"])) == EXIT_TARGET
    line = _one_line(capsys)
    assert line.startswith(f"keyshared {command}: TargetError: No broker answers at {url}")


@pytest.mark.parametrize("name", ["header.jsonl", "header.jsonl.gz", "header.parquet"])
@pytest.mark.parametrize("engine", ["python", "spark"])
def test_a_header_without_events_is_unknown_not_valid(
    name: str, engine: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = _files(tmp_path)
    assert main(["check", str(files[name]), "--engine", engine, "--json"]) == EXIT_UNKNOWN
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["validity"] == "unknown" and verdict["events"] == 0
    assert "nothing to judge: the trace has a header and no events" in verdict["notes"]


def test_a_header_without_events_reads_unknown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = _files(tmp_path)
    assert main(["check", str(files["header.jsonl"])]) == EXIT_UNKNOWN
    out = capsys.readouterr().out
    assert out.startswith("UNKNOWN") and "VALID" not in out.replace("UNKNOWN", "")


def test_the_same_events_with_a_trace_still_judge_valid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = _files(tmp_path)
    assert main(["check", str(files["full.jsonl"])]) == EXIT_VALID
    assert main(["check", str(files["full.parquet"])]) == EXIT_VALID


def test_empty_files_name_the_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = _files(tmp_path)
    assert main(["check", str(files["empty.jsonl"])]) == EXIT_BAD_INPUT
    assert "is empty (0 bytes): no header and no events" in _one_line(capsys)
    assert main(["check", str(files["blank.jsonl"])]) == EXIT_BAD_INPUT
    assert "holds only blank lines: no header and no events" in _one_line(capsys)


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert _call(["--version"]) == 0
    assert capsys.readouterr().out.startswith("keyshared (pytest-keyshared) ")


# --- issue 28: the words of a few answers -----------------------------------------------------------------------


def _good_trace(path: Path) -> Path:
    b = TraceBuilder()
    b.open("c1")
    for i in range(3):
        b.publish("k", f"1:{i}")
        b.receive("c1", "k", f"1:{i}")
        b.ack("c1", f"1:{i}")
    b.end()
    return b.write(path)


def test_invalid_json_names_the_column_on_its_own_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A line cut short after ``"op":`` lacks a value at the end of that line; ``json`` would say "column 1" (of
    the line after), as the issue saw (``badjson.jsonl:301: ... at column 1`` for an error at column 41)."""
    lines = _good_trace(tmp_path / "good.jsonl").read_text().splitlines()
    cut = lines[4][: lines[4].index('"op":') + len('"op":')]
    (tmp_path / "badjson.jsonl").write_text("\n".join([*lines[:4], cut, *lines[5:]]) + "\n")
    assert _call(["check", str(tmp_path / "badjson.jsonl")]) == EXIT_BAD_INPUT
    line = _one_line(capsys)
    assert line.endswith(
        f"badjson.jsonl:5: not valid JSON (Expecting value at column {len(cut) + 1}, the end of the line)"
    )
    # a problem inside the line: its column, and "Invalid control character at" not doubled into "at at"
    broken = lines[4].replace('"op":"', '"op":"\t', 1)
    (tmp_path / "tab.jsonl").write_text("\n".join([*lines[:4], broken, *lines[5:]]) + "\n")
    assert _call(["check", str(tmp_path / "tab.jsonl")]) == EXIT_BAD_INPUT
    column = broken.index("\t") + 1
    assert _one_line(capsys).endswith(f"tab.jsonl:5: not valid JSON (Invalid control character at column {column})")


def test_a_run_directory_given_to_check_gets_the_trace_it_holds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.support.chunk_traces import scoped_fault, write_chunks

    run1 = tmp_path / "run1"
    run1.mkdir()
    _good_trace(run1 / "trace.jsonl")
    assert _call(["check", str(run1)]) == EXIT_BAD_INPUT
    assert _one_line(capsys).endswith(
        f"{run1}: is a directory without Parquet chunks (*.parquet); did you mean {run1 / 'trace.jsonl'}?"
    )
    soak1 = tmp_path / "soak1"
    write_chunks(scoped_fault(["c1"]), soak1 / "trace", rows=4)
    assert _call(["check", str(soak1)]) == EXIT_BAD_INPUT
    assert _one_line(capsys).endswith(f"did you mean {soak1 / 'trace'}?")
    assert _call(["check", str(soak1 / "trace")]) in (EXIT_VALID, EXIT_VIOLATIONS)  # the hint is right: it is judged
    capsys.readouterr()
    (tmp_path / "empty").mkdir()
    assert _call(["check", str(tmp_path / "empty")]) == EXIT_BAD_INPUT
    assert _one_line(capsys).endswith("is a directory without Parquet chunks (*.parquet)")  # nothing to suggest


def _unexpected_trace(path: Path, n: int) -> Path:
    """``n`` receives of messages never published: ``n`` unexpected_message violations."""
    b = TraceBuilder()
    b.open("c1")
    for i in range(n):
        b.receive("c1", "k", f"1:{i}")
        b.ack("c1", f"1:{i}")
    b.end()
    return b.write(path)


def test_check_and_the_run_summary_cut_violations_in_the_same_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One summary (``_verdict_text``): ``check`` says how many it cut and that ``--json`` lists them; a run's
    summary says the same of its ``verdict.json`` (not "7 more lines in ...")."""
    from conformance.checks import check_trace
    from pytest_keyshared.commands._verdict_text import verdict_lines

    trace = _unexpected_trace(tmp_path / "trace.jsonl", 9)
    assert _call(["check", str(trace), "--max-examples", "2"]) == EXIT_VIOLATIONS
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "... and 7 more unexpected_message (violation); --json lists them all"
    lines = verdict_lines(check_trace(trace), [], tmp_path / "verdict.json")
    assert lines[0] == "  verdict: INVALID: unexpected_message x9"
    assert lines[-1] == f"    ... and 6 more unexpected_message (violation); {tmp_path / 'verdict.json'} lists them all"
    assert sum(line.startswith("    [violation] ") for line in lines) == 3
