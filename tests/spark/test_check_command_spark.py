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
