"""The PySpark engine: the streaming checker over parts of the trace, in Spark's Python workers; one verdict.

The rules are not written here: every part runs the streaming checker itself
(:mod:`conformance.checks.partition`) and the driver merges the parts with
:func:`~conformance.checks.partition.merge_parts`, so both engines judge with the same code.  This module only
runs the parts.

:func:`run_tasks` (stored traces this machine's executors can read, and events in memory): one Spark job of one
task per (trace, part); each task reads its trace with pyarrow and checks its part.  A trace whose acks carry
their message's key (this project's recorders write them so) is split by key: each task routes the events
itself and returns its part's footprint, and the driver keeps the verdict only if no message entry, uid or
(producer, seq) lies in two parts (:mod:`conformance.spark.router`); the driver reads nothing of the trace but a
first batch.  A stored trace whose acks carry no key, or whose split by key did not hold, is split by keys each
task resolves itself (:class:`~conformance.spark.router.Resolution`: its acks go where their messages' keys go),
proven the same way; the driver still reads nothing.  Only a trace whose resolved split did not hold either, and
events in memory, are split by a plan (:mod:`conformance.spark.split`): made once by the driver for a stored
trace (:func:`plan_trace`), by each task for events in memory.  Each task of a Parquet trace validates and
decodes only its own rows (:mod:`conformance.spark.rows`).  Nothing but a few result rows crosses the JVM: no
shuffle.  Many small traces share one job (the differential tests check 240 in one).

:func:`check_frames` (a DataFrame: a URI only Spark reads, ``hdfs://``, ``s3a://``): Spark reads the trace,
:mod:`conformance.spark.route` routes its rows with windows, and one ``groupBy(tid, pass, part).applyInArrow``
runs the same per-part checker — two shuffles, much slower, for the inputs the tasks cannot open.  Each part
is validated there as the reader validates a batch (a malformed trace: one-line ``TraceFormatError``).

A planned split is exact when each message's publish and receive events carry one key, and each uid's
publishes one producer (what every broker and client writes); otherwise the trace is checked in one part.  The
session is the caller's.
"""

from __future__ import annotations

import dataclasses
import pickle
from collections.abc import Sequence
from typing import Any

from conformance.checks.partition import PartChecker, PartResult, check_part, merge_parts, needs_whole_trace
from conformance.profiles import Profile
from conformance.spark.route import IDENTITY, SCOPE, WHOLE
from conformance.spark.split import Plan
from conformance.trace.events import Event
from conformance.trace.header import TraceHeader
from conformance.trace.reader import TraceSource
from conformance.verdict import Verdict
from reference_model.errors import InvalidArgument

__all__ = [
    "active_session", "check_frames", "check_many", "check_routed_task", "check_task", "check_with_spark",
    "looks_routable", "needs_plan", "plan_trace", "run_tasks", "warm_workers",
]  # fmt: skip

_OUT_SCHEMA = "tid long, pass int, part int, split_exact boolean, result binary"


def active_session(spark: Any) -> Any:
    """``spark`` (a SparkSession, or a SparkContext: the tasks need Spark Core only), else the active session."""
    if spark is not None:
        return spark
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise InvalidArgument(
            "engine='spark' needs pyspark: pip install 'pytest-keyshared[spark]' (and a Java 17 runtime)"
        ) from None
    session = SparkSession.getActiveSession()
    if session is None:
        raise InvalidArgument(
            "engine='spark' needs a SparkSession: pass spark=..., or start one first, e.g."
            " conformance.spark.build_session('local[*]') (`keyshared check --engine spark` does this)"
        )
    return session


def check_with_spark(
    trace: Any,
    profile: str | Profile | None = None,
    *,
    spark: Any = None,
    header: TraceHeader | None = None,
    validate: bool = True,
    parts: int | None = None,
    plan: Plan | None = None,
) -> Verdict:
    """Check one trace (a :class:`TraceSource`, a path or URI Spark reads, a TraceWriter-like object or
    events) on Spark.

    A stored trace this machine has (a path, ``file://``) is read by every Spark task itself through the Python
    reader's fast path, which validates it (``validate`` is kept for callers: such a trace is always
    validated); a malformed trace fails the job, and the caller gets the reader's one-line error, as on the
    Python engine.  Events are validated here.  ``plan``: the split, if the caller made it already
    (:func:`plan_trace`; ``keyshared check`` does while Spark starts).
    """
    from conformance.spark.load import path_frame

    session = active_session(spark)
    if isinstance(trace, str) and _local_path(trace) is not None:
        from conformance.trace.reader import open_trace

        trace = open_trace(_local_path(trace))  # type: ignore[arg-type]
    if isinstance(trace, TraceSource):
        return _check_source(session, trace, profile, parts, plan)
    if isinstance(trace, str):  # a URI only Spark reads (hdfs://, s3a://, ...): Spark parses it, parts validate
        df, head = path_frame(session, trace, header)
        return check_frames(session, df, {0: head}, profile, parts=parts, names={0: trace})[0]
    if header is None and hasattr(trace, "header") and hasattr(trace, "events"):
        header, trace = trace.header, trace.events or ()
    events = _validated(list(trace))
    head = header if header is not None else TraceHeader.unknown()
    return run_tasks(session, [(head, _in_memory(events))], profile, parts=parts)[0]


