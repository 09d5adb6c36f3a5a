"""The PySpark engine: the streaming checker over parts of the trace, in Spark's Python workers; one verdict.

The rules are not written here: every part runs :func:`conformance.checks.partition.check_part` (the
streaming checker itself) and the driver merges the parts with :func:`conformance.checks.partition.merge_parts`,
so both engines judge with the same code.  This module only splits the trace (:mod:`conformance.spark.route`)
and runs the parts: one ``groupBy(tid, pass, part).applyInArrow`` — a single Spark job for any number of
traces (column ``tid``), which is how the tests keep Spark's fixed costs low.

A split is exact when each message's publish and receive events carry one key, and each uid's publishes one
producer (what every broker and client writes).  A part that saw otherwise says so, and the engine checks
that pass of that trace again in one part (a second job, for those traces only).  The session is the caller's.
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from typing import Any

from conformance.checks.partition import PartResult, check_part, merge_parts
from conformance.profiles import Profile
from conformance.spark.route import IDENTITY, SCOPE, WHOLE
from conformance.trace.events import Event
from conformance.trace.header import TraceHeader
from conformance.trace.reader import TraceSource
from conformance.verdict import Verdict
from reference_model.errors import InvalidArgument

__all__ = ["active_session", "check_frames", "check_many", "check_with_spark"]

_OUT_SCHEMA = "tid long, pass int, part int, split_exact boolean, result binary"


def active_session(spark: Any) -> Any:
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
) -> Verdict:
    """Check one trace (a :class:`TraceSource`, a path or URI Spark reads, a TraceWriter-like object or
    events) on Spark.

    A local trace is validated by the Python reader (``validate``) while Spark checks it: a malformed trace
    cancels the job and fails with the same one-line error as on the Python engine.
    """
    from conformance.spark.load import events_frame, path_frame, source_frame

    session = active_session(spark)
    if isinstance(trace, TraceSource):
        source: TraceSource = trace
        df = source_frame(session, source)
        if not validate:
            return check_frames(session, df, {0: source.header}, profile, parts=parts)[0]
        return _while_validating(session, source, lambda: check_frames(session, df, {0: source.header}, profile,
                                                                      parts=parts)[0])  # fmt: skip
    if isinstance(trace, str):  # a URI only Spark reads (hdfs://, s3a://, ...): Spark parses it, unvalidated
        df, head = path_frame(session, trace, header)
        return check_frames(session, df, {0: head}, profile, parts=parts)[0]
    if header is None and hasattr(trace, "header") and hasattr(trace, "events"):
        header, trace = trace.header, trace.events or ()
    events = _validated(list(trace))
    head = header if header is not None else TraceHeader.unknown()
    return check_frames(session, events_frame(session, [(0, events)]), {0: head}, profile, parts=parts)[0]


def check_many(
    spark: Any,
    traces: Sequence[tuple[TraceHeader, Sequence[Event]]],
    profile: str | Profile | None = None,
    *,
    parts: int | None = None,
    whole: list[int] | None = None,
) -> list[Verdict]:
    """Check several traces in one Spark job; verdicts in the same order (``whole``: see check_frames)."""
    from conformance.spark.load import events_frame

    session = active_session(spark)
    items = [(n, _validated(list(events))) for n, (_h, events) in enumerate(traces)]
    df = events_frame(session, items)
    verdicts = check_frames(session, df, {n: h for n, (h, _e) in enumerate(traces)}, profile, parts=parts, whole=whole)
    return [verdicts[n] for n in range(len(traces))]


def _while_validating(session: Any, source: TraceSource, job: Any) -> Verdict:
    """Run ``job`` while a thread validates ``source`` (the Python reader's fast path, one core); a problem
    cancels the job and raises the reader's error."""
    import threading
    import uuid

    group = f"keyshared-{uuid.uuid4().hex}"
    failure: list[BaseException] = []

    def validate() -> None:
        try:
            for _ in source.batches():
                pass
        except BaseException as exc:  # re-raised in the caller's thread
            failure.append(exc)
            session.sparkContext.cancelJobGroup(group)

    thread = threading.Thread(target=validate, name="keyshared-validate", daemon=True)
    session.sparkContext.setJobGroup(group, "keyshared check", interruptOnCancel=True)
    thread.start()
    try:
        verdict: Verdict = job()
    except Exception:
        thread.join()
        if failure:
            raise failure[0] from None
        raise
    finally:
        session.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    thread.join()
    if failure:
        raise failure[0]
    return verdict


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
) -> dict[int, Verdict]:
    """Check every trace of ``df`` (column ``tid``; ``headers`` gives each trace's contract).

    ``parts``: how many parts each pass splits a trace into (default: ``spark.sql.shuffle.partitions``).
    ``whole``: if given, receives the ids of the traces that had to be checked again in one part.
    """
    from pyspark.sql import functions as F

    n_parts = parts if parts is not None else int(spark.conf.get("spark.sql.shuffle.partitions"))
    if n_parts < 1:
        raise InvalidArgument(f"parts must be at least 1, not {n_parts}")
    results = _run(df, headers, profile, n_parts)
    inexact = sorted({(tid, pass_) for tid, pass_, _n, exact, _r in results if not exact})
    if inexact:  # those passes of those traces again, whole (the whole result stands in for the pass)
        tids = sorted({tid for tid, _p in inexact})
        again = {r[0]: r for r in _run(df.where(F.col("tid").isin(tids)), headers, profile, 1)}
        results = [r for r in results if (r[0], r[1]) not in set(inexact)]
        results += [(tid, pass_, 0, True, again[tid][4]) for tid, pass_ in inexact if tid in again]
    if whole is not None:
        whole.extend(sorted({tid for tid, _p in inexact}))
    by_trace: dict[int, tuple[list[PartResult], list[PartResult]]] = {tid: ([], []) for tid in headers}
    for tid, pass_, _n, _exact, result in sorted(results, key=lambda r: (r[0], r[1], r[2])):
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


def _run(
    df: Any, headers: dict[int, TraceHeader], profile: str | Profile | None, n_parts: int
) -> list[tuple[int, int, int, bool, PartResult]]:
    """One Spark job: route, then the streaming checker over every (trace, pass, part)."""
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
        exact = not pc.any(table.column("mixed")).as_py()
        events = table.drop_columns(["tid", "pass", "part", "own", "mixed"])
        policy = events.schema.get_field_index("policy")
        events = events.set_column(
            policy,
            "policy",
            decode_json_column(events.column(policy).combine_chunks(), fast_schema().field("policy").type),
        )
        result = check_part(headers.get(tid), profile, events.to_batches(max_chunksize=65536), copies)
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
