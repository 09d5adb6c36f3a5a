"""How many parts the Spark engine splits a trace into: enough that each part's state fits its task's memory.

A part's state lives in the Python worker that checks it, so a part count chosen by cores alone (two on a
2-core machine) fails exactly where the engine is needed: at 100M events each of two parts would need ~15 GB.
:func:`choose_parts` is a pure function of the trace's size, the memory an executor gives its Python workers and
the task slots; :func:`spark_memory` reads that memory from a session's settings, with Spark's defaults.

The figures (re-measured 2026-11-29 on a 1M-event trace of ``benchmarks/gen_trace.py --seed 7``, one routed task
run directly: ``check_routed_task`` of part 0 of 2 and of 4, peak RSS by ``getrusage``):

* a task costs a fixed :data:`TASK_OVERHEAD_BYTES` (the interpreter with pyarrow and this package, ~65 MB, plus
  the batches of the whole trace it reads and routes, ~160 MB), and
* about 330 bytes per event of its share at 1M events (parts of 250k and 500k events); at 100M events, 16
  parts, the workers peaked at 740 bytes per event of their share (issue 27).  :data:`SPARK_BYTES_PER_EVENT`
  takes the figure at scale, since memory at scale is what the choice is for.

:data:`PYTHON_BYTES_PER_EVENT` is the Python engine's (3.0 GB at 10M events; 0.45 GB at 1M, measured the same
way), which the message of a Python check that ran out of memory uses
(:mod:`pytest_keyshared.commands._out_of_memory`).
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from typing import Any

__all__ = [
    "PYTHON_BYTES_PER_EVENT",
    "SPARK_BYTES_PER_EVENT",
    "TASK_OVERHEAD_BYTES",
    "PartChoice",
    "bucket_choice",
    "choose_for_context",
    "choose_parts",
    "defaults_file_settings",
    "format_bytes",
    "parse_memory",
    "spark_memory",
]

#: Peak bytes per event of a part's share in a Spark Python worker (measured at 100M events, 16 parts).
SPARK_BYTES_PER_EVENT = 740
#: Peak bytes per event of the Python engine (3.0 GB at 10M events).
PYTHON_BYTES_PER_EVENT = 300
#: A task's memory before its share: interpreter, pyarrow, this package and the batches it reads (measured ~225 MB).
TASK_OVERHEAD_BYTES = 224 * 1024 * 1024
#: The least a task is assumed to have for its share, however small the memory (a choice never divides by ~0).
MIN_SHARE_BYTES = 16 * 1024 * 1024

_MIB = 1024 * 1024
_UNITS = {"": _MIB, "b": 1, "k": 1024, "m": _MIB, "g": 1024 * _MIB, "t": 1024**2 * _MIB, "p": 1024**3 * _MIB}


@dataclass(frozen=True, slots=True)
class PartChoice:
    """The part count chosen for a trace and why (``as_extra()`` is what the verdict's ``extra.part_choice`` holds)."""

    parts: int
    by: str  # "memory", "cores", "one part" (a small trace that fits) or "given" (--spark-parts)
    events: int | None
    memory_bytes: int | None
    memory_from: str
    tasks_per_executor: int
    cores: int
    #: a bucketed trace (``by == "buckets"``): the events of its largest part (the shared ones with its bucket's)
    largest: int | None = None
    #: a bucketed trace whose largest part does not fit: the buckets that would (``keyshared convert --buckets``)
    buckets_needed: int | None = None

    def share_bytes(self) -> int | None:
        """What a task has for its part's state: its memory less :data:`TASK_OVERHEAD_BYTES` (at least
        :data:`MIN_SHARE_BYTES`)."""
        per_task = self.per_task_bytes()
        return None if per_task is None else max(MIN_SHARE_BYTES, per_task - TASK_OVERHEAD_BYTES)

    def per_task_bytes(self) -> int | None:
        if self.memory_bytes is None:
            return None
        return self.memory_bytes // max(1, self.tasks_per_executor)

    def reason(self) -> str:
        """One sentence: what was chosen and from what."""
        if self.by == "buckets":
            return self._bucket_reason()
        if self.by == "given":
            return f"{self.parts} part{'s' if self.parts != 1 else ''}, as given (--spark-parts)"
        head = f"{self.parts} part{'s' if self.parts != 1 else ''}"
        if self.events is None or self.memory_bytes is None:
            return f"{head}, the cores Spark has ({self.cores}): the trace's size or the memory is not known"
        per_task = self.per_task_bytes() or 0
        share = math.ceil(self.events / self.parts)
        fits = (
            f"{self.events:,} events at {SPARK_BYTES_PER_EVENT} bytes each, {share:,} per part; "
            f"{format_bytes(self.memory_bytes)} per executor ({self.memory_from}) over {self.tasks_per_executor} "
            f"task{'s' if self.tasks_per_executor != 1 else ''} at once is {format_bytes(per_task)} per task,"
            f" {format_bytes(max(0, per_task - TASK_OVERHEAD_BYTES))} of it for its share after"
            f" {format_bytes(TASK_OVERHEAD_BYTES)} for the worker"
        )
        why = {
            "memory": "chosen by memory",
            "cores": f"the cores Spark has ({self.cores}), which fit",
            "one part": "a small trace that fits one part",
        }[self.by]
        return f"{head}, {why}: {fits}"

    def _bucket_reason(self) -> str:
        head = f"{self.parts} part{'s' if self.parts != 1 else ''}, the trace's buckets (its layout's; --spark-parts"
        head += " does not apply)"
        if self.largest is None or self.memory_bytes is None:
            return f"{head}: the memory is not known"
        per_task, share = self.per_task_bytes() or 0, self.share_bytes() or 0
        need = self.largest * SPARK_BYTES_PER_EVENT
        said = (
            f"{head}: the largest pass reads {self.largest:,} events, about {format_bytes(need)} at"
            f" {SPARK_BYTES_PER_EVENT} bytes each, against {format_bytes(share)} a task has for it"
            f" ({format_bytes(self.memory_bytes)} per executor ({self.memory_from}) over {self.tasks_per_executor}"
            f" task{'s' if self.tasks_per_executor != 1 else ''} at once is {format_bytes(per_task)} per task, less"
            f" {format_bytes(TASK_OVERHEAD_BYTES)} for the worker)"
        )
        if self.buckets_needed is None:
            return f"{said}: it fits"
        return (
            f"{said}: it may not fit; convert the trace with more buckets (keyshared convert TRACE OUT --buckets"
            f" {self.buckets_needed}) or give the executors more memory"
        )

    def as_extra(self) -> dict[str, Any]:
        if self.by == "buckets":
            return {
                "parts": self.parts,
                "by": self.by,
                "events": self.events,
                "largest_part_events": self.largest,
                "fits": self.buckets_needed is None,
                "buckets_needed": self.buckets_needed,
                "memory_per_executor": self.memory_bytes,
                "memory_from": self.memory_from,
                "tasks_per_executor": self.tasks_per_executor,
                "bytes_per_event": SPARK_BYTES_PER_EVENT,
                "reason": self.reason(),
            }
        return {
            "parts": self.parts,
            "by": self.by,
            "events": self.events,
            "memory_per_executor": self.memory_bytes,
            "memory_from": self.memory_from,
            "tasks_per_executor": self.tasks_per_executor,
            "bytes_per_event": SPARK_BYTES_PER_EVENT,
            "reason": self.reason(),
        }


def choose_parts(
    events: int | None,
    memory_bytes: int | None,
    cores: int,
    *,
    tasks_per_executor: int | None = None,
    small: bool = False,
    memory_from: str = "",
    bytes_per_event: int = SPARK_BYTES_PER_EVENT,
) -> PartChoice:
    """The fewest parts whose share of ``events`` fits a task's memory, at least the ``cores`` (1 for a ``small``
    trace), a multiple of ``cores`` when above them (every wave of tasks full).

    A task's memory is ``memory_bytes`` (an executor's, for its Python workers) divided among the
    ``tasks_per_executor`` it runs at once (default: ``cores``, one executor, as a local master has), less
    :data:`TASK_OVERHEAD_BYTES`.  Unknown events or memory: the cores (or one part for a small trace).
    """
    cores = max(1, cores)
    slots = max(1, tasks_per_executor if tasks_per_executor is not None else cores)
    least = 1 if small else cores
    if events is None or memory_bytes is None:
        return PartChoice(least, "one part" if small else "cores", events, memory_bytes, memory_from, slots, cores)
    share_bytes = max(MIN_SHARE_BYTES, memory_bytes // slots - TASK_OVERHEAD_BYTES)
    needed = max(1, math.ceil(events * bytes_per_event / share_bytes))
    if needed <= least:
        return PartChoice(least, "one part" if small else "cores", events, memory_bytes, memory_from, slots, cores)
    parts = math.ceil(needed / cores) * cores
    return PartChoice(parts, "memory", events, memory_bytes, memory_from, slots, cores)


def bucket_choice(memory: PartChoice, buckets: int, largest: int) -> PartChoice:
    """The parts of a trace in the bucketed layout: its ``buckets`` (one task each, reading its own files), and
    whether the ``largest`` pass (a bucket's events with the shared ones, or an identity file, from the
    manifest) fits a task's
    memory as ``memory`` (:func:`choose_for_context` of the trace's events) found it; when it does not, the
    bucket count that would (:attr:`PartChoice.buckets_needed`: the largest part's need over a task's share,
    times the buckets, a multiple of the cores), which only a conversion can give (a bucket is never split)."""
    needed = None
    share = memory.share_bytes()
    if share is not None and largest * SPARK_BYTES_PER_EVENT > share:
        factor = math.ceil(largest * SPARK_BYTES_PER_EVENT / share)
        needed = math.ceil(max(buckets + 1, buckets * factor) / memory.cores) * memory.cores
    return PartChoice(
        buckets,
        "buckets",
        memory.events,
        memory.memory_bytes,
        memory.memory_from,
        memory.tasks_per_executor,
        memory.cores,
        largest,
        needed,
    )


def layout_choice(memory: PartChoice, layout: Any) -> PartChoice:
    """A bucketed trace's parts are its buckets: whether the largest pass a task runs (a bucket's scope pass, with
    the shared events, or its identity pass: in the earlier layout split by producer, every id of its producers;
    in a one-pass layout, the scope pass), from the manifest, fits a task's memory, and the bucket count that would
    if not (:func:`bucket_choice`).  A receipts file adds its rows to the pass that reads it: few, and they keep
    little (a producer's highest ids), but read all the same."""
    receipts = layout.receipt_events or (0,) * layout.buckets
    pairs = list(zip(layout.bucket_events, layout.identity_events, receipts, strict=True))
    scope = max(layout.shared + b + (r if layout.one_pass else 0) for b, _i, r in pairs)
    identity = max(i + (0 if layout.one_pass else r) for _b, i, r in pairs)
    largest = max(scope, identity)
    return bucket_choice(memory, layout.buckets, largest)


def parse_memory(text: str) -> int:
    """Bytes in a JVM memory string as Spark reads it (``512m``, ``4g``, ``2gb``, ``1024``: MiB without a unit).

    Raises ``ValueError`` naming the value for anything else.
    """
    m = re.fullmatch(r"\s*(\d+)\s*([bkmgtp]?)b?\s*", text.lower())
    if m is None:
        raise ValueError(f"{text!r} is not a memory size (e.g. 512m, 4g)")
    return int(m.group(1)) * _UNITS[m.group(2)]


def format_bytes(n: int) -> str:
    """``n`` bytes as a short size (``1.5 GB``, ``512 MB``)."""
    if n >= 1024**3:
        return f"{n / 1024**3:.1f} GB"
    return f"{n / _MIB:.0f} MB"


def spark_memory(conf: Any, master: str, *, user_keys: set[str] | frozenset[str] = frozenset()) -> tuple[int, str]:
    """The memory an executor's Python workers may use, and where it came from, read from a SparkConf.

    In this order: ``spark.executor.pyspark.memory`` (the workers' own limit, which Spark enforces); on a
    cluster, ``spark.executor.memory`` (Spark's default 1g); on a local master, ``spark.driver.memory`` if the
    user set it (``user_keys``: ``--spark-conf`` or ``SPARK_CONF_DIR``'s ``spark-defaults.conf``), else the
    memory this machine has available — a local master's Python workers live beside the driver, and the 1g heap
    ``keyshared`` gives its own driver JVM (which holds no row of the trace) bounds nothing of theirs.
    """

    def get(key: str) -> str | None:
        value = conf.get(key, None)
        return None if value is None else str(value)

    pyspark_memory = get("spark.executor.pyspark.memory")
    if pyspark_memory:
        return parse_memory(pyspark_memory), "spark.executor.pyspark.memory"
    if not master.strip().startswith("local"):
        return parse_memory(get("spark.executor.memory") or "1g"), "spark.executor.memory"
    driver = get("spark.driver.memory")
    if driver and "spark.driver.memory" in user_keys:
        return parse_memory(driver), "spark.driver.memory"
    return available_memory(), "available on this machine"


def available_memory() -> int:
    """The memory this machine has available now (``MemAvailable``), else its total; 1 GiB if neither is known."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 1024 * _MIB


def defaults_file_settings() -> dict[str, str]:
    """The settings ``$SPARK_CONF_DIR/spark-defaults.conf`` holds (a Java properties file: ``key value``,
    ``key=value`` or ``key: value``; ``#`` and ``!`` start comments), where a Spark user keeps theirs."""
    directory = os.environ.get("SPARK_CONF_DIR")
    if not directory:
        return {}
    settings: dict[str, str] = {}
    try:
        with open(os.path.join(directory, "spark-defaults.conf"), encoding="utf-8") as fh:
            for line in fh:
                text = line.strip()
                if not text or text[0] in "#!":
                    continue
                m = re.match(r"([^\s=:]+)\s*[=:\s]\s*(.*)", text)
                if m is not None:
                    settings[m.group(1)] = m.group(2).strip()
    except OSError:
        return {}
    return settings


def choose_for_context(
    context: Any,
    master: str,
    events: int | None,
    *,
    small: bool = False,
    user_keys: set[str] | frozenset[str] = frozenset(),
) -> PartChoice:
    """:func:`choose_parts` for a started SparkContext: its cores (``defaultParallelism``), its executors' memory
    (:func:`spark_memory`) and the tasks an executor runs at once (a local master: all; a cluster:
    ``spark.executor.cores``, else the cores over the executors registered so far — fewer registered means more
    tasks assumed per executor, so more parts: the safe side)."""
    conf = context.getConf()
    cores = max(1, int(context.defaultParallelism))
    memory, source = spark_memory(conf, master, user_keys=user_keys)
    if master.strip().startswith("local"):
        slots = cores
    else:
        given = conf.get("spark.executor.cores", None)
        slots = int(given) if given else max(1, cores // _executors(context))
    return choose_parts(events, memory, cores, tasks_per_executor=slots, small=small, memory_from=source)


def _executors(context: Any) -> int:
    """The executors registered with a cluster's driver (its block managers, less the driver's own), at least 1."""
    try:
        return max(1, int(context._jsc.sc().getExecutorMemoryStatus().size()) - 1)
    except Exception:  # not a JVM-backed context: one executor, the safe side
        return 1
