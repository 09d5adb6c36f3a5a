"""``--keyshared-trace-layout=bucketed[:N]`` (ini ``keyshared_trace_layout``): the plugin's traces are stored in
the bucketed layout too, when they end: a scenario's run (``keyshared_run``) and a trace recorded by hand
(``keyshared_trace``, at the test's end); the copies are judged as the traces are.  On the model target."""

from __future__ import annotations

import json
from pathlib import Path

import numpy  # noqa: F401 - imported once here: in-process pytester runs would import it again, which it refuses
import pyarrow.parquet  # noqa: F401
import pytest

from conformance.trace.buckets import read_manifest
from pytest_keyshared.cli import main

pytest_plugins = ["pytester"]

#: A run on the model, and its events recorded again by hand through ``keyshared_trace`` (the recorder's writer).
RECORDS = """
import json

def test_both(keyshared_run, keyshared_trace, keyshared_check):
    result = keyshared_run("join-while-pending")
    keyshared_check(result)
    trace = keyshared_trace(subscription="ks-sub", name="by-hand")
    for line in result.trace_path.read_text().splitlines()[1:]:
        event = json.loads(line)
        for field in ("i", "t", "t0"):
            event.pop(field, None)
        trace.record(event.pop("op"), **event)
    keyshared_check(trace)
"""


@pytest.fixture(autouse=True)
def _no_keyshared_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in list(os.environ):
        if name.startswith("KEYSHARED_"):
            monkeypatch.delenv(name)


def _case_dir(pytester: pytest.Pytester) -> Path:
    return next((pytester.path / "keyshared-artifacts" / "latest").glob("*test_both"))


def test_the_plugins_traces_are_stored_bucketed_too(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makepyfile(RECORDS)
    pytester.makeini("[pytest]\nkeyshared_trace_layout = bucketed:3\n")
    pytester.runpytest("--keyshared-target=model", "--keyshared-seed=3").assert_outcomes(passed=1)
    case = _case_dir(pytester)
    for copy, flat in ((case / "run-1" / "trace-buckets", case / "run-1" / "trace.jsonl"),
                       (case / "by-hand-buckets", case / "by-hand.jsonl")):  # fmt: skip
        layout = read_manifest(copy)
        assert layout.buckets == 3 and layout.events == len(flat.read_text().splitlines()) - 1
        capsys.readouterr()
        assert main(["check", str(copy), "--json"]) == 0
        bucketed = json.loads(capsys.readouterr().out)
        assert main(["check", str(flat), "--json"]) == 0
        assert bucketed["counts"] == json.loads(capsys.readouterr().out)["counts"]


def test_the_command_line_wins_and_flat_writes_no_copy(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(RECORDS)
    pytester.makeini("[pytest]\nkeyshared_trace_layout = bucketed:3\n")
    pytester.runpytest("--keyshared-target=model", "--keyshared-trace-layout=flat").assert_outcomes(passed=1)
    case = _case_dir(pytester)
    assert (case / "run-1" / "trace.jsonl").is_file() and (case / "by-hand.jsonl").is_file()
    assert not (case / "run-1" / "trace-buckets").exists() and not (case / "by-hand-buckets").exists()


def test_a_malformed_layout_names_its_source(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest("--keyshared-target=model", "--keyshared-trace-layout=bucketed:0")
    assert result.ret != 0
    result.stderr.fnmatch_lines(
        ["*Invalid keyshared_trace_layout 'bucketed:0' from the command line (--keyshared-trace-layout)*bucket*"]
    )