def _local_path(trace: str) -> str | None:
    """The file a path or ``file://`` URI names, if this machine has it (executors are told its absolute path)."""
    import os

    path = trace[len("file://") :] if trace.startswith("file://") else trace
    if "://" in path or not os.path.exists(path):
        return None
    return os.path.abspath(path)


def _check_source(
    session: Any, source: TraceSource, profile: str | Profile | None, parts: int | None, plan: Plan | None
) -> Verdict:
    """A stored trace, read by every task itself (validated there: a malformed trace fails the job, and the
    error the caller sees is the reader's, read again here)."""
    from conformance.trace.reader import FastPathUnavailable

    if source.format == "bucketed":
        return _check_buckets(session, source, profile)
    path = str(source.path.resolve())
    try:
        return run_tasks(session, [(source.header, ("path", path))], profile, parts=parts, plans=[plan])[0]
    except Exception as failure:
        try:
            for _ in source.batches():  # the reader's own words for what is wrong (TraceFormatError)
                pass
        except FastPathUnavailable:  # valid, but not on the columnar path: check its events, sent from here
            events = list(source.events())
            return run_tasks(session, [(source.header, _in_memory(events))], profile, parts=parts)[0]
        raise failure from None


def check_many(
    spark: Any,
    traces: Sequence[tuple[TraceHeader, Sequence[Event]]],
    profile: str | Profile | None = None,
    *,
    parts: int | None = None,
    whole: list[int] | None = None,
    routed: list[int] | None = None,
) -> list[Verdict]:
    """Check several traces in one Spark job (and a second for those whose split by key did not hold); verdicts
    in the same order (``whole``, ``routed``: see :func:`run_tasks`)."""
    session = active_session(spark)
    jobs = [(header, _in_memory(_validated(list(events)))) for header, events in traces]
    return run_tasks(session, jobs, profile, parts=parts, whole=whole, routed=routed)


def _validated(events: list[Event]) -> list[Event]:
    from conformance.trace.validation import EventValidator

    validator = EventValidator("events", unit="row")
    for event in events:
        validator.typed_event(event)
    return events


def check_frames(
    spark: Any,
    df: Any,
    headers: dict[int, TraceHeader],
    profile: str | Profile | None = None,
    *,
    parts: int | None = None,
    whole: list[int] | None = None,
    names: dict[int, str] | None = None,
) -> dict[int, Verdict]:
    """Check every trace of ``df`` (column ``tid``; ``headers`` gives each trace's contract).

    ``parts``: how many parts each pass splits a trace into (default: ``spark.sql.shuffle.partitions``).
    ``whole``: if given, receives the ids of the traces that had to be checked again in one part.
    Every part is validated as the Python reader validates a batch (Spark parsed the file, not the reader): a
    malformed trace raises :class:`~conformance.trace.validation.TraceFormatError` naming the trace
    (``names[tid]``, else ``trace <tid>``), the events where the problem is and the problem.
    """
    from pyspark.sql import functions as F

    n_parts = parts if parts is not None else int(spark.conf.get("spark.sql.shuffle.partitions"))
    if n_parts < 1:
        raise InvalidArgument(f"parts must be at least 1, not {n_parts}")
    results = _well_formed(_run(df, headers, profile, n_parts), names or {})
    inexact = sorted({(tid, pass_) for tid, pass_, _n, exact, _r in results if not exact})
    if inexact:  # those passes of those traces again, whole (the whole result stands in for the pass)
        tids = sorted({tid for tid, _p in inexact})
        again = {
            r[0]: r for r in _well_formed(_run(df.where(F.col("tid").isin(tids)), headers, profile, 1), names or {})
        }
        results = [r for r in results if (r[0], r[1]) not in set(inexact)]
        results += [(tid, pass_, 0, True, again[tid][4]) for tid, pass_ in inexact if tid in again]
    if whole is not None:
        whole.extend(sorted({tid for tid, _p in inexact}))
    return _merged([(tid, pass_, part, result) for tid, pass_, part, _exact, result in results], headers, profile)


def _merged(
    results: list[tuple[int, int, int, PartResult]], headers: dict[int, TraceHeader], profile: str | Profile | None
) -> dict[int, Verdict]:
    """Each trace's verdict from its parts' results (``(tid, pass, part, result)``)."""
    by_trace: dict[int, tuple[list[PartResult], list[PartResult]]] = {tid: ([], []) for tid in headers}
    for tid, pass_, _n, result in sorted(results, key=lambda r: (r[0], r[1], r[2])):
        scope, identity = by_trace.setdefault(tid, ([], []))
        if pass_ in (SCOPE, WHOLE):
            scope.append(result)
        if pass_ in (IDENTITY, WHOLE):
            identity.append(result)
    for tid, (scope, _identity) in by_trace.items():
        if not scope:  # no events: what the checker says of an empty trace (its notes, its unjudged kinds)
            scope.append(check_part(headers.get(tid), profile, []))
    return {
        tid: merge_parts(headers.get(tid), profile, scope, identity, engine="spark")
        for tid, (scope, identity) in by_trace.items()
    }


#: A trace as a task reads it: ``("path", absolute path)`` or ``("arrow", Arrow IPC stream of its events)``.
TaskInput = tuple[str, Any]


