"""A real Spark cluster: a standalone master and two workers on loopback, ``keyshared check --engine spark
--spark-master spark://...`` on a trace stored as a directory of Parquet chunks, the Python engine's verdict."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from trace_synth import SynthConfig, synthesize

from conformance.checks import check_trace
from conformance.trace.parquet import write_parquet
from conformance.violations import Kind

pytestmark = pytest.mark.spark


def test_keyshared_check_on_a_standalone_cluster_of_two_workers(tmp_path: Path) -> None:
    from conformance.spark.standalone import StandaloneCluster

    run = synthesize(11, SynthConfig(partitions=2, messages=120, keys=6, churn=0.08), plant={Kind.OUT_OF_ORDER})
    chunks = tmp_path / "trace"
    events = list(run.events)
    third = len(events) // 3
    for n, part in enumerate((events[:third], events[third : 2 * third], events[2 * third :])):
        write_parquet(chunks / f"part-{n:05d}.parquet", run.header, part)
    python = check_trace(chunks)
    assert python.events == len(events) and not python.valid
    with StandaloneCluster(tmp_path / "cluster", workers=2, cores=1, memory="1g") as cluster:
        assert cluster.alive_workers() == 2
        done = subprocess.run(
            [sys.executable, "-m", "pytest_keyshared.cli", "check", "--engine", "spark", "--spark-master",
             cluster.url, "--spark-parts", "3", "--json", f"file://{chunks}"],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    assert done.returncode == 1, done.stderr[-3000:]
    spark = json.loads(done.stdout)
    assert spark["engine"] == "spark"
    assert spark["counts"] == dict(python.counts) and spark["events"] == python.events
    assert spark["notes"] == list(python.notes) and spark["unjudged"] == [k.value for k in python.unjudged]
    assert spark["violations"] == [v.to_dict() for v in python.violations]
