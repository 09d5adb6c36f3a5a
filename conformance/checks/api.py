"""``check_trace``: one call from a trace (file, events or recorder) to a verdict, on either engine.

Every check runs guarded (Jepsen's ``check-safe``): :class:`TraceChecker` composes the streaming delivery checks
(:class:`~conformance.checks.streaming.StreamingChecker`) and, on a failover run, the replication check
(:mod:`conformance.checks.replication`).  A check that raises stops being fed; what it found before stays, the
verdict becomes ``unknown`` (unless another finding already makes it ``invalid``: invalid > unknown > valid)
with the check named in ``Verdict.crashed`` and the exception in the notes.  A malformed trace is not a crash:
``TraceFormatError`` (an ``InvalidArgument``) propagates, as bad input.
"""

from __future__ import annotations

import contextlib
import gc
import traceback
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from conformance.checks.replication import ReplicationCheck, ReplicationFindings, is_replication_run
from conformance.checks.streaming import StreamingChecker
from conformance.profiles import Profile, resolve_profile
from conformance.trace.events import Event
from conformance.trace.header import TraceHeader
from conformance.trace.reader import FastPathUnavailable, TraceSource, open_trace
from conformance.verdict import Verdict, build_verdict
from conformance.violations import Kind, Violation
from reference_model.errors import InvalidArgument

__all__ = [
    "ENGINES",
    "TraceChecker",
    "check_events",
    "check_source",
    "check_trace",
    "collector_paused",
    "crash_note",
    "crashed_check",
    "with_event_checks",
    "with_replication",
]

ENGINES: tuple[str, ...] = ("python", "spark")

#: Modules of ``conformance/checks`` that compose or hold state rather than decide a property.
_PLUMBING = frozenset({"api", "streaming", "_state", "__init__", "_build"})


def crashed_check(exc: BaseException, default: str) -> str:
    """The property module (``ordering``, ``replication``, ...) deepest in ``exc``'s traceback, else ``default``."""
    name = default
    for frame in traceback.extract_tb(exc.__traceback__):
        path = Path(frame.filename)
        if path.parent.name == "checks" and path.parent.parent.name == "conformance" and path.stem not in _PLUMBING:
            name = path.stem
    return name


def crash_note(check: str, exc: BaseException, at: int | None) -> str:
    """One line naming the check, where it crashed and the exception (no traceback)."""
    where = ""
    frames = traceback.extract_tb(exc.__traceback__)
    if frames:
        last = frames[-1]
        where = f" ({Path(last.filename).name}:{last.lineno} in {last.name})"
    when = "at the end" if at is None else f"at E{at}"
    return f"check {check!r} crashed {when}: {type(exc).__name__}: {exc}{where}; the verdict is unknown"


class TraceChecker:
    """Every check of one trace, each guarded; the same entry points as the streaming checker.

    ``feed(event)`` returns the violations the event revealed; ``feed_batch(batch)`` is the streaming engine's
    fast path (not used for failover runs, whose replication check reads events); ``finish()`` the verdict.
    """

    def __init__(self, header: TraceHeader | None = None, profile: str | Profile | None = None) -> None:
        self.streaming: StreamingChecker | None = StreamingChecker(header, profile)
        self.header = self.streaming.header
        self.profile = self.streaming.profile
        self.replication: ReplicationCheck | None = (
            ReplicationCheck(self.header) if is_replication_run(self.header) else None
        )
        self.crashed: list[str] = []
        self.crash_notes: list[str] = []
        self._delivery: StreamingChecker = self.streaming  # kept after a crash, for what it found before
        #: events handed to the streaming checks until they ended (a batch counted when handed in, the one they
        #: crashed in included): how far a check that ran out of memory got (``commands._out_of_memory``)
        self.events_read = 0

    @property
    def needs_events(self) -> bool:
        """True when a check reads typed events (the columnar fast path cannot feed it)."""
        return self.replication is not None

    def _crash(self, default: str, exc: Exception, at: int | None) -> None:
        name = crashed_check(exc, default)
        self.crashed.append(name)
        self.crash_notes.append(crash_note(name, exc, at))

    def feed(self, event: Event) -> list[Violation]:
        found: list[Violation] = []
        if self.streaming is not None:
            self.events_read += 1
            try:
                found = self.streaming.feed(event)
            except InvalidArgument:
                raise
            except Exception as exc:
                self._crash("streaming", exc, event.i)
                self.streaming = None
        if self.replication is not None:
            try:
                self.replication.feed(event)
            except Exception as exc:
                self._crash("replication", exc, event.i)
                self.replication = None
        return found

    def feed_batch(self, batch: Any) -> None:
        if self.streaming is None:
            return
        self.events_read += batch.num_rows
        try:
            self.streaming.feed_batch(batch)
        except (InvalidArgument, FastPathUnavailable):
            raise
        except Exception as exc:
            self._crash("streaming", exc, None)
            self.streaming = None

    def finish(self) -> Verdict:
        base: Verdict | None = None
        if self.streaming is not None:
            try:
                base = self.streaming.finish()
            except Exception as exc:
                self._crash("streaming", exc, None)
        findings = ReplicationFindings()
        if self.replication is not None:
            try:
                findings = self.replication.finish()
            except Exception as exc:
                self._crash("replication", exc, None)
        if base is not None and not self.crashed and not (findings.violations or findings.notes or findings.unjudged):
            return base
        if base is not None:
            found = [*base.violations, *base.allowed]
            notes, unjudged, events = list(base.notes), list(base.unjudged), base.events
        else:
            delivery = self._delivery
            found, notes, unjudged, events = list(delivery.found), list(delivery.notes), [], delivery.events
        return build_verdict(
            [*found, *findings.violations],
            self.profile,
            events=events,
            notes=[*self.crash_notes, *notes, *findings.notes],
            unjudged=[*unjudged, *findings.unjudged],
            engine="python",
            crashed=self.crashed,
        )


