"""Running out of memory is one line saying so, how far the check got and the Spark command (exit 3), not
"an unexpected error (a bug in keyshared)".

The failure is real: ``keyshared check`` runs in a subprocess whose address space is capped (``RLIMIT_AS``) a
few megabytes above what it uses once pyarrow has read the trace's first batch, so the checker's state (tens of
megabytes for this trace) cannot fit.  The same process without the cap gives the verdict, so it is memory, not
something else, that the capped run fails for.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_keyshared.commands._out_of_memory import crashed_for_memory, on_spark, spark_memory_failure

ROOT = Path(__file__).resolve().parents[2]
EVENTS = 120_000

#: Run ``keyshared check TRACE`` with the address space capped MARGIN MiB above its size after a first read
#: (MARGIN < 0: no cap).  pyarrow's threads and imports happen before the cap, so only the check can hit it.
RUN = """
import resource, sys
path, margin = sys.argv[1], int(sys.argv[2])
from pytest_keyshared.cli import main
from conformance.trace.reader import open_trace
for _ in open_trace(path).row_batches():
    break
if margin >= 0:
    with open("/proc/self/status") as fh:
        size = next(int(line.split()[1]) for line in fh if line.startswith("VmSize:")) * 1024
    resource.setrlimit(resource.RLIMIT_AS, (size + margin * 2**20, resource.getrlimit(resource.RLIMIT_AS)[1]))
