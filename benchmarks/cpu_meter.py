"""CPU time (user + system) of a run's processes over a window of the monotonic clock, read from ``/proc``.

Why CPU time: on a machine shared with other jobs, throughput moves with the load, but the CPU-seconds a
process spends per message hardly do; so the harness's cost is also measured as CPU per message of every
process it runs (the clients' process, the trace sink, consumer processes) and of the broker, beside the raw
client's.  A thread samples ``/proc/PID/stat`` (``utime + stime``, every thread of the process, in clock ticks)
every ``interval_s``; :meth:`CpuMeter.between` interpolates the samples at the two ends of a window (the first
send and the last acknowledgement) and returns each process's CPU-seconds in it.  Processes are named by
role: this process (``clients``), the broker, and this process's children by their command line.  Linux only.
"""

from __future__ import annotations

import bisect
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["CpuMeter", "process_cpu_s", "thread_cpu_s"]

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat_cpu(path: str) -> float | None:
    """``utime + stime`` of one ``/proc/.../stat`` file, in seconds (None when the task is gone)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    fields = data[data.rindex(b")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / _TICK  # fields 14 and 15 of proc(5), after pid and comm


def process_cpu_s(pid: int) -> float | None:
    """CPU-seconds ``pid`` has used so far, every thread (None when it is gone)."""
    return _stat_cpu(f"/proc/{pid}/stat")


def thread_cpu_s(pid: int) -> dict[int, float]:
    """CPU-seconds per thread id of ``pid`` so far."""
    out: dict[int, float] = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        cpu = _stat_cpu(f"/proc/{pid}/task/{tid}/stat")
        if cpu is not None:
            out[int(tid)] = cpu
    return out


def _children(pid: int) -> list[int]:
    kids: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return kids
    for tid in tids:
        try:
            kids.extend(int(k) for k in Path(f"/proc/{pid}/task/{tid}/children").read_text().split())
        except OSError:
            continue
    return kids


def _role(pid: int) -> str:
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "child"
    if "sink_child" in cmd:
        return "trace sink"
    if "consumer_process" in cmd:
        return "consumer processes"
    if "checker_process" in cmd:
        return "checker process"
    return "other children"


class CpuMeter:
    """Samples the CPU time of this process, its children and ``extra`` processes every ``interval_s``."""

    def __init__(self, extra: Callable[[], dict[int, str]] | None = None, *, interval_s: float = 0.02) -> None:
        self._extra = extra or (lambda: {})
        self.interval_s = interval_s
        self.roles: dict[int, str] = {}
        self._series: dict[int, tuple[list[int], list[float]]] = {}  # pid -> (sample times, CPU-seconds)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cpu-meter", daemon=True)

    def __enter__(self) -> CpuMeter:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def sample(self) -> None:
        me = os.getpid()
        pids = {me: "clients", **self._extra()}
        for kid in _children(me):
            if self.roles.get(kid, "other children") == "other children":  # a fresh fork shows our own command
                self.roles[kid] = _role(kid)
            pids.setdefault(kid, self.roles[kid])
        now = time.monotonic_ns()
        cpu = {pid: c for pid in pids if (c := process_cpu_s(pid)) is not None}
        with self._lock:
            self.roles.update(pids)
            for pid, used in cpu.items():
                times, values = self._series.setdefault(pid, ([], []))
                times.append(now)
                values.append(used)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval_s)

    def _at(self, pid: int, t_ns: int) -> float:
        """CPU-seconds of ``pid`` at ``t_ns``: 0 before its first sample, its last value after its last one,
        interpolated between two samples."""
        times, values = self._series.get(pid, ([], []))
        k = bisect.bisect_left(times, t_ns)
        if k == 0:
            return 0.0
        if k == len(times):
            return values[-1]
        t_lo, t_hi = times[k - 1], times[k]
        return values[k - 1] + (values[k] - values[k - 1]) * (t_ns - t_lo) / (t_hi - t_lo)

    def between(self, t0_ns: int, t1_ns: int) -> dict[str, float]:
        """CPU-seconds per role in ``[t0_ns, t1_ns]``."""
        out: dict[str, float] = {}
        with self._lock:
            for pid, role in self.roles.items():
                used = self._at(pid, t1_ns) - self._at(pid, t0_ns)
                if used > 0:
                    out[role] = out.get(role, 0.0) + used
        return out

    def lifetime(self, role: str, since_ns: int) -> float:
        """CPU-seconds of the processes of ``role`` first seen after ``since_ns``, over their life so far."""
        with self._lock:
            return sum(
                values[-1]
                for pid, (times, values) in self._series.items()
                if times and times[0] >= since_ns and self.roles.get(pid) == role
            )
