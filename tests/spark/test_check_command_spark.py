"""``keyshared check --engine spark``, the command's own path: the same verdict as the Python engine.

The command starts and stops its own session (a SparkContext alone for a trace the tasks read); here it is
handed the suite's shared session (with a ``stop`` that only notes the call), so the test costs no second JVM.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from small_traces import key_overlap

from conformance.trace.parquet import convert_to_parquet
from pytest_keyshared.cli import main

pytestmark = pytest.mark.spark


class _Borrowed:
    """The shared session, lent to the command: its ``stop()`` is noted, not done."""

    def __init__(self, session: Any) -> None:
        self._session = session
        self.stopped = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)

    def stop(self) -> None:
        self.stopped = True


def _overlap(path: Path) -> Path:
    return key_overlap().write(path)


def _identities(verdict: dict[str, Any]) -> set[tuple[Any, ...]]:
    return {(v["kind"], v["key"], tuple(v["events"])) for v in verdict["violations"]}


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_check_on_spark_gives_the_python_verdict(
    suffix: str, spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    borrowed = _Borrowed(spark)
    monkeypatch.setattr("conformance.spark.build_session", lambda master, **kw: borrowed)
    monkeypatch.setattr("conformance.spark.session.build_context", lambda master, **kw: borrowed)  # a local trace
    path = _overlap(tmp_path / "t.jsonl")
    if suffix == ".parquet":
        path = convert_to_parquet(path, tmp_path / "t.parquet") or tmp_path / "t.parquet"
    assert main(["check", str(path), "--engine", "spark", "--json"]) == 1
    on_spark = json.loads(capsys.readouterr().out)
    assert main(["check", str(path), "--json"]) == 1
    on_python = json.loads(capsys.readouterr().out)
    assert on_spark["validity"] == on_python["validity"] == "invalid"
    assert _identities(on_spark) == _identities(on_python) and _identities(on_python)
    assert on_spark["engine"] == "spark" and borrowed.stopped


def test_the_text_verdict_says_how_many_parts_and_why(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    borrowed = _Borrowed(spark)
    monkeypatch.setattr("conformance.spark.session.build_context", lambda master, **kw: borrowed)
    path = convert_to_parquet(_overlap(tmp_path / "t.jsonl"), tmp_path / "t.parquet") or tmp_path / "t.parquet"
    assert main(["check", str(path), "--engine", "spark", "--spark-master", "local[2]"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert [line for line in lines if line.startswith("Spark parts:")] == [
        next(line for line in lines if line.startswith("Spark parts: 1 part, a small trace that fits one part: "))
    ]
    assert main(["check", str(path), "--engine", "spark", "--spark-parts", "3"]) == 1
    assert "Spark parts: 3 parts, as given (--spark-parts)" in capsys.readouterr().out.splitlines()


# --- issue 28: a bad --spark-master is one line, bounded, with the JVM's output in a log ------------------------

_ROOT = Path(__file__).resolve().parents[2]


def _keyshared(cwd: Path, *args: str, timeout: float = 240) -> Any:
    """The ``keyshared`` program of this checkout, in a process of its own (a JVM it starts dies with it)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(_ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run(
        [sys.executable, "-m", "pytest_keyshared.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=timeout,
        check=False,
    )


def _only_line(done: Any) -> str:
    """stderr is exactly one line, under 300 characters, with no Python or Java trace in it."""
    for trace in ("Traceback", "Exception in thread", "\tat org.", "Py4J", "SparkException", "WARNING: Using"):
        assert trace not in done.stderr, done.stderr[-3000:]
    (line,) = done.stderr.splitlines()
    assert len(line) < 300, line
    return str(line)


@pytest.mark.parametrize(
    "master", ["nonsense", "spark://", "spark://127.0.0.1", "spark://h:0", "local[x]", "mesos://h:5050", "yarn-client"]
)
def test_a_malformed_master_is_bad_input_before_any_jvm_starts(
    master: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Spark would start ``spark-submit``, print two Java traces and exit (``JAVA_GATEWAY_EXITED``: "a bug in
    keyshared", exit 3, an error file beside the trace); the form is checked first: exit 2, one line."""
    trace = _overlap(tmp_path / "t.jsonl")
    assert main(["check", str(trace), "--engine", "spark", "--spark-master", master]) == 2
    err = capsys.readouterr().err
    (line,) = err.splitlines()
    assert line == (
        f"keyshared check: InvalidArgument: --spark-master {master!r} is not a Spark master URL: expected local,"
        " local[N], local[*], local[N,F], local-cluster[N,C,M], spark://HOST:PORT, yarn or k8s://URL."
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.jsonl"]  # no keyshared-check-error.txt


def test_the_master_forms_spark_takes_pass() -> None:
    from conformance.spark.master import check_master, is_local

    for master in ("local", "local[2]", "local[*]", "local[2,3]", "local-cluster[2,1,1024]", "spark://h:7077",
                   "spark://h1:7077,h2:7077", "spark://[::1]:7077", "yarn", "k8s://https://h:6443"):  # fmt: skip
        assert check_master(master) == master
    assert is_local("local[*]") and not is_local("spark://h:7077") and not is_local("local-cluster[2,1,1024]")


def test_a_master_nothing_listens_at_fails_at_once_without_a_jvm(tmp_path: Path) -> None:
    import socket
    import time

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    trace = _overlap(tmp_path / "t.jsonl")
    started = time.monotonic()
    done = _keyshared(tmp_path, "check", "t.jsonl", "--engine", "spark", "--spark-master", f"spark://127.0.0.1:{port}")
    took = time.monotonic() - started
    assert done.returncode == 3, done.stderr[-3000:]
    line = _only_line(done)
    assert line.startswith(f"keyshared check: SparkUnavailable: Spark master spark://127.0.0.1:{port} is unreachable:")
    assert "refused the connection" in line and "no JVM started" in line
    assert took < 30  # no JVM: an interpreter's start and a refused connect
    assert sorted(p.name for p in trace.parent.iterdir()) == ["t.jsonl"]


def test_a_master_that_never_answers_is_given_up_within_the_bound_with_the_jvm_output_in_a_log(
    tmp_path: Path,
) -> None:
    """A port that accepts connections and never speaks (not a Spark master, or a hung one): Spark's driver would
    retry its registration for a minute, printing a Java trace each time, then fail the check with "Cannot call
    methods on a stopped SparkContext".  Here: one line naming the master, the time waited (the bound,
    ``--spark-wait``, kept small: the JVM is slow to start on a loaded machine) and the log holding the JVM's
    output, which the terminal never sees."""
    import re
    import socket
    import threading
    import time

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        _overlap(tmp_path / "t.jsonl")
        master = f"spark://127.0.0.1:{port}"
        started = time.monotonic()
        done = _keyshared(
            tmp_path, "check", "t.jsonl", "--engine", "spark", "--spark-master", master, "--spark-wait", "3"
        )
        took = time.monotonic() - started
    finally:
        stop.set()
        thread.join(5)
        for conn in held:
            conn.close()
        listener.close()
    assert done.returncode == 3, done.stderr[-3000:]
    line = _only_line(done)
    m = re.fullmatch(
        rf"keyshared check: SparkUnavailable: Spark master {re.escape(master)} did not take the application within"
        r" (\d+\.\d)s \(--spark-wait sets the bound\); Spark's output: (\S+)",
        line,
    )
    assert m is not None, line
    assert 3.0 <= float(m.group(1)) < 10
    log = Path(m.group(2))
    try:
        assert log.is_file() and log.stat().st_size > 0  # the JVM's own output went there
    finally:
        log.unlink(missing_ok=True)
    assert took < 120  # the JVM's start (slow on a loaded machine) and the 3 s bound, not Spark's own minute
    assert done.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.jsonl"]  # no keyshared-check-error.txt beside it
