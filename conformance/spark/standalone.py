"""A throwaway Spark standalone cluster on loopback: a master and N workers, for tests and benchmarks.

It runs the ``spark-class`` launcher the pyspark wheel ships (nothing is downloaded), on ports the OS chose,
with its work and log files in a directory of the caller's.  :meth:`StandaloneCluster.start` waits (bounded)
until every worker has registered with the master; :meth:`StandaloneCluster.stop` stops the processes it
started, by pid.  Executors run this interpreter (``PYSPARK_PYTHON``), so the workers see this package.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

__all__ = ["StandaloneCluster", "free_port", "spark_home"]


def spark_home() -> Path:
    """The pyspark package directory: a Spark home (``bin/spark-class``, ``jars/``)."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    """A loopback port the OS says is free now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class StandaloneCluster:
    """A master and ``workers`` workers of ``cores`` cores each, on 127.0.0.1 (use as a context manager)."""

    def __init__(self, directory: Path, *, workers: int = 2, cores: int = 1, memory: str = "1g") -> None:
        self.directory = directory
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.port = free_port()
        self.ui_port = free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.processes: list[subprocess.Popen[bytes]] = []

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            SPARK_HOME=str(spark_home()),
            SPARK_LOCAL_IP="127.0.0.1",
            PYSPARK_PYTHON=sys.executable,
            SPARK_LOG_DIR=str(self.directory),
            SPARK_WORKER_DIR=str(self.directory / "work"),
        )
        # the master's and workers' own JVMs do little but start: the quick JIT, one GC thread (not executors')
        env.setdefault("SPARK_DAEMON_JAVA_OPTS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
        return env

    def _launch(self, name: str, *args: str) -> None:
        log = open(self.directory / f"{name}.log", "wb")  # noqa: SIM115 - the process owns it until stop()
        try:
            process = subprocess.Popen(
                [str(spark_home() / "bin" / "spark-class"), *args],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self._env(),
            )
        finally:
            log.close()
        self.processes.append(process)

    def start(self, timeout: float = 120.0) -> str:
        """Start the master and the workers; return the master URL once every worker is alive."""
        self.directory.mkdir(parents=True, exist_ok=True)
        master = "org.apache.spark.deploy.master.Master"
        self._launch("master", master, "--host", "127.0.0.1", "--port", str(self.port),
                     "--webui-port", str(self.ui_port))  # fmt: skip
        for n in range(self.workers):
            self._launch(
                f"worker{n}", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                "--webui-port", str(free_port()), "--cores", str(self.cores), "--memory", self.memory,
                "--work-dir", str(self.directory / f"work{n}"), self.url,
            )  # fmt: skip
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for p in self.processes:
                if p.poll() is not None:
                    self.stop()
                    raise RuntimeError(f"a Spark process exited ({p.returncode}); logs in {self.directory}")
            if self.alive_workers() >= self.workers:
                return self.url
            time.sleep(0.5)
        self.stop()
        raise TimeoutError(f"Spark standalone cluster not up in {timeout:.0f} s; logs in {self.directory}")

    def alive_workers(self) -> int:
        """How many workers the master counts as alive (0 while its UI is not up)."""
        state = _json(f"http://127.0.0.1:{self.ui_port}/json/")
        return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")

    def worker_states(self) -> list[dict[str, Any]]:
        """Each alive worker's own status (its web UI's ``/json/``: ``executors`` running, ``finishedexecutors``
        with their ``appid`` and ``memory`` in MB), found through the master's list of workers."""
        state = _json(f"http://127.0.0.1:{self.ui_port}/json/")
        urls = [w["webuiaddress"] for w in state.get("workers", []) if w.get("state") == "ALIVE"]
        return [_json(f"{url.rstrip('/')}/json/") for url in urls]

    def stop(self, timeout: float = 15.0) -> None:
        """Stop the workers, then the master, by pid (SIGTERM, then SIGKILL after ``timeout``)."""
        for p in reversed(self.processes):
            if p.poll() is None:
                p.terminate()
        for p in reversed(self.processes):
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)
        self.processes.clear()

    def __enter__(self) -> StandaloneCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _json(url: str) -> dict[str, Any]:
    """A Spark web UI's JSON status (empty while it is not up; two seconds at most)."""
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            state: Any = json.load(response)
    except (OSError, ValueError):
        return {}
    return dict(state) if isinstance(state, dict) else {}
