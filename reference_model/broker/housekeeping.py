"""The broker's periodic deduplication tasks, as background timers on the simulated clock.

Follows ``BrokerService``, which runs two fixed-rate tasks over every topic from the moment it starts:

* ``startInactivityMonitor``: ``checkMessageDeduplicationInfo`` every ``brokerDeduplicationProducerInactivity
  TimeoutMinutes / 3`` (``DedupConfig.purge_check_interval_ms``): ``MessageDeduplication.purgeInactiveProducers``
  forgets producers disconnected for longer than the timeout, so a producer that comes back afterwards is told
  ``last_sequence_id == -1`` and its old ids are accepted again;
* ``startDeduplicationSnapshotMonitor``: ``checkDeduplicationSnapshot`` every
  ``brokerDeduplicationSnapshotFrequencyInSeconds`` (``DedupConfig.snapshot_frequency_ms``; 0 disables it):
  ``MessageDeduplication.takeSnapshot`` stores the ``pulsar.dedup`` cursor at the last entry when the policy
  interval passed since the last snapshot, so that a restart replays fewer entries.

Both are *daemon* timers: they fire as time passes (``advance``, ``receive`` with a timeout), but they are
housekeeping, never work that :meth:`SimClock.run_until_idle` waits for. A broker restart starts them afresh
from the restart (a new ``BrokerService``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from reference_model.broker.clock import SimClock, Timer

if TYPE_CHECKING:
    from reference_model.broker.topic import ServerTopic

__all__ = ["DedupHousekeeping"]


class DedupHousekeeping:
    """The two periodic deduplication tasks of one broker over its topics (``topics()`` at each run)."""

    __slots__ = ("_clock", "_purge_ms", "_snapshot_ms", "_timers", "_topics", "purges", "snapshot_checks")

    def __init__(
        self,
        clock: SimClock,
        topics: Callable[[], list[ServerTopic]],
        *,
        purge_check_interval_ms: int,
        snapshot_frequency_ms: int,
    ) -> None:
        self._clock = clock
        self._topics = topics
        self._purge_ms = purge_check_interval_ms
        self._snapshot_ms = snapshot_frequency_ms
        self._timers: dict[str, Timer] = {}
        #: how many times each task ran (introspection for tests)
        self.purges = 0
        self.snapshot_checks = 0

    def start(self) -> None:
        """(Re)start both tasks from now: first run one period from now, then every period (fixed rate)."""
        self.stop()
        if self._purge_ms > 0:
            self._every("purge", self._purge_ms, self._purge_inactive_producers)
        if self._snapshot_ms > 0:
            self._every("snapshot", self._snapshot_ms, self._take_timed_snapshots)

    def stop(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()

    def _every(self, name: str, period_ms: int, task: Callable[[], None]) -> None:
        clock = self._clock
        timers = self._timers

        def tick() -> None:
            timers[name] = clock.call_later(period_ms, tick, daemon=True)  # the next run, at a fixed rate
            task()

        timers[name] = clock.call_later(period_ms, tick, daemon=True)

    def _purge_inactive_producers(self) -> None:
        """``BrokerService.checkMessageDeduplicationInfo``: every topic purges its inactive producers."""
        self.purges += 1
        now = self._clock.now_ns()
        for server in self._topics():
            server.dedup.purge_inactive(now_ns=now)

    def _take_timed_snapshots(self) -> None:
        """``forEachTopic(Topic::checkDeduplicationSnapshot)``: every topic takes a time-based snapshot if due."""
        self.snapshot_checks += 1
        now = self._clock.now_ns()
        for server in self._topics():
            server.dedup.take_timed_snapshot(now_ns=now, last_position=server.log.last_position)

    def __repr__(self) -> str:
        return (
            f"DedupHousekeeping(purge every {self._purge_ms} ms, snapshot check every {self._snapshot_ms} ms,"
            f" {len(self._timers)} timers armed)"
        )
