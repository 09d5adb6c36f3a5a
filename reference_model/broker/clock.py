"""Simulated time: a nanosecond clock and the timers that fire as it advances.

Everything time-based in the model (the unblocking interval, negative-ack redelivery, batch publish delays,
crash detection, receive timeouts, replication snapshots) is a timer on a :class:`SimClock`. Time moves only
when a caller advances it, so a run is a pure function of its inputs. Timers due at the same instant fire in
the order they were scheduled. Several brokers (one per cluster) may share one clock.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

from reference_model.errors import InvalidArgument, ModelStateError

__all__ = ["NS_PER_MS", "SimClock", "Timer"]

NS_PER_MS = 1_000_000
#: Fire at most this many timers in one ``advance``: a timer that keeps re-arming itself at "now" is a bug.
_MAX_TIMERS_PER_ADVANCE = 50_000_000


@dataclass(order=True, slots=True)
class Timer:
    """A scheduled callback; ``cancel()`` stops it from firing."""

    due_ns: int
    seq: int
    callback: Callable[[], None] | None = field(compare=False)
    #: a background task (periodic housekeeping): it never keeps :meth:`SimClock.run_until_idle` going
    daemon: bool = field(default=False, compare=False)

    def cancel(self) -> None:
        self.callback = None

    @property
    def cancelled(self) -> bool:
        return self.callback is None


class SimClock:
    """A deterministic clock: ``now_ns()``, timers, and ``advance(ms)`` to move time and fire them."""

    __slots__ = ("_heap", "_now_ns", "_running", "_seq")

    def __init__(self, start_ns: int = 0) -> None:
        if isinstance(start_ns, bool) or not isinstance(start_ns, int) or start_ns < 0:
            raise InvalidArgument(f"Expected a non-negative int for start_ns but got start_ns={start_ns!r}.")
        self._now_ns = start_ns
        self._heap: list[Timer] = []
        self._seq = itertools.count()
        self._running = False

    def now_ns(self) -> int:
        return self._now_ns

    def now_ms(self) -> int:
        return self._now_ns // NS_PER_MS

    def call_at(self, due_ns: int, callback: Callable[[], None], *, daemon: bool = False) -> Timer:
        """Fire ``callback`` when the clock reaches ``due_ns`` (now if it is in the past)."""
        timer = Timer(max(due_ns, self._now_ns), next(self._seq), callback, daemon)
        heapq.heappush(self._heap, timer)
        return timer

    def call_later(self, delay_ms: float, callback: Callable[[], None], *, daemon: bool = False) -> Timer:
        """Fire ``callback`` after ``delay_ms`` milliseconds of simulated time."""
        if delay_ms < 0:
            raise InvalidArgument(f"Expected a non-negative delay but got delay_ms={delay_ms!r}.")
        return self.call_at(self._now_ns + int(delay_ms * NS_PER_MS), callback, daemon=daemon)

    def next_due_ns(self, *, include_daemon: bool = True) -> int | None:
        """When the next live timer fires (``include_daemon=False``: the next non-background one), or ``None``."""
        heap = self._heap
        while heap and heap[0].cancelled:
            heapq.heappop(heap)
        if not heap:
            return None
        if include_daemon or not heap[0].daemon:
            return heap[0].due_ns
        live = [t.due_ns for t in heap if not t.cancelled and not t.daemon]
        return min(live) if live else None

    def run_until_idle(self, max_ms: float | None = None) -> None:
        """Advance through every pending non-background timer (and what they schedule) until none is left.

        Background (daemon) timers that fall due on the way fire too. ``max_ms`` bounds the simulated time
        spent; without it a timer chain that never ends raises :class:`ModelStateError`.
        """
        deadline = None if max_ms is None else self._now_ns + int(max_ms * NS_PER_MS)
        for _ in range(_MAX_TIMERS_PER_ADVANCE):
            due = self.next_due_ns(include_daemon=False)
            if due is None or (deadline is not None and due > deadline):
                if deadline is not None:
                    self.advance_to(deadline)
                else:
                    self.run_due()
                return
            self.advance_to(due)
        raise ModelStateError("run_until_idle did not settle: a timer keeps re-arming itself.")

    def run_due(self) -> int:
        """Fire every timer due at the current time (including ones they schedule for now); return how many."""
        return self._run_until(self._now_ns)

    def advance(self, ms: float) -> None:
        """Move time forward by ``ms`` milliseconds, firing timers in due order on the way."""
        if ms < 0:
            raise InvalidArgument(f"Time only moves forward: advance(ms={ms!r}) needs ms >= 0.")
        self.advance_to(self._now_ns + int(ms * NS_PER_MS))

    def advance_to(self, target_ns: int) -> None:
        """Move time forward to ``target_ns`` (no-op if already past it), firing timers on the way."""
        self._run_until(target_ns)
        if target_ns > self._now_ns:
            self._now_ns = target_ns

    def advance_until(self, condition: Callable[[], bool], timeout_ms: float | None) -> bool:
        """Advance timer by timer until ``condition()`` holds or ``timeout_ms`` passed; return ``condition()``.

        The clock stops at the instant the condition became true (or at the deadline), as a blocking call
        that returns as soon as it can. ``timeout_ms=None`` waits as long as non-background timers remain
        (a blocking call that would otherwise wait forever returns ``False`` instead).
        """
        deadline = None if timeout_ms is None else self._now_ns + int(max(timeout_ms, 0) * NS_PER_MS)
        self.run_due()
        while not condition():
            due = self.next_due_ns(include_daemon=deadline is not None)
            if due is None or (deadline is not None and due > deadline):
                if deadline is not None and deadline > self._now_ns:
                    self._run_until(deadline)
                    self._now_ns = max(self._now_ns, deadline)
                return condition()
            self._run_until(due)
        return True

    def _run_until(self, target_ns: int) -> int:
        if self._running:
            raise ModelStateError(
                "SimClock.advance was called from inside a timer callback; timers must not advance the clock."
            )
        self._running = True
        fired = 0
        try:
            heap = self._heap
            while heap:
                timer = heap[0]
                if timer.callback is None:
                    heapq.heappop(heap)
                    continue
                if timer.due_ns > target_ns:
                    break
                heapq.heappop(heap)
                if timer.due_ns > self._now_ns:
                    self._now_ns = timer.due_ns
                callback = timer.callback
                timer.callback = None
                callback()
                fired += 1
                if fired > _MAX_TIMERS_PER_ADVANCE:
                    raise ModelStateError("Too many timers fired in one advance: a timer re-arms itself forever.")
        finally:
            self._running = False
        return fired

    def __repr__(self) -> str:
        return f"SimClock(now_ns={self._now_ns}, timers={sum(1 for t in self._heap if not t.cancelled)})"
