"""A Spark master URL, checked before a JVM starts; a cluster waited for within a bound; the JVM's output in a log.

Left to itself, a bad ``--spark-master`` costs a user dearly: ``nonsense`` starts ``spark-submit``, which prints
two ``Exception in thread "main"`` traces and exits, and pyspark then raises ``JAVA_GATEWAY_EXITED``;
``spark://127.0.0.1:1`` starts a driver that retries its registration three times twenty seconds, printing a
Java trace per attempt, then stops the context under the check ("Cannot call methods on a stopped
SparkContext").  Here:

* :func:`check_master`: the forms Spark accepts (``local``, ``local[N]``, ``local[*]``, ``local[N,F]``,
  ``local-cluster[N,C,M]``, ``spark://HOST:PORT[,HOST:PORT...]``, ``yarn``, ``k8s://URL``), checked before any
  JVM starts; anything else is bad input (:class:`~reference_model.errors.InvalidArgument`, exit 2);
* :func:`probe`: a ``spark://`` master none of whose addresses accepts a TCP connection within the bound is a
  target failure (:class:`SparkUnavailable`, exit 3), said without starting a JVM;
* :func:`jvm_output_to`: the driver JVM (and what it starts: Spark's Python workers) writes its stdout and
  stderr to a log file, never to the terminal;
* :func:`start_within`: a driver that cannot register with a cluster master within the bound once its JVM is up
  (Spark's own constructor waits for the registration: up to a minute of retries) is stopped, and the failure
  names the master, the time waited and the log;
* :func:`wait_for_executors`: a cluster master that gives no executor within the bound (not a Spark master, no
  free worker, a master that went away) is a target failure naming the master, the time waited and the log.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from reference_model.errors import InvalidArgument, KeySharedError

__all__ = [
    "DEFAULT_WAIT_S",
    "SparkUnavailable",
    "check_master",
    "is_local",
    "jvm_output_to",
    "probe",
    "start_within",
    "wait_for_executors",
]

#: How long a cluster master has to answer and to give the check an executor (well under the minute a Spark
#: driver spends on its own retries before it gives up).
DEFAULT_WAIT_S = 20.0

_LOCAL = re.compile(r"local(?:\[\s*(?:\d+|\*)\s*(?:,\s*\d+\s*)?\])?")
_LOCAL_CLUSTER = re.compile(r"local-cluster\[\s*\d+\s*,\s*\d+\s*,\s*\d+\s*\]")
_HOST_PORT = re.compile(r"(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})")
_FORMS = "local, local[N], local[*], local[N,F], local-cluster[N,C,M], spark://HOST:PORT, yarn or k8s://URL"


class SparkUnavailable(KeySharedError):
    """The Spark master the check was given cannot run it: unreachable, no executor in time, or its driver
    exited.  A target failure (exit 3); the message names the master, the time waited and the JVM's log."""

    exit_code = 3
    #: the message says where to look (the JVM's log); the command's artifacts are not involved
    names_where = True


def check_master(master: str) -> str:
    """``master`` stripped, if Spark accepts its form; else one line naming it and the forms (exit 2)."""
    text = master.strip() if isinstance(master, str) else ""
    ok = bool(text) and (
        _LOCAL.fullmatch(text) is not None
        or _LOCAL_CLUSTER.fullmatch(text) is not None
        or text == "yarn"
        or (text.startswith("k8s://") and len(text) > len("k8s://"))
        or (text.startswith("spark://") and _spark_addresses(text) is not None)
    )
    if not ok:
        raise InvalidArgument(f"--spark-master {master!r} is not a Spark master URL: expected {_FORMS}.")
    return text


def is_local(master: str) -> bool:
    """Whether ``master`` runs the check inside the driver's JVM (nothing to reach, no executor to wait for)."""
    return _LOCAL.fullmatch(master.strip()) is not None


def _spark_addresses(master: str) -> list[tuple[str, int]] | None:
    """The ``(host, port)`` pairs of ``spark://H1:P1,H2:P2``; None if one is malformed."""
    found = []
    for part in master[len("spark://") :].split(","):
        m = _HOST_PORT.fullmatch(part.strip())
        if m is None or not 0 < int(m.group(1)) < 65536:
            return None
        host = part.strip().rpartition(":")[0].strip("[]")
        found.append((host, int(m.group(1))))
    return found or None


def probe(master: str, wait_s: float) -> None:
    """For a ``spark://`` master: return once one of its addresses accepts a TCP connection, trying for at most
    ``wait_s`` seconds (at once when every address refuses: nothing listens there); raise
    :class:`SparkUnavailable` if none does.  Other masters are left to Spark."""
    addresses = _spark_addresses(master) if master.startswith("spark://") else None
    if not addresses:
        return
    started = time.monotonic()
    deadline = started + wait_s
    problems: dict[str, str] = {}
    while True:
        for host, port in addresses:
            left = max(deadline - time.monotonic(), 0.1)
            try:
                with socket.create_connection((host, port), timeout=min(left, 5.0)):
                    return
            except OSError as exc:
                problems[f"{host}:{port}"] = _why(exc)
        if time.monotonic() >= deadline or all(why == _REFUSED for why in problems.values()):
            break  # out of time, or nothing listens at any address (a master starting up would be listening)
        time.sleep(min(0.5, max(deadline - time.monotonic(), 0)))
    said = "; ".join(f"{where} {why}" for where, why in problems.items())
    raise SparkUnavailable(
        f"Spark master {master} is unreachable: {said} (tried for {time.monotonic() - started:.1f}s; no JVM started)"
    )


