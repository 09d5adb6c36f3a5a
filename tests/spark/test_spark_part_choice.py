"""``keyshared check --engine spark`` chooses its part count by memory, and ``--spark-conf`` sets the memory: the
real command in a fresh process (its own JVM, with the driver memory it is given), on a small benchmark trace.

512 MB for a local master's two tasks leave each 32 MB for its share after the worker's own 224 MB
(``conformance.spark.parts``): 100k events at 740 bytes each need 4 parts, where the cores would give 2 and a
trace this small 1.  The verdict says so (``extra.part_choice``) and is the Python engine's.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_keyshared.cli import main

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[2]


def _benchmark_trace(path: Path, events: int) -> Path:
    spec = importlib.util.spec_from_file_location("gen_trace", ROOT / "benchmarks" / "gen_trace.py")
    assert spec is not None and spec.loader is not None
    gen_trace = importlib.util.module_from_spec(spec)
    sys.modules["gen_trace"] = gen_trace
    spec.loader.exec_module(gen_trace)
    gen_trace.generate(events, path, plant=2, keys=3000, consumers=4)
    return path


def _identities(verdict: dict[str, Any]) -> set[tuple[Any, ...]]:
    return {(v["kind"], v["key"], tuple(v["events"])) for v in verdict["violations"]}


def test_the_part_count_follows_the_memory_given_by_spark_conf(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = _benchmark_trace(tmp_path / "t.parquet", 100_000)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KEYSHARED_SPARK_CLASS_CACHE": "off"}  # no archive for 512m
    env.pop("SPARK_CONF_DIR", None)
    command = ["check", str(trace), "--engine", "spark", "--json", "--spark-master", "local[2]"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest_keyshared.cli", *command, "--spark-conf", "spark.driver.memory=512m"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 1, done.stderr
    on_spark = json.loads(done.stdout)
    choice = on_spark["extra"]["part_choice"]
    assert choice["memory_from"] == "spark.driver.memory" and choice["memory_per_executor"] == 512 * 2**20
    assert (choice["parts"], choice["by"], choice["tasks_per_executor"]) == (4, "memory", 2)
    assert on_spark["extra"]["parts"] == 4 and choice["reason"].startswith("4 parts, chosen by memory: 100,0")
    assert main(["check", str(trace), "--json"]) == 1
    on_python = json.loads(capsys.readouterr().out)
    assert _identities(on_spark) == _identities(on_python) and _identities(on_python)
    assert on_spark["counts"] == on_python["counts"]
