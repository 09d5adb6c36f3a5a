"""``keyshared check --engine spark`` with the driver's class archive, in real JVMs (each a process of its own):
the first run leaves an archive, the next reads it, and a run finding a truncated archive (which kills a JVM
reading it) still checks the trace, and removes it.  Every run gives the Python engine's verdict, and none
prints Spark's start-up chatter (the package's log4j2.properties)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from small_traces import key_overlap

pytestmark = pytest.mark.spark


def check(path: Path, cache: Path) -> dict[str, Any]:
    env = {**os.environ, "KEYSHARED_CACHE_DIR": str(cache), "KEYSHARED_SPARK_CLASS_CACHE": "on"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest_keyshared.cli", "check", str(path), "--engine", "spark", "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=path.parent,
        timeout=300,
    )
    assert done.returncode == 1, done.stderr[-2000:]
    for chatter in ("default log4j profile", "Setting default log level", "NativeCodeLoader"):  # log4j2.properties
        assert chatter not in done.stderr, done.stderr
    return dict(json.loads(done.stdout))


def test_the_first_run_leaves_an_archive_the_next_reads_and_a_bad_one_is_replaced(tmp_path: Path) -> None:
    trace = key_overlap().write(tmp_path / "t.jsonl")
    cache = tmp_path / "cache"
    first = check(trace, cache)
    archives = list((cache / "spark-classes").glob("*.jsa"))
    assert len(archives) == 1 and not archives[0].name.startswith(".")  # kept whole, under its own name
    archive = archives[0]
    assert archive.name.endswith(f"-{archive.stat().st_size}.jsa")
    made = archive.stat().st_mtime_ns
    second = check(trace, cache)  # reads it
    assert archive.stat().st_mtime_ns == made and list(archive.parent.glob(".*")) == []
    data = archive.read_bytes()
    archive.chmod(0o644)
    archive.write_bytes(data[: len(data) // 3])  # cut short: a JVM mapping it would die
    third = check(trace, cache)  # not read: removed, and this run dumps a whole one
    (kept,) = (cache / "spark-classes").glob("*.jsa")
    assert kept.name.endswith(f"-{kept.stat().st_size}.jsa") and kept.stat().st_size > len(data) // 3
    assert not list(tmp_path.glob("hs_err_pid*.log"))  # no crash report in the working directory
    for verdict in (first, second, third):
        assert verdict["validity"] == "invalid" and verdict["counts"]["key_overlap"] == 1
        assert verdict["engine"] == "spark"