def _in_memory(events: Sequence[Event]) -> TaskInput:
    """Events sent to the tasks as an Arrow IPC stream (the columns of ``FAST_SCHEMA``)."""
    import pyarrow as pa

    from conformance.spark.load import events_table

    table = events_table([(0, events)]).drop_columns(["tid"])
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=65536)
    return ("arrow", sink.getvalue().to_pybytes())


def run_tasks(
    spark: Any,
    traces: Sequence[tuple[TraceHeader, TaskInput]],
    profile: str | Profile | None = None,
    *,
    parts: int | None = None,
    whole: list[int] | None = None,
    plans: Sequence[Plan | None] | None = None,
    routed: list[int] | None = None,
) -> list[Verdict]:
    """Check traces in Spark without a shuffle: one task per (trace, part) reads its trace, keeps its part's
    events and runs the streaming checker over them.

    A trace is split by key where it looks routable (:mod:`conformance.spark.router`): each task routes the
    events itself and returns its part's footprint, and the parts prove the split held (one pass judges every
    kind).  A trace whose routed split did not hold is checked again, in a second job, split by a plan
    (:mod:`conformance.spark.split`), as is at once a trace that does not look routable: a stored trace's plan
    made here, once, events' by each task.  ``routed``: receives the indexes of the traces whose routed split
    held.

    ``plans``: a plan per trace the caller made already (:func:`plan_trace`), for this many parts; such a trace is
    split by its plan (a plan for another number of parts is not used).

    ``parts``: how many parts each trace is split into (default: Spark's default parallelism, the cores of a
    local master or of a cluster's executors); a trace the plan finds with a message of two keys or a uid of two
    (producer, seq) is checked whole in one part instead, and its index is appended to ``whole`` if given; so is
    one where a part found a ``lost_write`` (:func:`~conformance.checks.partition.needs_whole_trace`), checked
    again in one part in a last job.
    """
    context = getattr(spark, "sparkContext", spark)  # a session's, or a SparkContext given as such
    n_parts = parts if parts is not None else max(1, int(context.defaultParallelism))
    if n_parts < 1:
        raise InvalidArgument(f"parts must be at least 1, not {n_parts}")
    headers = {tid: header for tid, (header, _input) in enumerate(traces)}
    made = [plan if plan is not None and plan.parts == n_parts else None for plan in (plans or [None] * len(traces))]
    if len(made) != len(traces):
        raise InvalidArgument(f"{len(made)} plans for {len(traces)} traces")
    route: list[Route] = [_first_route(given, n_parts, plan) for (_h, given), plan in zip(traces, made, strict=True)]
    jobs: list[Job] = [
        (tid, header, given, plan if plan is not None or routes else _driver_plan(given, n_parts), routes)
        for tid, ((header, given), plan, routes) in enumerate(zip(traces, made, route, strict=True))
    ]
    rows = _routed_job(context, jobs, profile, n_parts)
    unproven = _unproven(rows, route)
    resolvable = {tid for tid in unproven if route[tid] == "key" and jobs[tid][2][0] == "path"}
    if resolvable:  # split by key did not hold: the tasks resolve each release's key from its message
        for tid in resolvable:
            route[tid] = "resolved"
        rows = [row for row in rows if row[0] not in resolvable]
        again: list[Job] = [(tid, h, put, None, "resolved") for tid, h, put, _p, _r in jobs if tid in resolvable]
        rows += _routed_job(context, again, profile, n_parts)
        unproven = _unproven(rows, route)
    if unproven:  # checked again, split by a plan: what the routed parts found is not used
        rows = [row for row in rows if row[0] not in unproven]
        planned: list[Job] = [
            (tid, h, put, _driver_plan(put, n_parts), None) for tid, h, put, _p, _r in jobs if tid in unproven
        ]
        rows += _job(context, planned, profile, n_parts)
    blind = {row[0] for row in rows if n_parts > 1 and not row[3] and needs_whole_trace(row[4])}
    if blind:  # a lost_write a part found may be excused in another part: those traces again, in one part
        rows = [row for row in rows if row[0] not in blind]
        whole_again: list[Job] = [(tid, h, put, None, None) for tid, h, put, _p, _r in jobs if tid in blind]
        rows += [
            (tid, pass_, part, True, result, f)
            for tid, pass_, part, _w, result, f in _job(context, whole_again, profile, 1)
        ]
    held = [tid for tid, routes in enumerate(route) if routes and tid not in unproven]
    checked_whole = sorted({row[0] for row in rows if row[3]})  # part 0 of a trace checked whole says so
    if routed is not None:
        routed.extend(held)
    if whole is not None:
        whole.extend(checked_whole)
    verdicts = _merged([(tid, pass_, part, result) for tid, pass_, part, _w, result, _f in rows], headers, profile)
    split = {tid: str(route[tid]) for tid in held} | {tid: "whole" for tid in checked_whole}
    return [
        dataclasses.replace(
            verdicts[tid],
            extra={
                **verdicts[tid].extra,
                "split": "one part" if n_parts == 1 else split.get(tid, "plan"),
                "parts": n_parts,
            },
        )
        for tid in range(len(traces))
    ]


#: A task's row: ``(trace, pass, part, checked whole, PartResult, footprint or None)``.
TaskRow = tuple[int, int, int, bool, PartResult, Any]


#: How a job's tasks route a trace themselves: ``"key"`` (each event by the key it carries), ``"resolved"`` (the
#: acks, nacks and dead letters by their message's key, which each task finds first: :func:`resolve_keys`), or
#: None (split by a plan, or in one part).
Route = str | None

