"""Ctrl-C during a soak, in three steps, each said at once and each leaving the trace, a verdict and the summary.

A soak against a broker that has stopped answering can spend many seconds ending: every consumer and producer
close waits for the broker (bounded, 10 s each), then the trace sink writes its last chunk and the whole trace
is checked.  A user who presses Ctrl-C must see at once that the soak is stopping and what it waits for, and
a second Ctrl-C must end the waiting without losing what was recorded (before, it killed the process in the
middle of its teardown: no ``verdict.json``, no ``summary.json``, a stale ``.live-status``).  So:

1. the first Ctrl-C (or SIGTERM) ends the load: :class:`KeyboardInterrupt` in the run's thread, out of whatever
   step it is in; the run then ends as every run does (the ``end`` event, the consumers closed, the check);
2. the second stops waiting for the clients to close (they are left to the client library): the trace is
   ended, the sink finishes its last chunk, and what was recorded is checked;
3. the third stops what is left of that (the sink's last chunk, the check): no verdict, the trace as far as the
   sink wrote it, and the summary.

Later ones are ignored: what remains is writing the summary.  A Ctrl-C that comes once the load is over (during
the teardown or the check) counts from step 2: there is no load left to end.

The handler only raises or sets numbers (:attr:`Interrupts.level`); it takes no lock, since it runs in the run's
thread between two bytecodes, wherever that thread is.  The status thread sees the new level within 0.1 s and
reports it (the command prints the acknowledgement).
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["Interrupts", "join_unless"]

#: How often the waits of the teardown look at whether they should stop waiting (seconds).
_SLICE_S = 0.1


class Interrupts:
    """How many times the soak was interrupted (:attr:`level`, at most 3) and what that asks for."""

    def __init__(self) -> None:
        self.level = 0
        self.first_at: float | None = None  #: ``time.monotonic()`` of the first interrupt
        self.load_running = True  #: False once the load (steps and drain) is over
        self._breakable = False  #: inside a section a third interrupt may break (:meth:`breakable`)

    @property
    def stop_waiting_for_clients(self) -> bool:
        return self.level >= 2

    @property
    def stop_everything(self) -> bool:
        return self.level >= 3

    def handle(self, signum: int = signal.SIGINT, frame: Any = None) -> None:
        """The signal handler (SIGINT, SIGTERM)."""
        if self.level >= 3:
            return
        self.level = max(self.level + 1, 1 if self.load_running else 2)
        if self.first_at is None:
            self.first_at = time.monotonic()
        if self.level == 1 or (self.level >= 3 and self._breakable):
            raise KeyboardInterrupt

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        """Handle SIGINT and SIGTERM here while the soak runs (only from the main thread, where Python can)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
        # an ignored SIGINT stays ignored (a job started in the background without job control)
        handled = [sig for sig, was in previous.items() if was is not signal.SIG_IGN]
        for sig in handled:
            signal.signal(sig, self.handle)
        try:
            yield
        finally:
            for sig in handled:
                signal.signal(sig, previous[sig])

    @contextlib.contextmanager
    def breakable(self) -> Iterator[None]:
        """A section that a third interrupt breaks (:class:`KeyboardInterrupt` inside it); raises at once if one
        came already."""
        if self.stop_everything:
            raise KeyboardInterrupt
        self._breakable = True
        try:
            yield
        finally:
            self._breakable = False


def join_unless(thread: threading.Thread, deadline: float, give_up: Callable[[], bool]) -> None:
    """Wait for ``thread`` until ``deadline`` (``time.monotonic()``) or until ``give_up()`` says to stop waiting."""
    while thread.is_alive() and not give_up():
        left = deadline - time.monotonic()
        if left <= 0:
            return
        thread.join(min(_SLICE_S, left))