_REFUSED = "refused the connection"


def _why(exc: OSError) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return _REFUSED
    if isinstance(exc, TimeoutError):
        return "did not answer"
    if isinstance(exc, socket.gaierror):
        return f"is not a known host ({exc.strerror})"
    return f"failed: {exc.strerror or exc}"


@contextlib.contextmanager
def jvm_output_to(log: Path) -> Iterator[None]:
    """While the body runs, this process's stdout and stderr (file descriptors 1 and 2) write to ``log``: a JVM
    started in the body (pyspark's ``spark-submit``) keeps them for its whole life, and so do the processes it
    starts; this process gets its own back when the body ends."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    target = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    saved = [os.dup(1), os.dup(2)]
    try:
        os.dup2(target, 1)
        os.dup2(target, 2)
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, target):
            os.close(fd)


def start_within(start: Callable[[], Any], master: str, wait_s: float, log: Path | str) -> Any:
    """``start()`` (which starts a SparkContext or SparkSession) in a thread; for a cluster master, once the JVM is
    up, wait at most ``wait_s`` seconds for it to return, else kill the JVM and raise :class:`SparkUnavailable`.
    A local master is waited for as long as its JVM takes to start (nothing to reach)."""
    import threading

    from pyspark import SparkContext

    done: dict[str, Any] = {}

    def run() -> None:
        try:
            done["spark"] = start()
        except BaseException as exc:  # handed to the caller's thread below
            done["error"] = exc

    thread = threading.Thread(target=run, name="keyshared-spark-start", daemon=True)
    thread.start()
    up_at: float | None = None
    while thread.is_alive():
        thread.join(0.25)
        if up_at is None and not is_local(master) and _env_made(SparkContext):
            up_at = time.monotonic()  # the driver's environment is made: from here on it is reaching the master
        if up_at is not None and time.monotonic() - up_at > wait_s and thread.is_alive():
            _kill_jvm(SparkContext)
            raise SparkUnavailable(
                f"Spark master {master} did not take the application within {time.monotonic() - up_at:.1f}s"
                f" (--spark-wait sets the bound); Spark's output: {log}"
            )
    if "error" in done:
        raise done["error"]
    return done["spark"]


def _env_made(context_class: Any) -> bool:
    """Whether the SparkContext under construction has made its SparkEnv, the step before its scheduler
    registers with the master (Spark's constructor blocks there until the master takes the application or
    Spark gives up, a minute later).  The JVM's start and the steps before take long on a loaded machine; they
    are not the master's doing, so the bound starts here."""
    gateway = context_class._gateway
    if gateway is None:
        return False
    try:
        # SparkEnv.get() is a Scala object's method: reached through its module instance (no static forwarder)
        module = gateway.jvm.java.lang.Class.forName("org.apache.spark.SparkEnv$").getField("MODULE$").get(None)
        return module.get() is not None
    except Exception:  # the JVM not answering yet: not made
        return False


def _kill_jvm(context_class: Any) -> None:
    """End the driver JVM this process started (a constructor blocked in it then fails in its own thread)."""
    gateway = context_class._gateway
    process = getattr(gateway, "proc", None)
    with contextlib.suppress(Exception):
        gateway.shutdown()
    if process is not None:
        with contextlib.suppress(Exception):
            process.kill()
            process.wait(timeout=10)
    context_class._gateway = context_class._jvm = None  # a later context starts a JVM of its own


def wait_for_executors(context: Any, master: str, wait_s: float, log: Path | str) -> None:
    """For a cluster master: return once the application has an executor, waiting at most ``wait_s`` seconds;
    else raise :class:`SparkUnavailable` (the caller stops the context).  ``context``: a SparkContext or a
    SparkSession.  A local master has none to wait for."""
    if is_local(master):
        return
    sc = getattr(context, "sparkContext", context)
    started = time.monotonic()
    while True:
        jsc = sc._jsc.sc()
        if jsc.isStopped():
            waited = time.monotonic() - started
            raise SparkUnavailable(
                f"Spark master {master} stopped the application after {waited:.1f}s; Spark's output: {log}"
            )
        if jsc.getExecutorMemoryStatus().size() > 1:  # the driver counts as one
            return
        waited = time.monotonic() - started
        if waited >= wait_s:
            raise SparkUnavailable(
                f"Spark master {master} gave no executor within {waited:.1f}s (not a Spark master, or no free"
                f" worker; --spark-wait sets the bound); Spark's output: {log}"
            )
        time.sleep(0.25)
