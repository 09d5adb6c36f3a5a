"""``keyshared check TRACE``: judge a stored trace (JSON Lines, gzip, Parquet, or a directory of Parquet chunks)
and print the verdict.

Exit codes (:mod:`pytest_keyshared.commands._errors`): 0 valid, 1 invalid, 2 an unreadable, empty or
malformed trace, an unknown profile or engine (one line on stderr naming the file, the line and the problem),
4 verdict unknown (a header without events: nothing to judge; a contract that could not be judged; or a check
crashed: the check and the exception are in the notes).  ``--json`` prints the verdict as one JSON object;
without it a readable summary with the explanations.  ``--engine spark`` starts a Spark session
(``--spark-master``, default ``local[*]``: any master URL pyspark accepts, e.g. ``spark://host:7077``) for this
run and stops it afterwards; with it, TRACE may also be a URI only Spark reads (``hdfs://``, ``s3a://`` with the
user's connectors), which Spark's executors read directly (not validated by the Python reader first).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gc
import gzip
import os
import sys
from collections.abc import Iterator
from typing import Any

from pytest_keyshared.commands._errors import look_at, verdict_exit
from pytest_keyshared.commands._verdict_text import verdict_summary

__all__ = ["add_parser", "run"]

PROFILE_HELP = (
    "contract profile: pip379, classic, out-of-order, sticky, shared, strict or lenient"
    " (default: derived from the trace header)"
)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "check",
        help="check a stored trace and print the verdict",
        description="Check a delivery trace against the Key_Shared, delivery and deduplication contracts.",
    )
    parser.add_argument(
        "trace",
        metavar="TRACE",
        help="trace: .jsonl, .jsonl.gz, .parquet, a directory of .parquet chunks,"
        " or (--engine spark) a URI Spark can read",
    )
    parser.add_argument("--engine", choices=("python", "spark"), default="python", help="checker engine")
    parser.add_argument("--profile", metavar="NAME", default=None, help=PROFILE_HELP)
    parser.add_argument("--json", action="store_true", help="print the verdict as JSON")
    parser.add_argument(
        "--spark-master", metavar="URL", default="local[*]", help="Spark master for --engine spark (default local[*])"
    )
    parser.add_argument(
        "--spark-wait",
        type=float,
        default=None,
        metavar="SECONDS",
        help="how long a cluster master (spark://, yarn, k8s://) has to answer and give an executor (default 20)",
    )
    parser.add_argument(
        "--spark-parts",
        type=int,
        default=None,
        metavar="N",
        help="parts a trace is split into on Spark (default: chosen by the trace's size and the executors'"
        " memory, at least the cores Spark has; 1 below 200k events where it fits)",
    )
    parser.add_argument(
        "--spark-conf",
        action="append",
        default=None,
        metavar="KEY=VALUE",
        help="a Spark setting for --engine spark, as spark-submit --conf (repeatable), e.g. spark.driver.memory=8g",
    )
    parser.add_argument(
        "--max-examples", type=int, default=5, metavar="N", help="explanations shown per kind (default 5)"
    )
    parser.set_defaults(handler=run)
    return parser


def run(args: argparse.Namespace) -> int:
    from reference_model.errors import InvalidArgument

    if args.spark_parts is not None and args.spark_parts < 1:
        raise InvalidArgument(f"--spark-parts must be at least 1, not {args.spark_parts}")
    if args.spark_wait is not None and not args.spark_wait > 0:
        raise InvalidArgument(f"--spark-wait must be a number of seconds above 0, not {args.spark_wait:g}")
    if args.engine == "spark":
        from conformance.spark.master import check_master

        check_master(args.spark_master)  # a malformed master is bad input, said before the trace is read
    from pytest_keyshared.commands._spark_args import parse_spark_conf

    spark_conf = parse_spark_conf(getattr(args, "spark_conf", None))
    look_at(args.trace)
    # the `keyshared` program checking on the Python engine: the process ends after the verdict
    alone = bool(getattr(args, "whole_process", False)) and args.engine == "python"
    kept: list[Any] | None = None
    if alone:
        _decide_without_pandas()
        gc.disable()  # the checker pauses it anyway; kept off to the end, see below
        kept = []
    try:
        verdict = check_file(
            args.trace,
            profile=args.profile,
            engine=args.engine,
            spark_master=args.spark_master,
            parts=args.spark_parts,
            keep=kept,
            spark_wait=args.spark_wait,
            spark_conf=spark_conf,
        )
        if args.json:
            print(verdict.to_json_text())
        else:
            print(verdict_summary(verdict, listed_in="--json", max_per_kind=args.max_examples))
            if "part_choice" in verdict.extra:
                print(f"Spark parts: {verdict.extra['part_choice']['reason']}")
        return verdict_exit(verdict)
    finally:
        if kept is not None:
            # The checker's state (millions of objects) is garbage now, in a process about to end.  Freeing it
            # object by object, and a cyclic collection over all of it (at exit, if not before), would take a
            # quarter of a second per million events: it is kept alive to the end (a list holding itself, which
            # no reference count frees) and frozen (no collection looks at it): the operating system frees it.
            kept.append(kept)
            gc.freeze()


class _RefusePandas:
    """A meta-path finder that refuses to import pandas (used for a moment by :func:`_decide_without_pandas`)."""

    @staticmethod
    def find_spec(name: str, path: Any = None, target: Any = None) -> None:
        if name == "pandas":
            raise ImportError("pandas is not needed to check a trace")


def _decide_without_pandas() -> None:
    """Let pyarrow decide, once for the process, that it works without pandas.

    The first time pyarrow converts a Python value it imports pandas (if installed, as with the ``spark``
    extra) to see whether the value is a pandas object: a third of a second of start-up that the Python engine
    never needs.  Only for the ``keyshared`` program on the Python engine (the process ends after the check):
    in that process pyarrow's pandas conversions are then unavailable; ``import pandas`` itself still works.
    """
    if "pandas" in sys.modules:
        return
    import pyarrow as pa

    sys.meta_path.insert(0, _RefusePandas)
    try:
        pa.scalar(0)  # pyarrow's probe: import pandas, once per process
    finally:
        sys.meta_path.remove(_RefusePandas)


def check_file(
    trace: Any,
    *,
    profile: str | None = None,
    engine: str = "python",
    spark_master: str = "local[*]",
    parts: int | None = None,
    keep: list[Any] | None = None,
    spark_wait: float | None = None,
    spark_conf: dict[str, str] | None = None,
) -> Any:
    """The verdict on a stored trace, as every command that judges a file gives it.

    A file with no header and no events is refused (:class:`TraceFormatError`, exit 2); a header without events
    is ``unknown``; anything else is judged by ``engine``.  With Spark, a URI only Spark reads goes straight to it.
    ``keep``: on the Python engine, a list the checker is appended to (:func:`~conformance.checks.api.check_source`).
    ``spark_wait``: seconds a cluster master has to answer and give an executor (:mod:`conformance.spark.master`).
    ``spark_conf``: Spark settings over this project's (``--spark-conf``).  Running out of memory is
    :class:`~pytest_keyshared.commands._out_of_memory.OutOfMemory` (one line, exit 3), on either engine.
    """
    from conformance.checks import check_trace, get_profile
    from conformance.trace.reader import open_trace

    chosen = None if profile is None else get_profile(profile)
    if engine == "spark" and _remote(str(trace)):
        return _check_on_spark(str(trace), chosen, spark_master, parts, spark_wait, spark_conf)
    source = open_trace(_local(str(trace)))
    if not _holds_events(source):
        return _nothing_to_judge(check_trace(source, profile=chosen, engine="python"))
    if engine == "spark":
        return _check_on_spark(source, chosen, spark_master, parts, spark_wait, spark_conf)
    return _check_on_python(source, chosen, keep)


def _check_on_python(source: Any, profile: Any, keep: list[Any] | None) -> Any:
    """The Python engine's verdict; a check that ran out of memory (raised, or recorded as a check's crash) is
    :class:`OutOfMemory` naming how far it got and the Spark command that splits the trace."""
    from conformance.checks.api import check_source
    from pytest_keyshared.commands import _out_of_memory as oom

    held: list[Any] = keep if keep is not None else []
    try:
        verdict = check_source(source, profile, keep=held)
    except MemoryError as exc:  # pyarrow's ArrowMemoryError too
        what, done = f"{type(exc).__name__}: {exc}", oom.events_checked(held[-1]) if held else None
        read = oom.events_read(held[-1]) if held else None
        held.clear()  # the checker's state: room for the message
        raise oom.on_python(
            str(source.path), what, done, _events_in(source), bucketed=_is_bucketed(source), read=read
        ) from None
    crash = oom.crashed_for_memory(held[-1]) if held else None
    if crash is not None:
        done, read = oom.events_checked(held[-1]), oom.events_read(held[-1])
        held.clear()
        raise oom.on_python(str(source.path), crash, done, _events_in(source), bucketed=_is_bucketed(source), read=read)
    return verdict


def _is_bucketed(source: Any) -> int | None:
    """A bucketed trace's bucket count (None for another trace)."""
    return int(source.layout.buckets) if getattr(source, "format", None) == "bucketed" else None