def with_replication(verdict: Verdict, events: Iterable[Event], header: TraceHeader) -> Verdict:
    """``verdict`` (from an engine that judges delivery only) with the replication check's findings added.

    ``undelivered`` witnessed on a cluster a subscription failed over from is the replication check's
    business there (``skipped_after_failover``), so it is dropped.  The check runs guarded.
    """
    check = ReplicationCheck(header)
    crashed: list[str] = []
    notes: list[str] = []
    try:
        for event in events:
            check.feed(event)
        findings = check.finish()
        left = check.left_marks()
    except InvalidArgument:
        raise
    except Exception as exc:
        name = crashed_check(exc, "replication")
        crashed.append(name)
        notes.append(crash_note(name, exc, None))
        findings, left = ReplicationFindings(), set()
    kept = [
        v
        for v in (*verdict.violations, *verdict.allowed)
        if not (v.kind is Kind.UNDELIVERED and v.events and v.events[0] in left)
    ]
    return build_verdict(
        [*kept, *findings.violations],
        verdict.profile,
        events=verdict.events,
        notes=[*notes, *verdict.notes, *findings.notes],
        unjudged=[*verdict.unjudged, *findings.unjudged],
        engine=verdict.engine,
        crashed=[*verdict.crashed, *crashed],
    )


def with_event_checks(verdict: Verdict, source: TraceSource) -> Verdict:
    """A delivery-only engine's verdict on ``source`` completed with the checks that read events (a failover
    run's replication check); unchanged for other traces.  Every engine entry point calls this."""
    if not is_replication_run(source.header):
        return verdict
    return with_replication(verdict, source.events(), source.header)


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

        try:
            verdict = check_with_spark(trace, profile, spark=spark, header=header)
        except (InvalidArgument, ImportError):
            raise  # bad input, or no Spark to run on: not a crashed check
        except Exception as exc:
            known = trace.header if isinstance(trace, TraceSource) else header
            name = crashed_check(exc, "spark")
            return build_verdict(
                [],
                resolve_profile(profile, known or TraceHeader.unknown()),
                events=0,
                notes=[crash_note(name, exc, None)],
                engine="spark",
                crashed=[name],
            )
        if isinstance(trace, TraceSource):
            return with_event_checks(verdict, trace)
        if header is not None and is_replication_run(header) and isinstance(trace, (list, tuple)):
            return with_replication(verdict, trace, header)
        return verdict
    if isinstance(trace, TraceSource):
        return check_source(trace, profile, use_threads=use_threads)
    if header is None and hasattr(trace, "header") and hasattr(trace, "events"):
        header, trace = trace.header, trace.events or ()
    return check_events(trace, header=header, profile=profile)


def check_source(
    source: TraceSource,
    profile: str | Profile | None = None,
    *,
    use_threads: bool = False,
    keep: list[Any] | None = None,
) -> Verdict:
    """The streaming engine over a stored trace, on the columnar fast path when it can be used.

    The cyclic garbage collector is paused meanwhile (:func:`collector_paused`).

    ``keep``: a list the checker is appended to, so that its state outlives the call (a process that ends
    next, the ``keyshared`` program, then never spends the time freeing millions of objects one by one).
    """
    if source.format == "bucketed":  # bucket by bucket, in memory bounded by the largest
        from conformance.checks.buckets import check_bucketed

        with collector_paused():
            return with_event_checks(check_bucketed(source.layout, profile), source)
    with collector_paused():
        checker = TraceChecker(source.header, profile)
        if keep is not None:
            keep.append(checker)
        try:
            if checker.needs_events:
                raise FastPathUnavailable("a check of this trace reads typed events")
            for batch in source.row_batches(use_threads=use_threads):
                checker.feed_batch(batch)
        except FastPathUnavailable:
            checker = TraceChecker(source.header, profile)
            if keep is not None:
                keep.append(checker)
            for event in source.events():
                checker.feed(event)
        return checker.finish()


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause CPython's cyclic garbage collector for a check, and restore it afterwards, whatever happens.

    A check allocates millions of small objects that live until its end, and generational collections would
    rescan them again and again (a third of the run time on large traces).  Every engine's check of a trace
    runs under this: :func:`check_source`, and each Spark task (:func:`conformance.spark.engine.check_task`).
    A collector already paused by the caller stays paused.
    """
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def check_events(
    events: Iterable[Event], *, header: TraceHeader | None = None, profile: str | Profile | None = None
) -> Verdict:
    """Every check over events in memory (validated one by one), each guarded."""
    checker = TraceChecker(header, profile)
    for event in events:
        checker.feed(event)
    return checker.finish()
