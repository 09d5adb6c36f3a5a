"""Consumer loops and their two schedulers: a thread per consumer (real brokers) or deterministic steps (model).

A :class:`ConsumerWorker` does one consumer's work: act on due acks, receive one message, record it, let the
:class:`~.agent.ConsumerAgent` decide, record each action and make the client call.  *When* that happens is
the scheduler's business: :class:`ThreadedScheduler` gives each worker a thread polling the client with a
short timeout; :class:`SteppedScheduler` runs every worker in open order on the model's simulated clock, with
no threads and no wall clock, so the same seed gives the same trace byte for byte.

Every wait is bounded: ``wait_until`` returns False when its bound expires, it never raises or hangs.
"""

from __future__ import annotations

import collections
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable

from conformance.trace import Op
from pytest_keyshared.driver.agent import Action, ConsumerAgent
from pytest_keyshared.driver.handles import ConsumerHandle
from pytest_keyshared.driver.recorder import Recorder

__all__ = ["ConsumerWorker", "Scheduler", "SteppedScheduler", "ThreadedScheduler"]

Command = Callable[[ConsumerAgent], list[Action]]


class ConsumerWorker:
    """One open consumer: its handle, its agent, and the errors its client calls raised."""

    def __init__(self, handle_name: str, handle: ConsumerHandle, agent: ConsumerAgent, recorder: Recorder) -> None:
        self.name = handle_name
        self.handle = handle
        self.agent = agent
        self.recorder = recorder
        self.errors: list[str] = []
        self.receive_failed = False  #: the last receive raised (the thread naps instead of spinning)
        self.prefetch_dropped = 0  #: prefetched messages dropped at ``redeliver`` (see :meth:`redeliver`)

    def execute(self, actions: list[Action]) -> None:
        """Record each action, then make the client call (ack / nack)."""
        for action in actions:
            try:
                if action.op == "ack":
                    self.recorder.ack(self.name, action.delivery)
                    self.handle.acknowledge(action.delivery)
                else:
                    self.recorder.nack(self.name, action.delivery)
                    self.handle.negative_acknowledge(action.delivery)
            except Exception as exc:
                self._note(f"{action.op} {action.delivery.msg_id}: {type(exc).__name__}: {exc}")

    def poll_once(self, timeout_ms: int, now_ns: Callable[[], int]) -> bool:
        """Due acks, then one receive unless paused.  True if anything happened."""
        did = False
        due = self.agent.due(now_ns())
        if due:
            self.execute(due)
            did = True
        if self.agent.ack_timeout_ms:
            for timed_out in self.agent.expired(now_ns()):
                self.recorder.ack_timeout(self.name, timed_out)  # the client sends it back on its own
                did = True
        if self.agent.paused:
            return did
        try:
            delivery = self.handle.receive(timeout_ms)
        except Exception as exc:
            self._note(f"receive: {type(exc).__name__}: {exc}")
            self.receive_failed = True
            return did
        self.receive_failed = False
        if delivery is None:
            return did
        self.recorder.receive(self.name, delivery)
        self.execute(self.agent.on_receive(delivery, now_ns()))
        return True

    #: Upper bound on prefetched messages dropped at a ``redeliver`` (more than any receiver queue we set).
    MAX_PREFETCH_DROP = 100_000

    def redeliver(self, *, keep_prefetched: bool = False) -> None:
        """Record, drop what the client prefetched, then ask the broker to take back everything unacknowledged.

        The C++ client (so the Python one) keeps its receiver queue on ``redeliverUnacknowledgedMessages``
        (the Java client clears it).  A message prefetched before the call would reach the application after
        the broker had taken it back and handed it to another consumer: a hold the broker never saw, which
        would show as a ``key_overlap`` that is not the broker's.  So the application drops, unrecorded,
        whatever is already in the queue before making the call, as a Java application would; the broker
        redelivers those messages like every other unacknowledged one.  (A message still in flight on the
        network can slip through; the window is the time the command takes to reach the broker.)  With
        ``keep_prefetched`` the queue is left as the client keeps it (the scenario's ``keep_prefetched``).
        """
        self.agent.drop_held()
        self.recorder.membership(Op.REDELIVER, self.name)
        dropped = 0
        try:
            while not keep_prefetched and dropped < self.MAX_PREFETCH_DROP and self.handle.receive(0) is not None:
                dropped += 1
            self.handle.redeliver_unacknowledged()
        except Exception as exc:
            self._note(f"redeliver: {type(exc).__name__}: {exc}")
        self.prefetch_dropped += dropped

    def _note(self, text: str) -> None:
        if len(self.errors) < 50:
            self.errors.append(text)


