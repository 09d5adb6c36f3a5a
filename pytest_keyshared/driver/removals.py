"""After a crash: record ``gone`` once the broker's topic stats no longer list the crashed consumer.

A broker removes a crashed consumer when it notices the dead connection, at a moment the trace does not show,
so the ``misassigned`` check keeps every membership the broker could have had meanwhile, and each crash doubles
them (``docs/checker.md``, "misassigned in detail").  A ``gone`` event bounds that: it is recorded *after* the
harness read stats in which the consumer is missing, so the removal happened before it
(``docs/trace-format.md``).  Targets whose session can read the subscription's consumers (the model; a broker
with an admin API) record it; the others record nothing, as before.

Stats name consumers, not incarnations: a crashed handle counts as removed when the stats list no more
consumers of its broker name than the open handles with that name (so several crashed consumers sharing a name
are all removed by then).  The stats are read at most every :data:`EVERY_NS` of the run's clock, only while a
crash is waiting.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

__all__ = ["EVERY_NS", "RemovalWatch", "stats_consumer_names"]

#: the least time between two reads of the stats (run clock: the model's simulated one, or the wall clock)
EVERY_NS = 100_000_000


def stats_consumer_names(stats: Any, subscription: str) -> Counter[str] | None:
    """How many consumers of each name a topic stats document lists for ``subscription`` (``None``: no such
    subscription in it, so nothing can be told)."""
    sub = (stats.get("subscriptions") or {}).get(subscription) if isinstance(stats, dict) else None
    if not isinstance(sub, dict):
        return None
    return Counter(str(consumer.get("consumerName")) for consumer in sub.get("consumers") or ())


class RemovalWatch:
    """Crashed handles waiting for the stats to show their removal; :meth:`poll` records their ``gone``.

    ``read``: the subscription's consumer names now (``None`` when the target cannot tell: the watch then
    stops); ``open_names``: the broker names of the handles open now; ``record``: writes ``gone`` for a handle.
    """

    def __init__(
        self,
        read: Callable[[], Counter[str] | None],
        open_names: Callable[[], list[str]],
        record: Callable[[str], object],
        now_ns: Callable[[], int],
    ) -> None:
        self._read = read
        self._open_names = open_names
        self._record = record
        self._now_ns = now_ns
        self._waiting: dict[str, str] = {}  # crashed handle -> its broker name
        self._last_read: int | None = None
        self.stopped = False

    def crashed(self, handle: str, broker_name: str) -> None:
        """``handle`` (subscribed as ``broker_name``) was crashed: look at once (the broker may have noticed
        already), then at every :meth:`poll`."""
        if not self.stopped:
            self._waiting[handle] = broker_name
            self._last_read = None
            self.poll()

    def reopened(self, handle: str) -> None:
        """A new incarnation of ``handle``: a ``gone`` recorded later would name it, so none is."""
        self._waiting.pop(handle, None)

    def poll(self) -> None:
        if not self._waiting:
            return
        now = self._now_ns()
        if self._last_read is not None and now - self._last_read < EVERY_NS:
            return
        self._last_read = now
        names = self._read()
        if names is None:
            self.stopped = True
            self._waiting.clear()
            return
        open_now = Counter(self._open_names())
        for handle, broker_name in list(self._waiting.items()):
            if names[broker_name] <= open_now[broker_name]:
                del self._waiting[handle]
                self._record(handle)