def _holds_events(source: Any) -> bool:
    """Whether the trace has at least one event; a file with no header and no events is bad input.

    An empty file or one of blank lines is what a recorder that never ran leaves behind: judging it would
    say VALID about nothing, so it is refused (exit 2).  A header without events is a well-formed trace of
    a run that observed nothing: the verdict is ``unknown`` (exit 4), never VALID.
    """
    from conformance.trace.validation import TraceFormatError

    if source.format == "bucketed":
        return bool(source.layout.events)
    if source.format == "parquet":
        import pyarrow.parquet as pq

        from conformance.trace.header import TraceHeader

        rows = sum(int(pq.ParquetFile(f).metadata.num_rows) for f in source.files)
        if rows == 0 and source.header == TraceHeader.unknown():
            raise TraceFormatError(str(source.path), None, "holds no header and no events (an empty Parquet file)")
        return rows > 0
    opener = gzip.open if source.compressed else open
    seen_text = False
    try:
        with opener(source.path, "rt", encoding="utf-8") as fh:
            for line in fh:
                if not line.strip():
                    continue
                if not seen_text and source.has_header_line:
                    seen_text = True
                    continue
                return True
    except (UnicodeDecodeError, OSError, EOFError):
        return True  # not readable text: the checker's reader words the problem (one line, exit 2)
    if not seen_text:
        size = source.path.stat().st_size
        what = "is empty (0 bytes)" if size == 0 else "holds only blank lines"
        raise TraceFormatError(str(source.path), None, f"{what}: no header and no events; was the run recorded at all?")
    return False


