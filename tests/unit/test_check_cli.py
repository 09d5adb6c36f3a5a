"""``keyshared check``: exit codes, JSON, the readable summary, and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from small_traces import key_overlap

from conformance.trace.builder import TraceBuilder
from conformance.trace.parquet import convert_to_parquet
from pytest_keyshared.cli import main


def clean() -> TraceBuilder:
    b = TraceBuilder()
    b.open("c1")
    b.publish("k", "1:0")
    b.receive("c1", "k", "1:0")
    b.ack("c1", "1:0")
    b.end()
    return b


def broken() -> TraceBuilder:
    return key_overlap()


def test_valid_trace_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = clean().write(tmp_path / "ok.jsonl")
    assert main(["check", str(path)]) == 0
    assert capsys.readouterr().out.startswith("VALID: 5 events checked, profile pip379")


def test_invalid_trace_exits_1_with_explanations(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = broken().write(tmp_path / "bad.jsonl.gz")
    assert main(["check", str(path)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("INVALID") and "[violation] key_overlap" in out and "Let:" in out and "However" in out


def test_json_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = convert_to_parquet(broken().write(tmp_path / "b.jsonl"), tmp_path / "b.parquet")
    assert main(["check", str(path), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["valid"] is False and data["events"] == 9
    assert data["counts"]["key_overlap"] == 1 and data["counts"]["out_of_order"] == 1
    assert {v["kind"] for v in data["violations"]} == {"key_overlap", "out_of_order"}
    assert all({"kind", "key", "events", "explanation"} <= set(v) for v in data["violations"])


def test_profile_changes_the_exit_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = broken().write(tmp_path / "b.jsonl")
    assert main(["check", str(path), "--profile", "out-of-order"]) == 0
    assert "permitted by the profile: key_overlap, out_of_order" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--profile", "pip-379"], "Unknown profile 'pip-379'. Did you mean 'pip379'?"),
        (["--engine", "dask"], "invalid choice: 'dask'"),
    ],
)
def test_bad_options_exit_2_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], fragment: str
) -> None:
    path = clean().write(tmp_path / "ok.jsonl")
    with pytest.raises(SystemExit) if args[0] == "--engine" else _no_raise() as _:
        code = main(["check", str(path), *args])
        assert code == 2
    err = capsys.readouterr().err
    assert fragment in err and err.count("\n") == 1


def test_malformed_and_missing_traces_exit_2_naming_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"i":0,"t":1,"op":"open","consumer":"c1"}\n{"i":1,"t":2,"op":"ack","consumer":"c1"}\n')
    assert main(["check", str(bad)]) == 2
    err = capsys.readouterr().err
    problem = "ack event i=1 has no 'topic'; a ack needs 'consumer', 'topic', 'msg_id'"
    assert err == f"keyshared check: TraceFormatError: {bad}:2: {problem}\n"
    assert main(["check", str(tmp_path / "nope.jsonl")]) == 2
    assert "nope.jsonl: no such file" in capsys.readouterr().err


class _no_raise:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return False


def test_the_program_gives_what_main_gives(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``keyshared check`` as its own process (which skips the final garbage collection and pyarrow's pandas
    probe) prints the same verdict and exits with the same code as ``main`` in this process; bad input is still
    one line and exit 2; pandas stays importable in that process."""
    import importlib.util
    import subprocess
    import sys

    good = convert_to_parquet(broken().write(tmp_path / "b.jsonl"), tmp_path / "b.parquet")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"i": 0, "t": 0, "op": "recieve"}\n')
    for path, code in ((good, 1), (bad, 2)):
        assert main(["check", str(path), "--json"]) == code
        inside = capsys.readouterr()
        ran = subprocess.run(
            [sys.executable, "-m", "pytest_keyshared.cli", "check", str(path), "--json"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert (ran.returncode, ran.stdout, ran.stderr) == (code, inside.out, inside.err)
    if importlib.util.find_spec("pandas") is None:  # installed with the spark extra (as in CI)
        return
    probe = "import runpy, sys; sys.argv = ['keyshared', 'check', sys.argv[1]]\n"
    probe += "try:\n    runpy.run_module('pytest_keyshared.cli', run_name='__main__')\nexcept SystemExit:\n    pass\n"
    probe += "import pandas, pyarrow; print('pandas', pandas.__name__)"
    ran = subprocess.run([sys.executable, "-c", probe, str(good)], capture_output=True, text=True, timeout=120)
    assert ran.stdout.strip().endswith("pandas pandas"), ran.stderr


def test_check_source_keeps_the_checker_it_is_given_a_list_for(tmp_path: Path) -> None:
    """``keep`` (what the ``keyshared`` program passes) changes nothing but who holds the checker afterwards."""
    from conformance.checks.api import TraceChecker, check_source
    from conformance.trace.reader import open_trace

    path = convert_to_parquet(broken().write(tmp_path / "b.jsonl"), tmp_path / "b.parquet")
    kept: list[object] = []
    verdict = check_source(open_trace(path), keep=kept)
    assert [type(c) for c in kept] == [TraceChecker]
    assert verdict.to_json() == check_source(open_trace(path)).to_json()