#: A job's trace: ``(trace, header, input, plan or None, route)``.
Job = tuple[int, TraceHeader, TaskInput, "Plan | None", Route]


def _first_route(given: TaskInput, parts: int, plan: Plan | None) -> Route:
    """How a trace is first split: by the keys its events carry where its first events look so, else (a stored
    trace whose acks carry no key) by keys the tasks resolve; events sent from the driver by a plan each task
    makes (None)."""
    if parts < 2 or plan is not None:
        return None
    if looks_routable(given):
        return "key"
    return "resolved" if given[0] == "path" else None


def _routed_job(context: Any, jobs: list[Job], profile: str | Profile | None, parts: int) -> list[TaskRow]:
    """:func:`_job`, and for the traces routed by resolved keys whose tasks found strays (releases of messages
    no receive or stored publish names: :class:`~conformance.spark.router.Resolution`), the same job again with
    every stray given, so that each is routed by its own key."""
    import numpy as np

    rows = _job(context, jobs, profile, parts)
    found: dict[int, list[Any]] = {}
    for tid, _pass, _part, _whole, _result, footprint in rows:
        if footprint is not None and len(footprint.get("strays", ())):
            found.setdefault(tid, []).append(footprint["strays"])
    if not found:
        return rows
    strays = {tid: np.unique(np.concatenate(arrays)) for tid, arrays in found.items()}
    rows = [row for row in rows if row[0] not in strays]
    return rows + _job(context, [job for job in jobs if job[0] in strays], profile, parts, strays)


def _check_buckets(session: Any, source: TraceSource, profile: str | Profile | None) -> Verdict:
    """A trace in the bucketed layout: one task per bucket, each reading its own files and the shared one
    (:func:`conformance.checks.buckets.check_bucket`); nothing planned or read here but the manifest.  The
    results merge as the Python engine merges them (:func:`~conformance.checks.buckets.merge_buckets`); a
    trace checked whole after all (an inexact split) is checked in one more task.  The buckets are the parts
    (``--spark-parts`` does not apply)."""
    from conformance.checks.buckets import merge_buckets

    context = getattr(session, "sparkContext", session)
    layout = dataclasses.replace(source.layout, directory=source.layout.directory.resolve())
    results = None
    if layout.exact:  # else: checked whole, in one task
        try:
            job = context.parallelize(range(layout.buckets), layout.buckets).map(_bucket_task(layout, profile))
            rows = job.collect()
        except Exception as failure:  # a task that found a malformed bucket: its one line, as the Python engine's
            import re

            from conformance.trace.validation import TraceFormatError

            said = re.search(r"TraceFormatError: (.+?): ([^\n]+)", str(failure))
            if said is None:
                raise
            raise TraceFormatError(said.group(1), None, said.group(2)) from None
        results = [pair for _n, pair in sorted(rows, key=lambda r: r[0])]

    def whole() -> Any:  # one task: every file merged (the driver reads no events)
        return context.parallelize([0], 1).map(_whole_task(layout, profile)).collect()[0]

    verdict = merge_buckets(layout, profile, results, engine="spark", whole=whole)
    return dataclasses.replace(verdict, extra={**verdict.extra, "parts": layout.buckets})


def _bucket_task(layout: Any, profile: str | Profile | None) -> Any:
    def run(n: int) -> tuple[int, Any]:
        from conformance.checks.api import collector_paused
        from conformance.checks.buckets import check_bucket

        with collector_paused():
            return n, check_bucket(layout, n, profile)

    return run


def _whole_task(layout: Any, profile: str | Profile | None) -> Any:
    def run(_n: int) -> Any:
        from conformance.checks.api import collector_paused
        from conformance.checks.buckets import check_whole

        with collector_paused():
            return check_whole(layout, profile)

    return run


def _job(
    context: Any, jobs: list[Job], profile: str | Profile | None, parts: int, strays: dict[int, Any] | None = None
) -> list[TaskRow]:
    """One Spark job of a task per (trace, part) of ``jobs``; every task's rows (``strays``: per trace routed by
    resolved keys, every stray its previous job found)."""
    tasks = len(jobs) * parts
    if not tasks:
        return []
    # one task per part of a single trace; many small traces share tasks (a task costs Spark more than they do)
    slices = parts if len(jobs) == 1 else min(tasks, 4 * max(1, int(context.defaultParallelism)))
    ahead = _reads_ahead(context, min(slices, int(context.defaultParallelism)))
    run = _task_runner(jobs, profile, parts, ahead, strays or {})
    # Spark Core, not a DataFrame: a first SQL job costs seconds of planning a one-row plan (measured: twice
    # the whole job for a small trace); the results are a few pickled rows
    return list(context.parallelize(range(tasks), slices).mapPartitions(run).collect())


def _unproven(rows: list[TaskRow], route: list[Route]) -> set[int]:
    """The traces split by key whose parts' footprints overlap (:func:`~conformance.spark.router.overlap`)."""
    from conformance.spark.router import overlap

    footprints: dict[int, list[Any]] = {}
    for tid, _pass, _part, _whole, _result, footprint in rows:
        if route[tid]:
            footprints.setdefault(tid, []).append(footprint)
    return {tid for tid, prints in footprints.items() if overlap(prints) is not None}