def _nothing_to_judge(verdict: Any) -> Any:
    """The verdict on a trace without events: ``unknown``, whatever the checkers (which saw nothing) said."""
    from conformance.verdict import Validity

    note = "nothing to judge: the trace has a header and no events"
    return dataclasses.replace(verdict, validity=Validity.UNKNOWN, notes=(note, *verdict.notes))


def _remote(trace: str) -> bool:
    """A URI with a scheme other than ``file://``: only Spark reads it."""
    scheme, sep, _rest = trace.partition("://")
    return bool(sep) and scheme.isidentifier() and scheme != "file"


def _local(trace: str) -> str:
    return trace[len("file://") :] if trace.startswith("file://") else trace


#: Below this many events a trace is checked in one part on Spark (splitting costs more than it saves).
SMALL_TRACE = 200_000


def _events_in(source: Any) -> int | None:
    """How many events a local trace holds, from its metadata (None for a URI, or when it would take a read)."""
    return None if isinstance(source, str) else source.known_events()


def _cores(master: str) -> int | None:
    """The task slots of a local master (``local``, ``local[N]``, ``local[*]``); None for a cluster's."""
    import os
    import re

    m = re.fullmatch(r"local(?:\[(\d+|\*)(?:,\s*\d+)?\])?", master.strip())
    if m is None:
        return None
    if m.group(1) in (None, "*"):
        return 1 if m.group(1) is None else os.cpu_count() or 1
    return int(m.group(1))


