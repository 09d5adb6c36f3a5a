"""Child processes that never outlive the run: loopback ports, bounded waits, stop by pid.

Brokers and helper processes are started in their own session (a Ctrl-C in the terminal reaches only us,
and we stop them in order), are asked to die with us on Linux (``PR_SET_PDEATHSIG``), and are killed by an
``atexit`` safety net if a caller forgot to stop them.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO

__all__ = ["free_port", "port_accepts", "spawn", "stop_process", "wait_for"]

_LIVE: dict[int, subprocess.Popen[bytes]] = {}
_LIVE_LOCK = threading.Lock()


def free_port() -> int:
    """A TCP port that is free on 127.0.0.1 right now (the caller binds it soon after)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def port_accepts(host: str, port: int, timeout_s: float = 0.2) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def wait_for(predicate: Callable[[], bool], timeout_s: float, interval_s: float = 0.01) -> bool:
    """Poll ``predicate`` until it is true or ``timeout_s`` passed; returns the last result."""
    deadline = time.monotonic() + timeout_s
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval_s)


def _load_prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
        return prctl
    except (OSError, AttributeError):
        return None


#: Resolved once here: the forked child must not load libraries (the loader lock may be held by a thread).
_PRCTL = _load_prctl()
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # pragma: no cover - runs in the forked child
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, int(signal.SIGTERM))


def spawn(
    argv: Sequence[str], *, log: IO[bytes], cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Start ``argv`` with stdout and stderr appended to ``log``; registered for the exit safety net."""
    proc = subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=None if cwd is None else str(cwd),
        env=env,
        start_new_session=True,
        preexec_fn=_die_with_parent,
    )
    with _LIVE_LOCK:
        _LIVE[proc.pid] = proc
    return proc


def stop_process(proc: subprocess.Popen[bytes], *, kill: bool = False, timeout_s: float = 5.0) -> int | None:
    """Stop ``proc`` by its pid (SIGTERM, or SIGKILL with ``kill``), escalate after ``timeout_s``; reap it."""
    try:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL if kill else signal.SIGTERM)
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=timeout_s)
    except ProcessLookupError:
        pass
    finally:
        with _LIVE_LOCK:
            _LIVE.pop(proc.pid, None)
    return proc.returncode


@atexit.register
def _kill_leftovers() -> None:  # pragma: no cover - safety net
    with _LIVE_LOCK:
        leftovers = list(_LIVE.values())
        _LIVE.clear()
    for proc in leftovers:
        with contextlib.suppress(Exception):
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=2)