def _driver_plan(given: TaskInput, parts: int) -> Plan | None:
    """A stored trace's plan, made here once (None for events: each task plans those it is sent)."""
    if given[0] != "path" or parts < 2:
        return None
    from conformance.trace.reader import open_trace

    return plan_trace(open_trace(given[1]), parts)


def needs_plan(source: TraceSource, parts: int) -> bool:
    """Whether checking the stored trace ``source`` in ``parts`` parts needs a plan made by the driver before the
    tasks run (:func:`plan_trace`): never now.  A trace whose acks carry their message's key is routed by the
    keys its events carry, one whose acks carry none by keys each task resolves from the trace itself
    (:class:`~conformance.spark.router.Resolution`); the driver plans only a trace whose routed split did not
    hold (a message or batch entry under two keys, a (producer, seq) resent under another key).  Kept for
    callers of the public API."""
    del source, parts
    return False


def looks_routable(given: TaskInput) -> bool:
    """Whether a trace's first events look routable by key (:func:`~conformance.spark.router.routable`); a trace
    the sample cannot be read from is left to the tasks (they word what is wrong)."""
    import pyarrow as pa

    from conformance.spark.router import routable

    kind, payload = given
    columns = ["op", "key", "msg_id"]
    try:
        if kind == "arrow":
            reader = pa.ipc.open_stream(payload)
            sample = next(iter(reader), None)
        else:
            from conformance.trace.reader import open_trace

            source = open_trace(payload)
            if source.format == "parquet":
                import pyarrow.parquet as pq

                first = pq.ParquetFile(source.files[0])
                present = [c for c in columns if c in first.schema_arrow.names]
                sample = next(first.iter_batches(batch_size=65536, columns=present, use_threads=False), None)
            else:
                sample = next(source.unchecked_batches(block_size=1 << 20), None)
    except Exception:  # only a guess: the tasks meet and word any problem
        return True
    return sample is None or routable(sample)


def _reads_ahead(context: Any, at_once: int) -> bool:
    """Whether a task may read ahead in a second thread (:func:`check_task`'s ``read_ahead``): only with a core
    of its own for that thread.

    Spark gives a task ``spark.task.cpus`` cores (1 by default) and runs as many tasks at once as it has slots;
    a task that also reads in a second thread then takes its time from the other tasks' cores and gains nothing,
    while the thread costs CPU of its own: its hand-offs of the GIL (measured at 3M events, min of 4, load 2.1-2.3:
    a part of 2 with the thread 3.98 s of CPU, without 3.74 s; the whole trace pinned to one core 7.61 s against
    7.07 s, wall likewise).  On a local master the slots may be fewer than the machine's cores (``local[1]`` on
    two cores): the thread then runs on a core no task uses, and pays (the same part: 3.48 s wall against 3.78 s).
    """
    if int(context.getConf().get("spark.task.cpus", "1")) >= 2:
        return True
    if not str(context.master).startswith("local"):
        return False
    cores = _usable_cores()
    return cores >= 2 * max(1, at_once)