def _check_on_spark(
    source: Any,
    profile: Any,
    master: str,
    parts: int | None,
    wait_s: float | None = None,
    user_conf: dict[str, str] | None = None,
) -> Any:
    from conformance.spark import check_with_spark
    from conformance.spark.master import DEFAULT_WAIT_S, check_master, probe
    from conformance.spark.session import stop
    from conformance.trace.reader import FastPathUnavailable
    from reference_model.errors import InvalidArgument

    master = check_master(master)  # bad input (exit 2) before any JVM starts
    wait = DEFAULT_WAIT_S if wait_s is None else wait_s
    events = _events_in(source)
    small = events is not None and events < SMALL_TRACE
    if not isinstance(source, str) and events is None:  # JSON Lines: small by its size
        small = source.path.stat().st_size < SMALL_TRACE * 100
    columnar = True
    if not isinstance(source, str) and small:
        try:
            for _ in source.batches():  # a malformed trace fails here, before the JVM starts
                pass
        except FastPathUnavailable:  # valid, but not on the columnar path: read it event by event
            columnar = False
            for _ in source.events():
                pass
    probe(master, wait)  # a spark:// master nobody answers at: a target failure, said without starting a JVM
    # a large trace is validated by the Spark tasks, each reading it (a malformed one fails with the reader's error)
    user_conf = _with_memory_defaults(user_conf or {})
    log = _spark_log()
    try:
        # a trace the tasks read needs Spark Core only (no SQL session: seconds less to start); the JVM idles
        spark = _start_spark(master, log, wait, session=isinstance(source, str), user_conf=user_conf)
    except ImportError:  # pragma: no cover - pyspark is an optional extra
        raise InvalidArgument("--engine spark needs pyspark: pip install 'pytest-keyshared[spark]'") from None
    finished = False
    choice = None
    try:
        with _spark_failures(master, log):
            from conformance.spark.master import wait_for_executors

            try:
                wait_for_executors(spark, master, wait, log)
                choice = _chosen_parts(spark, master, parts, events, small, user_conf)
                if not isinstance(source, str) and source.format == "bucketed":  # its parts: its buckets
                    choice = _bucket_parts(choice, source.layout)
                parts = choice.parts
                if columnar:  # the driver plans nothing: the tasks route the trace by key (carried or resolved)
                    verdict = check_with_spark(source, profile, spark=spark, parts=parts)
                else:
                    verdict = check_with_spark(
                        list(source.events()), profile, spark=spark, header=source.header, parts=parts
                    )
            except Exception as exc:  # a job that died for memory: one line saying so, with what to do
                _raise_if_out_of_memory(exc, source, choice, master)
                raise
            held = _settings_held(spark, user_conf)
            verdict = dataclasses.replace(
                verdict, extra={**verdict.extra, "part_choice": choice.as_extra(), "spark_conf": held}
            )
        finished = True
        if isinstance(source, str):
            return verdict
        from conformance.checks.api import with_event_checks

        return with_event_checks(verdict, source)
    finally:
        with _spark_failures(master, log):
            stop(spark)
        sys.stdout.flush()
        if finished:  # the JVM's output was only for a failure to point at
            import contextlib

            with contextlib.suppress(OSError):
                os.unlink(log)


def _spark_log() -> str:
    """A new file for the Spark driver JVM's output (named in the line of a Spark failure, removed after a check
    that finished)."""
    import tempfile

    fd, path = tempfile.mkstemp(prefix="keyshared-spark-", suffix=".log")
    os.close(fd)
    return path


def _start_spark(
    master: str, log: str, wait_s: float, *, session: bool, user_conf: dict[str, str] | None = None
) -> Any:
    """The Spark session (a URI only Spark reads) or context (a trace the tasks read), its JVM writing to ``log``;
    ``user_conf``: the user's Spark settings over this project's (``--spark-conf``)."""
    from pathlib import Path

    from conformance.spark import build_session
    from conformance.spark.master import SparkUnavailable, jvm_output_to, start_within
    from conformance.spark.session import build_context

    def start() -> Any:
        if session:
            return build_session(master, class_cache=True, user_conf=user_conf)
        return build_context(master, class_cache=True, user_conf=user_conf)

    try:
        with jvm_output_to(Path(log)):
            return start_within(start, master, wait_s, log)
    except (ImportError, SparkUnavailable):
        raise
    except Exception as exc:
        if not _from_spark(exc):
            raise
        raise SparkUnavailable(
            f"Spark's driver did not start for master {master}: {_first_line(exc)}; Spark's output: {log}"
        ) from None


