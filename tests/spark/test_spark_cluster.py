"""A real Spark cluster: a standalone master and two workers on loopback, ``keyshared check --engine spark
--spark-master spark://...`` with the executors' memory set, on a trace stored as a directory of Parquet chunks
whose acks carry no key (the tasks resolve their keys: the driver reads nothing of the trace); the Python
engine's verdict, every planted violation found, and the check's tasks run by an executor on each worker; then
the same check through ``spark-submit`` with the driver program ``conformance.spark.submit``, as a user of YARN or
Kubernetes runs it.

Where the tasks ran is read from Spark itself: the application's event log (``spark.eventLog.*``, given by
``--spark-conf`` as a user would), whose task ends name their executor, and each worker's own status (its web
UI's JSON), which lists the executor it ran for the application with the memory it was given."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from trace_synth import SynthConfig, synthesize

from conformance.checks import check_trace
from conformance.trace.parquet import write_parquet
from conformance.violations import Kind

pytestmark = pytest.mark.spark

PLANTED = {Kind.OUT_OF_ORDER, Kind.KEY_OVERLAP, Kind.DUPLICATE_PUBLISH}


def test_keyshared_check_on_a_standalone_cluster_of_two_workers(tmp_path: Path) -> None:
    import conformance.spark.submit as submit
    from conformance.spark.standalone import StandaloneCluster, spark_home

    config = SynthConfig(partitions=2, messages=160, keys=8, churn=0.08, deduplication=False, mixed_batch_rate=0.0)
    run = synthesize(11, config, plant=PLANTED)
    chunks = tmp_path / "trace"
    events = list(run.events)
    assert all(e.key is None for e in events if e.op.value == "ack")  # split by keys the tasks resolve
    third = len(events) // 3
    for n, part in enumerate((events[:third], events[third : 2 * third], events[2 * third :])):
        write_parquet(chunks / f"part-{n:05d}.parquet", run.header, part)
    python = check_trace(chunks)
    assert python.events == len(events) and {v.kind for v in python.all_violations()} >= PLANTED
    event_log = tmp_path / "events"
    event_log.mkdir()
    conf = {
        "spark.executor.memory": "512m",
        "spark.executor.cores": "1",
        "spark.executor.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",  # a short run: quick JIT
        # the job waits (at most 30 s) until both workers' executors have registered, so both take tasks
        "spark.cores.max": "2",
        "spark.scheduler.minRegisteredResourcesRatio": "1.0",
        "spark.scheduler.maxRegisteredResourcesWaitingTime": "30s",
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": event_log.as_uri(),
        "spark.eventLog.compress": "false",  # (Spark 4 compresses it and rolls it into a directory by default)
        "spark.eventLog.rolling.enabled": "false",
    }
    with StandaloneCluster(tmp_path / "cluster", workers=2, cores=1, memory="1g") as cluster:
        assert cluster.alive_workers() == 2
        done = subprocess.run(
            [sys.executable, "-m", "pytest_keyshared.cli", "check", "--engine", "spark", "--spark-master",
             cluster.url, "--spark-wait", "90", "--spark-parts", "4",
             *(f"--spark-conf={k}={v}" for k, v in conf.items()), "--json", f"file://{chunks}"],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        workers = cluster.worker_states()
        # the same check through the user's own spark-submit (docs/checker.md, "Running on Spark"), the driver
        # program conformance.spark.submit, on the same cluster
        submitted = subprocess.run(
            [str(spark_home() / "bin" / "spark-submit"), "--master", cluster.url, "--conf",
             "spark.executor.memory=512m", "--conf", "spark.driver.host=127.0.0.1", "--conf",
             f"spark.executor.extraJavaOptions={conf['spark.executor.extraJavaOptions']}", submit.__file__, str(chunks),
             "--json"],
            capture_output=True, text=True, timeout=300, env={**os.environ, "PYSPARK_PYTHON": sys.executable,
                                                             "SPARK_LOCAL_IP": "127.0.0.1"},
        )  # fmt: skip
    assert done.returncode == 1, done.stderr[-3000:]
    spark = json.loads(done.stdout)
    assert spark["engine"] == "spark"
    assert spark["counts"] == dict(python.counts) and spark["events"] == python.events
    assert spark["notes"] == list(python.notes) and spark["unjudged"] == [k.value for k in python.unjudged]
    assert spark["violations"] == [v.to_dict() for v in python.violations]
    assert spark["extra"]["split"] == "resolved" and spark["extra"]["parts"] == 4
    choice = spark["extra"]["part_choice"]
    assert choice["memory_from"] == "spark.executor.memory" and choice["memory_per_executor"] == 512 << 20
    assert spark["extra"]["spark_conf"]["spark.executor.memory"] == "512m"
    # Spark's own record: the check's tasks ran on two executors, one on each worker, each given 512 MB
    (log,) = [p for p in event_log.rglob("*") if p.is_file()]
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
    ran_on = {r["Task Info"]["Executor ID"] for r in records if r.get("Event") == "SparkListenerTaskEnd"}
    app = next(r["App ID"] for r in records if r.get("Event") == "SparkListenerApplicationStart")
    assert len(ran_on) == 2, ran_on
    per_worker = [
        [e for e in w.get("executors", []) + w.get("finishedexecutors", []) if e.get("appid") == app] for w in workers
    ]
    assert [len(executors) for executors in per_worker] == [1, 1], workers
    assert {str(e["id"]) for executors in per_worker for e in executors} == ran_on
    assert all(e["memory"] == 512 for executors in per_worker for e in executors)
    # spark-submit: the same verdict, parts chosen by the executors' memory (one part: a small trace)
    assert submitted.returncode == 1, submitted.stderr[-3000:]
    through_submit = json.loads(submitted.stdout)
    assert through_submit["violations"] == spark["violations"] and through_submit["counts"] == spark["counts"]
    assert through_submit["extra"]["part_choice"]["memory_from"] == "spark.executor.memory"