class Scheduler(ABC):
    """Runs consumer loops and waits; the run loop never sleeps or spawns threads itself."""

    @abstractmethod
    def now_ns(self) -> int: ...

    @abstractmethod
    def start(self, worker: ConsumerWorker) -> None:
        """Begin ``worker``'s loop (after its ``open`` was recorded)."""

    @abstractmethod
    def stop(self, worker: ConsumerWorker) -> None:
        """End ``worker``'s loop; it records nothing more afterwards."""

    @abstractmethod
    def call(self, worker: ConsumerWorker, command: Command) -> None:
        """Run ``command`` on ``worker``'s agent in its own context, then execute the actions it returns."""

    @abstractmethod
    def wait_until(self, predicate: Callable[[], bool], timeout_ms: int) -> bool:
        """Let consumers work until ``predicate()`` holds (True) or ``timeout_ms`` passed (False)."""

    def sleep(self, ms: int) -> None:
        self.wait_until(lambda: False, ms)

    def on_tick(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` now and then while waiting (progress reports)."""
        self._tick = callback

    def on_poll(self, callback: Callable[[], object]) -> None:
        """Call ``callback`` at every turn of a wait (cheap checks, such as the client-log watch)."""
        self._pollers = [*getattr(self, "_pollers", []), callback]

    def _polled(self) -> None:
        for callback in getattr(self, "_pollers", ()):
            callback()

    def _ticked(self) -> None:
        callback = getattr(self, "_tick", None)
        if callback is not None:
            callback()


class ThreadedScheduler(Scheduler):
    """A daemon thread per consumer polling with ``poll_ms``; commands reach it through a queue."""

    def __init__(self, *, poll_ms: int = 50, command_timeout_s: float = 30.0) -> None:
        self.poll_ms = poll_ms
        self.command_timeout_s = command_timeout_s
        self._threads: dict[int, _Loop] = {}

    #: the wall clock itself (no method call between: the trace writer reads it for every event)
    now_ns = staticmethod(time.monotonic_ns)

    def start(self, worker: ConsumerWorker) -> None:
        loop = _Loop(worker, self.poll_ms, self.now_ns)
        self._threads[id(worker)] = loop
        loop.thread.start()

    def stop(self, worker: ConsumerWorker) -> None:
        loop = self._threads.pop(id(worker), None)
        if loop is None:
            return
        loop.stopping.set()
        loop.wake.set()
        loop.thread.join(timeout=self.command_timeout_s)
        if loop.thread.is_alive():
            worker._note(f"consumer thread did not stop within {self.command_timeout_s:g}s")

    def call(self, worker: ConsumerWorker, command: Command) -> None:
        loop = self._threads.get(id(worker))
        if loop is None:
            worker.execute(command(worker.agent))
            return
        done = threading.Event()
        loop.commands.append((command, done))
        loop.wake.set()
        if not done.wait(self.command_timeout_s):
            worker._note(f"command not run within {self.command_timeout_s:g}s (consumer thread blocked)")

    def wait_until(self, predicate: Callable[[], bool], timeout_ms: int) -> bool:
        deadline = time.monotonic() + timeout_ms / 1000
        next_tick = time.monotonic() + 1.0
        while True:
            self._polled()
            if predicate():
                return True
            now = time.monotonic()
            if now >= deadline:
                return False
            if now >= next_tick:
                self._ticked()
                next_tick = now + 1.0
            time.sleep(min(0.01, max(0.0, deadline - now)))


class _Loop:
    """A consumer's thread: commands first, then due acks and one receive (or, paused, a short nap)."""

    def __init__(self, worker: ConsumerWorker, poll_ms: int, now_ns: Callable[[], int]) -> None:
        self.worker = worker
        self.poll_ms = poll_ms
        self.now_ns = now_ns
        self.stopping = threading.Event()
        self.wake = threading.Event()
        #: (command, done) from other threads: a deque, whose ``append`` and ``popleft`` are atomic, so the loop
        #: looks at it at every turn without taking a lock or raising ``queue.Empty``
        self.commands: collections.deque[tuple[Command, threading.Event]] = collections.deque()
        self.thread = threading.Thread(target=self.run, name=f"ks-consumer-{worker.name}", daemon=True)

    def run(self) -> None:
        worker = self.worker
        while not self.stopping.is_set():
            commands = self.commands
            while commands:
                command, done = commands.popleft()
                try:
                    worker.execute(command(worker.agent))
                except Exception as exc:
                    worker._note(f"command: {type(exc).__name__}: {exc}")
                finally:
                    done.set()
            if self.stopping.is_set():
                break
            if worker.agent.paused:
                worker.poll_once(0, self.now_ns)  # due acks only: a paused consumer does not receive
                self.wake.wait(self.poll_ms / 1000)
                self.wake.clear()
                continue
            worker.poll_once(self.poll_ms, self.now_ns)
            if worker.receive_failed:  # e.g. the connection is gone: retry at the poll pace, not in a spin
                self.wake.wait(self.poll_ms / 1000)
                self.wake.clear()


class SteppedScheduler(Scheduler):
    """Deterministic: workers run in open order on a simulated clock advanced by ``advance(ms)``.

    ``now_ns`` reads the simulated clock; ``advance`` moves it (and lets the model dispatch).  A wait steps
    every worker until none makes progress, checks the predicate, then advances the clock by ``tick_ms``.
    """

    def __init__(self, now_ns: Callable[[], int], advance: Callable[[int], None], *, tick_ms: int = 1) -> None:
        self._now_ns = now_ns
        self._advance = advance
        self.tick_ms = tick_ms
        self._workers: list[ConsumerWorker] = []

    def now_ns(self) -> int:
        return self._now_ns()

    def start(self, worker: ConsumerWorker) -> None:
        self._workers.append(worker)

    def stop(self, worker: ConsumerWorker) -> None:
        self._workers = [w for w in self._workers if w is not worker]

    def call(self, worker: ConsumerWorker, command: Command) -> None:
        worker.execute(command(worker.agent))

    def pump(self) -> bool:
        """Step every worker until none makes progress; True if any did."""
        any_progress = False
        progress = True
        while progress:
            progress = False
            for worker in list(self._workers):
                while worker.poll_once(0, self._now_ns):
                    progress = True
                    any_progress = True
        return any_progress

    def wait_until(self, predicate: Callable[[], bool], timeout_ms: int) -> bool:
        deadline = self._now_ns() + timeout_ms * 1_000_000
        while True:
            self.pump()
            self._polled()
            if predicate():
                return True
            if self._now_ns() >= deadline:
                return False
            self._advance(self.tick_ms)