def _from_spark(exc: BaseException) -> bool:
    return type(exc).__module__.split(".")[0] in ("pyspark", "py4j")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    line = text[0] if text else type(exc).__name__
    return line if len(line) <= 160 else line[:157] + "..."


@contextlib.contextmanager
def _spark_failures(master: str, log: str) -> Iterator[None]:
    """A Spark error once the JVM stopped (the master gave up on the application, a cluster went away) is a
    target failure naming the master and the JVM's log; other errors pass unchanged."""
    from conformance.spark.master import SparkUnavailable

    try:
        yield
    except SparkUnavailable:
        raise
    except Exception as exc:
        if not _from_spark(exc) or not _stopped(exc):
            raise
        raise SparkUnavailable(
            f"Spark stopped under the check (master {master}): {_first_line(exc)}; Spark's output: {log}"
        ) from None


def _stopped(exc: BaseException) -> bool:
    """Whether a Spark error says the context or its JVM is gone (not a failure of the check's own code)."""
    text = str(exc)
    return any(
        words in text
        for words in (
            "stopped SparkContext",
            "SparkContext was shut down",
            "Answer from Java side is empty",
            "Error while sending or receiving",
            "All masters are unresponsive",
        )
    ) or type(exc).__name__ in ("Py4JNetworkError",)


def _chosen_parts(
    spark: Any, master: str, given: int | None, events: int | None, small: bool, user_conf: dict[str, str]
) -> Any:
    """The part count for this run and why (``extra.part_choice``): ``--spark-parts`` if given, else by memory."""
    from conformance.spark.parts import PartChoice, choose_for_context

    context = getattr(spark, "sparkContext", spark)
    chosen = choose_for_context(context, master, events, small=small, user_keys=set(user_conf))
    if given is None:
        return chosen
    return PartChoice(
        given, "given", events, chosen.memory_bytes, chosen.memory_from, chosen.tasks_per_executor, chosen.cores
    )


def _settings_held(spark: Any, user_conf: dict[str, str]) -> dict[str, str | None]:
    """The user's Spark settings (``--spark-conf``, ``SPARK_CONF_DIR/spark-defaults.conf``) as the running
    context holds them (``extra.spark_conf``: what reached Spark, not what was asked; None for one it lacks)."""
    from conformance.spark.parts import defaults_file_settings

    conf = getattr(spark, "sparkContext", spark).getConf()
    keys = sorted({*defaults_file_settings(), *user_conf})
    return {key: (None if (value := conf.get(key, None)) is None else str(value)) for key in keys}


def _bucket_parts(memory: Any, layout: Any) -> Any:
    """A bucketed trace's parts are its buckets: whether the largest pass a task runs (a bucket's scope pass, with
    the shared events, or its identity pass: with deduplication on, every id of its producers), from the
    manifest, fits a task's memory, and the bucket count that would if not
    (:func:`conformance.spark.parts.layout_choice`)."""
    from conformance.spark.parts import layout_choice

    return layout_choice(memory, layout)


def _raise_if_out_of_memory(exc: BaseException, source: Any, choice: Any, master: str) -> None:
    """A Spark job that died for memory is :class:`OutOfMemory` (one line: what died, the parts, what to do)."""
    from pytest_keyshared.commands import _out_of_memory as oom

    meaning = oom.spark_memory_failure(exc)
    if meaning is not None:
        trace = source if isinstance(source, str) else str(source.path)
        raise oom.on_spark(trace, meaning, choice, master) from None


def _with_memory_defaults(user_conf: dict[str, str]) -> dict[str, str]:
    """The user's ``--spark-conf`` over the memory settings of their ``SPARK_CONF_DIR/spark-defaults.conf``:
    those win over the driver memory ``keyshared`` sets (a builder's settings beat the defaults file), and the
    part count follows them."""
    from conformance.spark.parts import defaults_file_settings, parse_memory
    from pytest_keyshared.commands._spark_args import MEMORY_KEYS
    from reference_model.errors import InvalidArgument

    kept = {key: value for key, value in defaults_file_settings().items() if key in MEMORY_KEYS}
    for key, value in kept.items():
        try:
            parse_memory(value)
        except ValueError as exc:
            raise InvalidArgument(f"{key} in $SPARK_CONF_DIR/spark-defaults.conf: {exc}") from None
    return {**kept, **user_conf}