def _usable_cores() -> int:
    """The cores this process may run on (its CPU affinity: a pinned process has fewer than the machine)."""
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _task_runner(
    jobs: list[Job],
    profile: str | Profile | None,
    parts: int,
    read_ahead: bool = False,
    strays: dict[int, Any] | None = None,
) -> Any:
    """The function Spark's Python workers run: for each task id, ``(trace, part)``'s rows (:data:`TaskRow`;
    none for a part of a trace part 0 checked whole): routed by key (carried or resolved), or by the trace's
    plan."""
    given_strays = strays or {}

    def run(tasks: Any) -> Any:
        for task in tasks:
            tid, header, given, plan, route = jobs[task // parts]
            part = task % parts
            if route:
                result, footprint = check_routed_task(
                    header, profile, given, part, parts, read_ahead=read_ahead, resolved=route == "resolved",
                    strays=given_strays.get(tid),
                )  # fmt: skip
                yield (tid, WHOLE, part, False, result, footprint)
                continue
            was_whole, results = check_task(header, profile, given, part, parts, plan=plan, read_ahead=read_ahead)
            for pass_, result in results:
                yield (tid, pass_, part, was_whole, result, None)

    return run


def check_routed_task(
    header: TraceHeader,
    profile: str | Profile | None,
    given: TaskInput,
    part: int,
    parts: int,
    *,
    read_ahead: bool = False,
    resolved: bool = False,
    strays: Any = None,
) -> tuple[PartResult, dict[str, Any]]:
    """One task of a split by key (:mod:`conformance.spark.router`): ``part`` of ``parts`` — the events about
    messages whose key is in the part and the copies of every other event — checked in one pass, identity fields
    kept; and the part's footprint (:meth:`~conformance.spark.router.Footprint.arrays`), by which the driver
    tells whether the split held.  ``resolved``: acks, nacks and dead letters go where their message's key goes,
    which the task finds first in a read of four columns (:func:`resolve_keys`; ``strays``: the releases of
    messages nothing keyed, found by the previous job); the footprint then also holds the strays this task found
    (``strays``).  A Parquet trace's rows are validated by the task that keeps them (as
    :func:`check_task` with a plan); another trace is read, validated, whole by each task.  The collector is
    paused as in :func:`check_task`."""
    from conformance.checks.api import collector_paused

    with collector_paused():
        return _routed_task(header, profile, given, part, parts, read_ahead, resolved, strays)


def _routed_task(
    header: TraceHeader,
    profile: str | Profile | None,
    given: TaskInput,
    part: int,
    parts: int,
    ahead: bool,
    resolved: bool = False,
    strays: Any = None,
) -> tuple[PartResult, dict[str, Any]]:
    from conformance.spark.router import Footprint, KeyRouter
    from conformance.trace.decode import row_columns

    found = None
    receipts = bool(header is not None and header.deduplication)  # every part reads every receipt: see the router
    if resolved:
        resolution, found = resolve_keys(given, part, parts, strays)
        router = KeyRouter(parts, resolution, receipts=receipts)
    else:
        router = KeyRouter(parts, receipts=receipts)
    copies: list[int] = []  # per batch, the rows copied into every part
    make = _routed_reader(given, router, part, copies)
    footprint = Footprint()

    def shaped() -> Any:
        for batch in make():
            rows = row_columns(batch)
            footprint.add(rows)
            yield rows

    checker = PartChecker(header, profile)
    if ahead:
        from conformance.trace.readahead import read_ahead

        batches = read_ahead(shaped)
    else:
        batches = shaped()
    for batch in batches:
        checker.feed(batch)
    arrays = footprint.arrays()
    if found is not None:
        arrays["strays"] = found
    counted_elsewhere = (sum(copies) if part else 0) + router.receipts_kept  # receipts are their own part's
    return checker.result(counted_elsewhere, all_receipts=router.receipts), arrays


def resolve_keys(given: TaskInput, part: int, parts: int, strays: Any = None) -> tuple[Any, Any]:
    """``(Resolution, strays found)`` of ``part`` (:func:`conformance.spark.router.resolve`) from a stored trace
    read once more, streamed: of a Parquet trace only :data:`~conformance.spark.router.RESOLVE_COLUMNS`, the
    strings of few values as the dictionaries Parquet stores, one batch at a time in this thread."""
    from conformance.spark.router import resolve

    def batches() -> Any:
        import pyarrow as pa

        if given[0] != "path":
            yield from pa.ipc.open_stream(given[1])
            return
        from conformance.trace.reader import open_trace

        source = open_trace(given[1])
        if source.format != "parquet":
            yield from source.unchecked_batches()
            return
        import pyarrow.parquet as pq

        from conformance.spark.router import RESOLVE_COLUMNS
        from conformance.spark.rows import _keys_coded

        keys_coded = _keys_coded(source)
        for path in source.files:
            metadata = pq.read_metadata(path)
            schema = metadata.schema.to_arrow_schema()
            present = [c for c in RESOLVE_COLUMNS if c in schema.names]
            few = ("op", "result", "key") if keys_coded else ("op", "result")  # as stored: no string per row
            coded = [c for c in few if c in present and pa.types.is_string(schema.field(c).type)]
            pf = pq.ParquetFile(path, metadata=metadata, read_dictionary=coded)
            yield from pf.iter_batches(batch_size=65536, columns=present, use_threads=False)

    return resolve(batches(), parts, part, strays)


def _routed_reader(given: TaskInput, router: Any, part: int, copies: list[int]) -> Any:
    """A function giving ``part``'s validated batches of a trace routed by key (counting the copies kept)."""
    if given[0] == "path":
        from conformance.trace.reader import open_trace

        source = open_trace(given[1])
        if source.format == "parquet":
            from conformance.spark.rows import routed_batches

            return lambda: routed_batches(source, router, part, copies)
    full, _plan_read = _readers(given)

    def kept() -> Any:
        import pyarrow as pa

        for batch in full():
            keep, receipts = router.route(batch, part, copies)
            yield router.receipt_rows(batch.filter(pa.array(keep)), None if receipts is None else receipts[keep])

    return kept


def check_task(
    header: TraceHeader,
    profile: str | Profile | None,
    given: TaskInput,
    part: int,
    parts: int,
    *,
    one_pass: bool = True,
    plan: Plan | None = None,
    read_ahead: bool = False,
) -> tuple[bool, list[tuple[int, PartResult]]]:
    """One task: ``part`` of ``parts`` of a trace — both passes, or one where the plan allows
    (:attr:`~conformance.spark.split.Plan.one_pass`; ``one_pass=False``: never) — or, if the split would be
    inexact, the whole trace in part 0.  Returns ``(checked whole, [(pass, result)])``.

    ``read_ahead``: read, validate and shape the batches in a second thread while the checker works
    (:mod:`conformance.trace.readahead`); worth it only with a core free for that thread, which a Spark task
    has only when given two (:func:`run_tasks` decides).  Without it the task runs in one thread, the same work.

    As on the Python engine (:func:`conformance.checks.api.check_source`), the cyclic garbage collector is
    paused while the task runs: the checker allocates millions of small objects that live to the end of the
    part, and generational collections would rescan them again and again.  A Spark Python worker runs task
    after task: the checker's state is freed (by reference counts) when the task returns, and the collector is
    restored then, whatever happens.
    """
    from conformance.checks.api import collector_paused

    with collector_paused():  # restored once _task's frame, and with it the checker's state, is gone
        return _task(header, profile, given, part, parts, one_pass, plan, read_ahead)


def _task(
    header: TraceHeader,
    profile: str | Profile | None,
    given: TaskInput,
    part: int,
    parts: int,
    one_pass: bool,
    plan: Plan | None,
    ahead: bool,
) -> tuple[bool, list[tuple[int, PartResult]]]:
    from conformance.spark.split import one_pass_batches, part_batches, plan_source

    if plan is not None and not plan.mixed and parts > 1 and given[0] == "path":
        own = _own_rows(header, profile, given[1], part, plan, one_pass, ahead)
        if own is not None:
            return False, own
    full, plan_read = _readers(given)
    if parts == 1:
        return False, [(WHOLE, check_part(header, profile, _shaped(full, ahead)))]
    if plan is None:
        plan = plan_source(plan_read, parts, one_pass=one_pass)
    if plan is None or plan.mixed:
        return True, ([(WHOLE, check_part(header, profile, _shaped(full, ahead)))] if part == 0 else [])
    if plan.one_pass:  # each part judges every kind of what it holds (the identity fields kept)
        batches = _shaped(lambda: one_pass_batches(plan, part, full()), ahead)
        return False, [(WHOLE, check_part(header, profile, batches, plan.copies(part)))]
    return False, _two_passes(header, profile, lambda: part_batches(plan, part, full()), plan.copies(part), ahead)


def _shaped(make: Any, ahead: bool) -> Any:
    """The batches of ``make()`` in the checker's Arrow form (:func:`~conformance.trace.decode.row_columns`);
    with ``ahead``, read, validated, filtered and shaped in a background thread while the checker works on
    earlier ones (:mod:`conformance.trace.readahead`: pyarrow's kernels release the GIL), as the Python engine
    reads."""
    from conformance.trace.decode import row_columns

    if not ahead:
        return (row_columns(batch) for batch in make())
    from conformance.trace.readahead import read_ahead

    return read_ahead(lambda: (row_columns(batch) for batch in make()))


def _two_passes(
    header: TraceHeader, profile: str | Profile | None, make: Any, copies: int, ahead: bool
) -> list[tuple[int, PartResult]]:
    """Both passes of a part, fed from one read: ``make()`` gives ``(scope batch, identity batch)`` pairs."""
    from conformance.trace.decode import row_columns

    def pairs() -> Any:
        return ((row_columns(s), row_columns(i)) for s, i in make())

    scope, identity = PartChecker(header, profile), PartChecker(header, profile)
    if ahead:
        from conformance.trace.readahead import read_ahead

        shaped = read_ahead(pairs)
    else:
        shaped = pairs()
    for scope_batch, identity_batch in shaped:
        scope.feed(scope_batch)
        identity.feed(identity_batch)
    return [(SCOPE, scope.result(copies)), (IDENTITY, identity.result())]


def _own_rows(
    header: TraceHeader,
    profile: str | Profile | None,
    path: str,
    part: int,
    plan: Plan,
    one_pass: bool,
    ahead: bool,
) -> list[tuple[int, PartResult]] | None:
    """A part of a Parquet trace planned by the driver: only its rows are validated and checked
    (:mod:`conformance.spark.rows`); None for another format (the task reads it whole)."""
    from conformance.spark.rows import own_batches, own_part_batches
    from conformance.trace.reader import open_trace

    source = open_trace(path)
    if source.format != "parquet":
        return None
    if plan.one_pass and one_pass:
        batches = _shaped(lambda: (rows for rows, _s, _i in own_batches(source, plan, part, identity=False)), ahead)
        return [(WHOLE, check_part(header, profile, batches, plan.copies(part)))]
    return _two_passes(header, profile, lambda: own_part_batches(source, plan, part), plan.copies(part), ahead)


def warm_workers(spark: Any, slots: int | None = None) -> None:
    """Start Spark's Python workers and import what a task runs, with a job of one empty task per slot.

    The first job of a session waits for its Python workers: the daemon started, a worker forked per slot, the
    task's modules imported (about 2 s on a 2-core machine); Spark reuses those workers for the next job.  A
    driver that is still planning (``keyshared check`` on a large trace) runs this meanwhile, so the job that
    checks the trace starts on warm workers.
    """
    context = getattr(spark, "sparkContext", spark)
    n = slots if slots is not None else max(1, int(context.defaultParallelism))
    context.parallelize(range(n), n).mapPartitions(_warm_task).collect()


def _warm_task(_tasks: Any) -> Any:
    import pyarrow.parquet  # noqa: F401  (imported for their cost, in the worker)

    import conformance.checks.streaming
    import conformance.spark.rows
    import conformance.trace.decode
    import conformance.trace.readahead  # noqa: F401

    return iter(())


def plan_trace(source: TraceSource, parts: int) -> Plan | None:
    """The split of a stored trace into ``parts`` (None if it cannot be planned: the tasks then check it whole
    or fail with the reader's error), planned by as many threads as this process has cores."""
    from conformance.spark.arrow_pool import system_pool
    from conformance.spark.split import plan_source

    _full, plan_read = _readers(("path", str(source.path.resolve())), plan_batch=1 << 18)
    with system_pool():  # a driver plans once: pyarrow's default pool would pay for fresh memory
        return plan_source(plan_read, parts, threads=_usable_cores())


def _readers(given: TaskInput, *, plan_batch: int = 65536) -> tuple[Any, Any]:
    """``(the trace's batches for the checker, its batches for the plan)``, each a function that reads anew
    (a Parquet trace's plan batches: ``plan_batch`` rows)."""
    import pyarrow as pa

    kind, payload = given
    if kind == "arrow":
        table = pa.ipc.open_stream(payload).read_all()

        def batches() -> Any:
            return table.to_batches(max_chunksize=65536)

        return batches, batches
    from conformance.trace.reader import open_trace

    source = open_trace(payload)
    if source.format != "parquet":
        return source.batches, source.batches

    def plan_columns() -> Any:  # only the columns the plan reads, its strings as dictionaries
        import pyarrow.parquet as pq

        from conformance.spark.split import PLAN_COLUMNS, PLAN_DICTIONARIES

        for path in source.files:
            metadata = pq.read_metadata(path)
            schema = metadata.schema.to_arrow_schema()
            present = [c for c in PLAN_COLUMNS if c in schema.names]
            # the columns of few values as stored (dictionary-encoded): each row's index and the distinct values,
            # without building every row's string (the plan works on the distinct values); a message id or a uid
            # is near unique (the writer gives up its dictionary: reading it as one would hash every row)
            coded = [c for c in present if c in PLAN_DICTIONARIES and pa.types.is_string(schema.field(c).type)]
            pf = pq.ParquetFile(path, metadata=metadata, read_dictionary=coded)
            yield from pf.iter_batches(batch_size=plan_batch, columns=present, use_threads=False)

    return source.batches, plan_columns


@dataclasses.dataclass(frozen=True)
class Malformed:
    """What a part of a DataFrame found wrong with its events instead of a :class:`PartResult`: the problem,
    as :func:`~conformance.trace.validation.check_batch` names it, in the batch of events ``first`` to ``last``
    (their ``i``)."""

    first: int
    last: int
    problem: str


def _validated_batches(batches: list[Any]) -> list[Any] | Malformed:
    """A part's batches (in ``i`` order) validated as the reader validates its own, with the columns the
    validation derives; or the first problem."""
    from conformance.trace.validation import BatchState, check_batch

    state = BatchState()
    checked = []
    for batch in batches:
        problem, batch = check_batch(batch, state)
        if problem is not None:
            first, last = (batch.column("i")[n].as_py() for n in (0, batch.num_rows - 1))
            return Malformed(first, last, problem)
        checked.append(batch)
    return checked


def _well_formed(
    results: list[tuple[int, int, int, bool, PartResult | Malformed]], names: dict[int, str]
) -> list[tuple[int, int, int, bool, PartResult]]:
    """``results`` if no part found its events malformed; else the first problem (by trace, then events) raised,
    naming its trace."""
    from conformance.trace.validation import TraceFormatError

    bad = sorted((tid, r.first, r.last, r.problem) for tid, _p, _n, _e, r in results if isinstance(r, Malformed))
    if bad:
        tid, first, last, problem = bad[0]
        where = f"events i={first}..{last}"
        raise TraceFormatError(names.get(tid, f"trace {tid}"), where, f"{problem} (as Spark read it)")
    return [(tid, p, n, e, r) for tid, p, n, e, r in results if isinstance(r, PartResult)]


def _run(
    df: Any, headers: dict[int, TraceHeader], profile: str | Profile | None, n_parts: int
) -> list[tuple[int, int, int, bool, PartResult | Malformed]]:
    """One Spark job: route, then the streaming checker over every (trace, pass, part) whose events are
    well formed."""
    from conformance.spark.route import routed

    check = _part_checker(headers, profile)
    rows = routed(df, n_parts).groupBy("tid", "pass", "part").applyInArrow(check, _OUT_SCHEMA).toArrow()
    return [
        (tid, pass_, part, exact, pickle.loads(blob))
        for tid, pass_, part, exact, blob in zip(
            *(rows.column(name).to_pylist() for name in ("tid", "pass", "part", "split_exact", "result")), strict=True
        )
    ]


def _part_checker(headers: dict[int, TraceHeader], profile: str | Profile | None) -> Any:
    """The function Spark's Python workers run on each part (a pyarrow Table of routed events)."""

    def check(table: Any) -> Any:
        import pyarrow as pa
        import pyarrow.compute as pc

        from conformance.trace.reader import decode_json_column, fast_schema

        table = table.sort_by("i")
        tid = table.column("tid")[0].as_py()
        pass_ = table.column("pass")[0].as_py()
        part = table.column("part")[0].as_py()
        copies = table.num_rows - pc.sum(table.column("own").cast(pa.int64())).as_py()
        mixed = pc.any(table.column("mixed")).as_py()
        events = table.drop_columns(["tid", "pass", "part", "own", "mixed"])
        policy = events.schema.get_field_index("policy")
        events = events.set_column(
            policy,
            "policy",
            decode_json_column(events.column(policy).combine_chunks(), fast_schema().field("policy").type),
        )
        batches = _validated_batches(events.to_batches(max_chunksize=65536))
        result = batches if isinstance(batches, Malformed) else check_part(headers.get(tid), profile, batches, copies)
        # a lost_write a part found may be excused by another part's events: that pass is checked again whole
        exact = not mixed and (pass_ == WHOLE or isinstance(result, Malformed) or not needs_whole_trace(result))
        return pa.table(
            {
                "tid": pa.array([tid], pa.int64()),
                "pass": pa.array([pass_], pa.int32()),
                "part": pa.array([part], pa.int32()),
                "split_exact": pa.array([exact], pa.bool_()),
                "result": pa.array([pickle.dumps(result)], pa.binary()),
            }
        )

    return check
