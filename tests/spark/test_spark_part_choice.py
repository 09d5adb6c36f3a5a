"""``keyshared check --engine spark`` chooses its part count by memory, and ``--spark-conf`` sets the memory: the
real command in a fresh process (its own JVM, with the driver memory it is given), on a small benchmark trace.
And a Spark worker that runs out of memory is the command's one line naming it, not "a bug in keyshared".

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


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _benchmark_trace(tmp_path_factory.mktemp("parts") / "t.parquet", 100_000)


def _keyshared(*args: str, conf_dir: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``keyshared ARGS`` in a fresh process (no class archive: none matches an unusual driver memory), with
    ``SPARK_CONF_DIR`` set to ``conf_dir`` if given."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KEYSHARED_SPARK_CLASS_CACHE": "off"}
    env.pop("SPARK_CONF_DIR", None)
    if conf_dir is not None:
        env["SPARK_CONF_DIR"] = str(conf_dir)
    return subprocess.run(
        [sys.executable, "-m", "pytest_keyshared.cli", *args], capture_output=True, text=True, env=env, cwd=ROOT,
        timeout=300,
    )  # fmt: skip


def test_the_part_count_follows_the_memory_given_by_spark_conf(trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    command = ["check", str(trace), "--engine", "spark", "--json", "--spark-master", "local[2]"]
    done = _keyshared(*command, "--spark-conf", "spark.driver.memory=512m")
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


def test_a_bucketed_trace_runs_its_buckets_and_the_settings_reach_spark(
    trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same trace in 2 buckets, on the same 512 MB: its parts are its buckets, and the verdict says the
    largest (about 50k events, 37 MB at 740 bytes each) may not fit the 32 MB a task has for it, naming the
    4 buckets that would.  The settings given by ``--spark-conf`` and by ``SPARK_CONF_DIR``'s
    ``spark-defaults.conf`` are in the running context (``extra.spark_conf``, read back from it)."""
    buckets = tmp_path / "buckets"
    assert main(["convert", str(trace), str(buckets), "--buckets", "2"]) == 0
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    (conf_dir / "spark-defaults.conf").write_text("spark.keyshared.probe  from-the-file\n")
    (conf_dir / "log4j2.properties").write_text((ROOT / "conformance/spark/log4j2.properties").read_text())
    command = ["check", str(buckets), "--engine", "spark", "--json", "--spark-master", "local[2]"]
    done = _keyshared(*command, "--spark-conf", "spark.driver.memory=512m", "--spark-conf",
                      "spark.keyshared.asked=on-the-command-line", conf_dir=conf_dir)  # fmt: skip
    assert done.returncode == 1, done.stderr[-3000:]
    on_spark = json.loads(done.stdout)
    assert on_spark["extra"]["spark_conf"] == {
        "spark.driver.memory": "512m",
        "spark.keyshared.asked": "on-the-command-line",
        "spark.keyshared.probe": "from-the-file",
    }
    choice = on_spark["extra"]["part_choice"]
    assert (choice["parts"], choice["by"], choice["fits"], choice["buckets_needed"]) == (2, "buckets", False, 4)
    assert choice["largest_part_events"] > 50_000 and on_spark["extra"]["parts"] == 2
    assert "keyshared convert TRACE OUT --buckets 4" in choice["reason"]
    capsys.readouterr()
    assert main(["check", str(trace), "--json"]) == 1
    on_python = json.loads(capsys.readouterr().out)
    assert _identities(on_spark) == _identities(on_python) and on_spark["counts"] == on_python["counts"]


def test_a_spark_worker_out_of_memory_is_the_commands_one_line(trace: Path) -> None:
    """``spark.executor.pyspark.memory`` caps each Python worker's address space (Spark sets ``RLIMIT_AS`` in
    it): at 400 MB a worker checking the whole trace in one part cannot hold it (a ``MemoryError``, or pyarrow's
    ``std::bad_alloc`` ending the worker)."""
    cap = "spark.executor.pyspark.memory=400m"
    done = _keyshared("check", str(trace), "--engine", "spark", "--spark-master", "local[1]", "--spark-parts", "1",
                      "--spark-conf", cap)  # fmt: skip
    assert done.returncode == 3, done.stderr[-3000:]
    last = done.stderr.strip().splitlines()[-1]  # Spark's own log lines about the failed task come before it
    assert last.startswith(f"keyshared check: OutOfMemory: Spark ran out of memory checking {trace}: "), last
    assert "it ran 1 part, as given (--spark-parts)" in last and "--spark-parts 2" in last
    assert "--spark-conf spark.executor.pyspark.memory=8g" in last and "a bug in keyshared" not in done.stderr