sys.exit(main(["check", path]))
"""


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    spec = importlib.util.spec_from_file_location("gen_trace", ROOT / "benchmarks" / "gen_trace.py")
    assert spec is not None and spec.loader is not None
    gen_trace = importlib.util.module_from_spec(spec)
    sys.modules["gen_trace"] = gen_trace
    spec.loader.exec_module(gen_trace)
    path = tmp_path_factory.mktemp("oom") / "trace.parquet"
    gen_trace.generate(EVENTS, path, plant=2, keys=3000, consumers=4)
    return path


def _check(path: Path, margin_mib: int) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ARROW_DEFAULT_MEMORY_POOL": "system"}
    return subprocess.run(
        [sys.executable, "-c", RUN, str(path), str(margin_mib)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc/self/status: Linux")
def test_a_python_check_out_of_memory_is_one_line_with_the_spark_command(trace: Path) -> None:
    free = _check(trace, -1)
    assert free.returncode == 1, free.stderr  # the planted violations: the trace itself is fine
    capped = _check(trace, 16)
    assert capped.returncode == 3, capped.stderr
    lines = capped.stderr.strip().splitlines()
    assert len(lines) == 1, capped.stderr
    line = lines[0]
    assert line.startswith(f"keyshared check: OutOfMemory: the Python engine ran out of memory checking {trace} ")
    assert "a bug in keyshared" not in line and "MemoryError" in line
    assert re.search(rf"after (checking|reading) [\d,]+ of its {EVENTS:,} events", line), line  # how far it got
    assert f"keyshared check {trace} --engine spark" in line
    out = trace.with_name("trace-buckets")
    assert "; or convert it into the bucketed layout, which this engine checks bucket by bucket" in line
    assert f" keyshared convert {trace} {out} --buckets 16 && keyshared check {out}" in line


def test_a_check_crashed_for_memory_is_recognised_and_another_crash_is_not() -> None:
    memory = "check 'streaming' crashed at E7: MemoryError:  (streaming.py:355 in _run); the verdict is unknown"
    other = "check 'ordering' crashed at E7: KeyError: 'MemoryError' (x.py:1 in f); the verdict is unknown"
    assert crashed_for_memory(SimpleNamespace(crash_notes=[memory])) == "MemoryError in check 'streaming'"
    assert crashed_for_memory(SimpleNamespace(crash_notes=[other])) is None


@pytest.mark.parametrize(
    ("text", "meaning"),
    [
        ("Job aborted ... java.lang.OutOfMemoryError: Java heap space", "java.lang.OutOfMemoryError"),
        ("PythonException: ... MemoryError", "MemoryError"),
        ("ExecutorLostFailure (executor 1 exited caused by one of the running tasks) exit code 137", "137"),
        ("org.apache.spark.SparkException: Python worker exited unexpectedly (crashed)", "Python worker died"),
        ("Lost task 0.0: ExecutorLostFailure (executor 0 exited)", "executor was lost"),
        ("TraceFormatError: t.parquet: E5: a receive without a consumer", None),
    ],
)
def test_spark_failures_for_memory_are_recognised(text: str, meaning: str | None) -> None:
    found = spark_memory_failure(RuntimeError(text))
    assert (found is None) if meaning is None else (found is not None and meaning in found)


def test_the_spark_message_names_the_parts_and_the_settings() -> None:
    from conformance.spark.parts import PartChoice, choose_parts

    worker = "a Python worker ran out of memory (MemoryError)"
    choice = choose_parts(100_000_000, 4 * 2**30, 2, memory_from="spark.executor.pyspark.memory")
    text = str(on_spark("/t.parquet", worker, choice, "local[2]"))
    assert f"it ran {choice.parts} parts, chosen by memory: 100,000,000 events" in text
    assert "which the part count follows" in text and "--spark-conf spark.executor.pyspark.memory=8g" in text
    assert f"--spark-parts {2 * choice.parts}" in text
    given = PartChoice(3, "given", 1000, None, "available on this machine", 2, 2)
    text = str(on_spark("/t.parquet", worker, given, "spark://h:7077"))
    assert "it ran 3 parts, as given (--spark-parts)" in text and "part count follows" not in text
    assert "--spark-conf spark.executor.memory=8g" in text and "--spark-parts 6" in text


def test_the_spark_message_for_a_bucketed_trace_names_a_conversion() -> None:
    """A bucketed trace's parts are its buckets: more of them is ``keyshared convert``, not ``--spark-parts``."""
    from conformance.spark.parts import bucket_choice, choose_parts

    memory = choose_parts(100_000_000, 4 * 2**30, 2, tasks_per_executor=1, memory_from="spark.executor.memory")
    choice = bucket_choice(memory, 4, 25_000_000)
    text = str(on_spark("/b", "an executor was lost", choice, "spark://h:7077"))
    assert "it ran 4 parts, the trace's buckets" in text and "--spark-parts" not in text.split("it ran")[0]
    assert text.endswith("or convert it into more buckets (keyshared convert /b OUT --buckets 20)")
    assert "part count follows" not in text and "--spark-conf spark.executor.memory=8g" in text


def test_the_python_message_names_the_buckets_that_fit() -> None:
    """100M events at 300 bytes each over 1 GiB a bucket: 28 buckets; a small trace the converter's default; a
    trace already bucketed: the original converted into more (at least twice its buckets)."""
    from pytest_keyshared.commands._out_of_memory import buckets_for, on_python

    assert (buckets_for(100_000_000), buckets_for(1000), buckets_for(None)) == (28, 16, 16)
    text = str(on_python("/d/t.parquet", "MemoryError", 5, 100_000_000))
    assert "after checking 5 of its 100,000,000 events" in text
    assert text.endswith("keyshared convert /d/t.parquet /d/t-buckets --buckets 28 && keyshared check /d/t-buckets")
    text = str(on_python("/d/b", "MemoryError", None, 100_000_000, bucketed=8))
    assert "before checking any event" in text
    assert text.endswith("or convert the original trace into more buckets (keyshared convert TRACE OUT --buckets 28)")
    assert str(on_python("/d/b", "MemoryError", None, 1000, bucketed=16)).endswith("--buckets 32)")
    text = str(on_python("/d/t", "MemoryError", 65_536, 200_000, read=131_072))
    assert "after reading 131,072 of its 200,000 events (65,536 of them checked; the rest in the batch" in text
