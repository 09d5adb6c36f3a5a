"""``check_trace``: one call from a trace (file, events or recorder) to a verdict, on either engine."""

from __future__ import annotations

import gc
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from conformance.checks.streaming import StreamingChecker
from conformance.profiles import Profile
from conformance.trace.events import Event
from conformance.trace.header import TraceHeader
from conformance.trace.reader import FastPathUnavailable, TraceSource, open_trace
from conformance.verdict import Verdict
from reference_model.errors import InvalidArgument

__all__ = ["ENGINES", "check_events", "check_source", "check_trace"]

ENGINES: tuple[str, ...] = ("python", "spark")


def check_trace(
    trace: str | Path | TraceSource | Iterable[Event] | Any,
    profile: str | Profile | None = None,
    engine: str = "python",
    *,
    header: TraceHeader | None = None,
    spark: Any = None,
    use_threads: bool = False,
) -> Verdict:
    """Check a trace and return its :class:`~conformance.verdict.Verdict`.

    ``trace``: a path (JSON Lines, gzip or Parquet), an opened :class:`TraceSource`, an object with ``header``
    and ``events`` (a ``TraceWriter``), or an iterable of :class:`Event` (then ``header`` gives the contract).
    ``profile``: a profile name or :class:`Profile`; None derives it from the header.  ``engine``: ``python``
    (streaming, one pass) or ``spark`` (PySpark; uses ``spark``, else the active SparkSession — this library
    never starts one).  A malformed trace raises ``TraceFormatError`` (an ``InvalidArgument``).
    """
    if engine not in ENGINES:
        from reference_model.errors import did_you_mean

        raise InvalidArgument(f"Unknown engine {engine!r}.{did_you_mean(str(engine), ENGINES)} Choices: python, spark.")
    if isinstance(trace, (str, Path)):
        trace = open_trace(trace)
    if engine == "spark":
        from conformance.spark import check_with_spark

        return check_with_spark(trace, profile, spark=spark, header=header)
    if isinstance(trace, TraceSource):
        return check_source(trace, profile, use_threads=use_threads)
    if header is None and hasattr(trace, "header") and hasattr(trace, "events"):
        header, trace = trace.header, trace.events or ()
    return check_events(trace, header=header, profile=profile)


def check_source(source: TraceSource, profile: str | Profile | None = None, *, use_threads: bool = False) -> Verdict:
    """The streaming engine over a stored trace, on the columnar fast path when it can be used.

    The cyclic garbage collector is paused meanwhile: the engine allocates millions of small objects that
    live until the end, and CPython's generational collections would rescan them again and again (a third
    of the run time on large traces).  It is restored afterwards, whatever happens.
    """
    paused = gc.isenabled()
    gc.disable()
    try:
        checker = StreamingChecker(source.header, profile)
        try:
            for batch in source.batches(use_threads=use_threads):
                checker.feed_batch(batch)
        except FastPathUnavailable:
            checker = StreamingChecker(source.header, profile)
            for event in source.events():
                checker.feed(event)
        return checker.finish()
    finally:
        if paused:
            gc.enable()


def check_events(
    events: Iterable[Event], *, header: TraceHeader | None = None, profile: str | Profile | None = None
) -> Verdict:
    """The streaming engine over events in memory (validated one by one)."""
    checker = StreamingChecker(header, profile)
    for event in events:
        checker.feed(event)
    return checker.finish()
