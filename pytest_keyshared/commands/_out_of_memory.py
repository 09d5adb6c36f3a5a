"""Running out of memory is not a bug in keyshared: one line saying what happened, how far the check got and what
to do (the Spark engine, or more memory or parts for it; on the Python engine also ``keyshared convert`` into
the bucketed layout, checked bucket by bucket), exit 3 (a harness failure, not bad input).

Recognised: Python's ``MemoryError`` (pyarrow's ``ArrowMemoryError`` is one), raised by the reader or recorded by
the checker as a check's crash (a crash note naming a ``MemoryError``: the verdict would otherwise be ``unknown``
with a crashed check); on Spark, a job that failed with a JVM ``OutOfMemoryError``, a worker's ``MemoryError``,
a Python worker or executor killed (exit code 137 or 143, the kernel's or a cluster manager's OOM kill) or an
executor lost.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from reference_model.errors import KeySharedError

__all__ = ["OutOfMemory", "buckets_for", "crashed_for_memory", "on_python", "on_spark", "spark_memory_failure"]

#: What a Spark job's error text says when it died for memory (first match names it).
_SPARK_SIGNS = (
    ("java.lang.OutOfMemoryError", "a JVM ran out of memory (java.lang.OutOfMemoryError)"),
    ("MemoryError", "a Python worker ran out of memory (MemoryError)"),
    ("exit code 137", "a process was killed for memory (exit code 137)"),
    ("exit code 143", "an executor was killed (exit code 143, as a cluster manager does past its memory limit)"),
    ("Python worker exited unexpectedly", "a Python worker died (as one killed for memory does)"),
    ("ExecutorLostFailure", "an executor was lost (as one killed for memory is)"),
)


class OutOfMemory(KeySharedError):
    """A check ran out of memory: what happened, how far it got, what to do (exit 3)."""

    exit_code = 3


def crashed_for_memory(checker: Any) -> str | None:
    """``MemoryError in check 'NAME'`` for a check that died of a ``MemoryError`` (its crash note in
    ``TraceChecker.crash_notes``), if any."""
    for note in getattr(checker, "crash_notes", ()) or ():
        m = re.match(r"check '([^']+)' crashed [^:]*: (\w*MemoryError)\b", str(note))
        if m is not None:
            return f"{m.group(2)} in check {m.group(1)!r}"
    return None


def events_checked(checker: Any) -> int | None:
    """How many events the checker had taken in (its streaming checker's count, kept after a crash)."""
    streaming = getattr(checker, "streaming", None) or getattr(checker, "_delivery", None)
    count = getattr(streaming, "events", None)
    return count if isinstance(count, int) else None


#: What a bucket of a trace the Python engine ran out of memory on is given, at its bytes per event, to choose
#: the bucket count its line names (the figures: 3M events in 48 buckets peaked at 235 MB, docs/checker.md).
BUCKET_BUDGET_BYTES = 1024**3


def buckets_for(total: int | None) -> int:
    """The buckets a trace of ``total`` events is converted into so that each fits :data:`BUCKET_BUDGET_BYTES` on
    the Python engine, at least the converter's default."""
    import math

    from conformance.spark.parts import PYTHON_BYTES_PER_EVENT
    from conformance.trace.buckets import DEFAULT_BUCKETS

    if not total:
        return DEFAULT_BUCKETS
    return max(DEFAULT_BUCKETS, math.ceil(total * PYTHON_BYTES_PER_EVENT / BUCKET_BUDGET_BYTES))


def events_read(checker: Any) -> int | None:
    """How many events had been handed to the checker (the batch it was checking included)."""
    count = getattr(checker, "events_read", None)
    return count if isinstance(count, int) else None


def on_python(
    trace: str,
    what: str,
    done: int | None,
    total: int | None,
    *,
    bucketed: int | None = None,
    read: int | None = None,
) -> OutOfMemory:
    """The error for the Python engine: ``what`` failed after ``done`` of ``total`` events; check it on Spark, or
    convert it into the bucketed layout, which this engine checks bucket by bucket (``bucketed``: the trace is
    in that layout already, in that many buckets, too large: the original trace is to be converted into more)."""
    from conformance.spark.parts import PYTHON_BYTES_PER_EVENT, format_bytes
    from conformance.trace.buckets import bucketed_name

    of = f" of its {total:,}" if total else ""
    far = "before checking any event" if not done else f"after checking {done:,}{of} events"
    if read and read > (done or 0):  # inside a batch: what was read says how far, what was checked how much
        far = f"after reading {read:,}{of} events ({done or 0:,} of them checked; the rest in the batch being checked)"
    need = ""
    if total:
        size = format_bytes(total * PYTHON_BYTES_PER_EVENT)
        need = f" (it needs about {size}, {PYTHON_BYTES_PER_EVENT} bytes per event)"
    command = f"keyshared check {shlex.quote(trace)} --engine spark"
    n = buckets_for(total)
    if bucketed:
        n = max(n, 2 * bucketed)
        convert = f"; or convert the original trace into more buckets (keyshared convert TRACE OUT --buckets {n})"
    else:
        out = shlex.quote(str(bucketed_name(trace)))
        convert = (
            f"; or convert it into the bucketed layout, which this engine checks bucket by bucket in bounded memory:"
            f" keyshared convert {shlex.quote(trace)} {out} --buckets {n} && keyshared check {out}"
        )
    return OutOfMemory(
        f"the Python engine ran out of memory checking {trace} {far}{need}: {what}. Check it on Spark, which splits it"
        f" into parts that fit the memory it has: {command}{convert}"
    )


def spark_memory_failure(exc: BaseException) -> str | None:
    """What a failed Spark job's error says about memory, or None when it does not look like memory."""
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, MemoryError):
        return f"the driver ran out of memory ({type(exc).__name__})"
    for sign, meaning in _SPARK_SIGNS:
        if sign in text:
            return meaning
    return None


def on_spark(trace: str, meaning: str, choice: Any, master: str) -> OutOfMemory:
    """The error for the Spark engine: what died, the parts it ran with and why (``choice``, a
    :class:`~conformance.spark.parts.PartChoice`), and the settings that give it room: more memory (the setting
    the choice read, else the executors' memory), which the part count follows, or more parts."""
    parts = getattr(choice, "parts", None)
    ran = f"; it ran {choice.reason()}" if choice is not None else ""
    memory_key = getattr(choice, "memory_from", "")
    if not memory_key.startswith("spark."):
        memory_key = "spark.driver.memory" if master.strip().startswith("local") else "spark.executor.memory"
    more = f"--spark-parts {2 * parts}" if parts else "--spark-parts N (more than the cores)"
    command = f"keyshared check {shlex.quote(trace)} --engine spark --spark-master {shlex.quote(master)}"
    by = getattr(choice, "by", "")
    follows = "" if by in ("given", "buckets") else ", which the part count follows"
    split = f"split the trace into more parts ({command} {more})"
    if by == "buckets":  # a bucketed trace's parts are its buckets: more of them takes a conversion
        buckets = getattr(choice, "buckets_needed", None) or 2 * (parts or 1)
        split = f"convert it into more buckets (keyshared convert {shlex.quote(trace)} OUT --buckets {buckets})"
    return OutOfMemory(
        f"Spark ran out of memory checking {trace}: {meaning}{ran}. Give it more memory{follows}"
        f" ({command} --spark-conf {memory_key}=8g), or {split}"
    )
