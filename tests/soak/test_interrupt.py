"""Ctrl-C on a soak, typed on a terminal: ``keyshared soak`` on pulsar-lite in a pseudo-terminal, and ^C written to
it (the terminal's line discipline sends SIGINT to the foreground process group, as a user's keypress does).

The first ^C is acknowledged at once (what the soak stops, what it waits for, bounded); a second one stops the
waiting for the clients; either way the trace is ended, what was recorded is judged (verdict.json), the summary,
the broker's log and the report are written, the status file is removed, and the last line says "interrupted".
"""

from __future__ import annotations

import contextlib
import json
import os
import pty
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from conformance.trace.chunks import read_chunks

pytestmark = pytest.mark.broker

_BOUND_S = 120


class Terminal:
    """``keyshared soak ARGS`` in a pseudo-terminal: everything it writes, and keys typed to it."""

    def __init__(self, *args: str) -> None:
        argv = [sys.executable, "-m", "pytest_keyshared.cli", "soak", *args]
        pid, fd = pty.fork()
        if pid == 0:  # pragma: no cover - the child: SIGINT as a terminal's foreground job has it, then the CLI
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.execv(argv[0], argv)
        self.pid, self.fd = pid, fd
        self.output = ""
        self._lock = threading.Lock()
        self.status: int | None = None
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.fd, 4096)
            except OSError:  # the child is gone (EIO)
                return
            if not data:
                return
            with self._lock:
                self.output += data.decode("utf-8", "replace")

    def text(self) -> str:
        with self._lock:
            return self.output

    def wait_for(self, needle: str, bound_s: float, since: int = 0) -> float:
        """Seconds until ``needle`` appears in the output after position ``since``."""
        started = time.monotonic()
        while needle not in self.text()[since:]:
            assert time.monotonic() - started < bound_s, f"no {needle!r} within {bound_s}s: {self.text()[-3000:]}"
            assert self.status is None and os.waitpid(self.pid, os.WNOHANG) == (0, 0), self.text()[-3000:]
            time.sleep(0.02)
        return time.monotonic() - started

    def ctrl_c(self) -> int:
        """Type ^C; the output's length then."""
        mark = len(self.text())
        os.write(self.fd, b"\x03")
        return mark

    def wait_exit(self, bound_s: float) -> int:
        deadline = time.monotonic() + bound_s
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                time.sleep(0.2)  # the last output
                return os.waitstatus_to_exitcode(status)
            time.sleep(0.05)
        raise AssertionError(f"still running after {bound_s}s: {self.text()[-3000:]}")

    def kill(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(self.fd)


def _start(out: Path) -> Terminal:
    term = Terminal("--duration", "30s", "--rate", "300", "--out", str(out))
    term.wait_for("[load]", 60)
    # the load under way: messages consumed (the status line's count)
    deadline = time.monotonic() + 60
    while "consumed 0 " in term.text().rsplit("[load]", 1)[-1] or "consumed" not in term.text():
        assert time.monotonic() < deadline, term.text()[-2000:]
        time.sleep(0.1)
    time.sleep(1.0)
    return term


def _assert_complete(out: Path, text: str) -> dict[str, object]:
    """What an interrupted soak leaves: the trace ended, judged, summarised; no status file; no traceback."""
    assert "Traceback" not in text
    assert text.rstrip().splitlines()[-1].strip() == f"keyshared soak: interrupted; what was recorded is in {out}"
    for name in ("verdict.json", "summary.json", "broker.log", "report.html"):
        assert (out / name).is_file(), name
    assert not (out / ".live-status").exists()
    checker_log = out / "checker.log"
    assert "Traceback" not in (checker_log.read_text() if checker_log.exists() else "")
    summary: dict[str, object] = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["exit_code"] == 130 and summary["validity"] is not None
    events = list(read_chunks(out / "trace")[1])
    assert events[-1].op.value == "end" and events[-1].extra.get("interrupted") is True
    return summary


def test_one_ctrl_c_is_acknowledged_at_once_and_the_soak_ends_judged(tmp_path: Path) -> None:
    out = tmp_path / "s1"
    term = _start(out)
    try:
        mark = term.ctrl_c()
        took = term.wait_for("keyshared soak: interrupted at ", 5, since=mark)
        assert took < 2.0, f"the ^C was acknowledged after {took:.1f}s"
        after = term.text()[mark:]
        assert "stopping the load; waiting for the consumers and producers to close (at most 10s each)" in after
        assert "Ctrl-C again to stop waiting for the clients" in after
        term.wait_for("[stopping]", 5, since=mark)  # the status line says what it waits for
        code = term.wait_exit(_BOUND_S)
    finally:
        term.kill()
    text = term.text()
    assert code == 130, text[-3000:]
    assert "[load]" not in text[text.index("keyshared soak: interrupted at ") :]  # no longer "load" after ^C
    assert "interrupted again" not in text
    _assert_complete(out, text)


def test_a_second_ctrl_c_stops_waiting_and_still_leaves_verdict_and_summary(tmp_path: Path) -> None:
    """As in issue 28: the broker has stopped answering (frozen here by SIGSTOP, as pulsar-lite freezes), so each
    consumer's close waits its bound; the second ^C stops that waiting."""
    out = tmp_path / "s2"
    term = _start(out)
    broker = int(term.text().split("(pid ", 1)[1].split(",", 1)[0])
    try:
        os.kill(broker, signal.SIGSTOP)
        mark = term.ctrl_c()
        term.wait_for("keyshared soak: interrupted at ", 5, since=mark)
        term.wait_for("consumer(s) to close (", 15, since=mark)  # the status line: what it waits for, bounded
        second = term.ctrl_c()
        took = term.wait_for("keyshared soak: interrupted again: not waiting for the clients to close", 5, since=second)
        assert took < 2.0, f"the second ^C was acknowledged after {took:.1f}s"
        term.wait_for("[check]", 30, since=second)  # the clients left to the client library, the trace ended
        os.kill(broker, signal.SIGCONT)
        code = term.wait_exit(_BOUND_S)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(broker, signal.SIGCONT)
        term.kill()
    text = term.text()
    assert code == 130, text[-3000:]
    assert "Ctrl-C again to stop the check (no verdict)" in text
    assert "consumer(s) were not waited for (Ctrl-C) (left to the client)" in text
    _assert_complete(out, text)
