"""Deduplication epochs: the stretches of a trace over which the broker must remember a producer's ids.

The deduplication rules (:mod:`conformance.checks.duplicates`: ``duplicate_publish``, ``lost_write``,
``stored_below_highest``, ``last_sequence_id_behind``) compare a producer's ids with the ids it stored before.  Pulsar
forgets them at two moments a trace shows, so each starts a new *epoch* of the producer, and ids are compared only
within one:

* a **proven purge**: ``MessageDeduplication.purgeInactiveProducers`` forgets a producer disconnected for longer
  than ``brokerDeduplicationProducerInactivityTimeoutMinutes`` T, and ``BrokerService`` runs it at a fixed rate of
  P = T / 3 (``scheduleAtFixedRate(..., T / 3, T / 3)``, counted from the broker's start, which no client sees).
  A producer whose ``producer_close`` (recorded after the close returned) lies more than T + P before the ``t0`` of
  its next ``producer_open`` (when that creation began) was forgotten by some purge run in between, whatever the
  schedule's phase.  Its epoch starts at that ``producer_open``, which must be answered -1 (``not_purged``
  otherwise: :func:`make_not_purged`).  A creation answered -1 after a close that may have lasted longer than T
  (from the close's call to the creation's end) starts one too: a run may have come, as the answer says.  A broker
  restart or a deduplication switch between the close and the creation proves nothing (recovery does not mark a
  producer inactive, and a switch-on clears the marks), nor does a shorter inactivity: the rules then hold
  unchanged.  T comes from the header's ``broker_conf`` (the setting the
  run used); without it no purge is proven.
* a **deduplication switch**: the ``fault`` ``deduplication_off`` suspends the rules (the broker stores every send
  and answers a connecting producer -1; what it stores then is evidence of nothing), and ``deduplication_on``
  starts a new epoch of every producer (Pulsar opens a new ``pulsar.dedup`` cursor at the end of the topic: its
  maps start empty, and a broker restart replays only what was written after it).

The purge's **schedule** is judged too (``purge_off_schedule``): each creation after a close in the same broker life
(no restart between) whose producer had stored ids is a *probe*: answered -1, a purge run came after the close plus
T and before the creation; answered its ids, none did (between the close's ``t`` plus T and the creation's ``t0``).
The runs of one broker life are at ``s + kP`` for the life's start ``s``: unknown for the first life, within the
restart (``broker_restart`` .. ``broker_restarted``) for a later one (``BrokerService`` schedules the purge anew
when it starts).  :class:`Schedule` keeps the phases ``s mod P`` every probe so far allows; none left is the
finding.  A run may start up to :data:`RUN_DELAY_NS` late (the executor), so each probe is widened by it.

Epochs are kept as *identities*: epoch 0 of producer ``p`` is ``p`` itself, epoch n is ``p`` + :data:`SEP` + n, so
every map the rules keep by producer keeps them apart without a field of its own; :func:`split_identity` gives a
violation its producer's name back.  Both engines run this through the streaming checker; a trace with an epoch
event is checked whole by a partitioned engine (:meth:`Epochs.active`), since the events that start an epoch are
not about one message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "EPOCH_FAULTS",
    "RUN_DELAY_NS",
    "SEP",
    "TIMEOUT_SETTING",
    "Epochs",
    "Schedule",
    "purge_bound_ns",
    "split_identity",
]

#: the ``broker_conf`` setting (broker.conf name): minutes a disconnected producer is kept by deduplication
TIMEOUT_SETTING = "brokerDeduplicationProducerInactivityTimeoutMinutes"
#: between a producer's name and its epoch number in an identity (no producer name of a trace holds it)
SEP = "\x1e"
_NS_PER_MS = 1_000_000
#: the ``fault`` names that bear on epochs: a restart ends every proof of inactivity, a switch starts or suspends
EPOCH_FAULTS = frozenset({"broker_restart", "broker_restarted", "deduplication_off", "deduplication_on"})
#: how late a purge run may start after its nominal time on a loaded broker (the model: never)
RUN_DELAY_NS = 1_000_000_000


def purge_bound_ns(header_extra: Mapping[str, Any]) -> int | None:
    """T + P in ns (the inactivity timeout plus one purge period, a third of it) from the header's ``broker_conf``,
    or None when the header does not give a positive timeout (no purge is then proven)."""
    conf = header_extra.get("broker_conf")
    minutes = conf.get(TIMEOUT_SETTING) if isinstance(conf, Mapping) else None
    if minutes.__class__ is not int or minutes <= 0:  # bool is not int here
        return None
    timeout_ms = int(minutes) * 60_000
    return (timeout_ms + timeout_ms // 3) * _NS_PER_MS


def split_identity(identity: str) -> tuple[str, int]:
    """``(producer name, epoch)`` of an identity (epoch 0: the name itself)."""
    name, sep, epoch = identity.rpartition(SEP)
    if not sep or not epoch.isdigit():
        return identity, 0
    return name, int(epoch)


class Schedule:
    """The phases (``s mod P``, closed intervals of ``[0, P)`` in ns) a broker life's purge runs may have, narrowed
    by each probe (see the module); ``probes`` are the probing ``producer_open`` events so far."""

    __slots__ = ("feasible", "period", "probes")

    def __init__(self, period_ns: int, start: tuple[int, int] | None) -> None:
        self.period = period_ns
        self.feasible: list[tuple[int, int]] = [(0, period_ns - 1)]
        self.probes: list[int] = []
        if start is not None:  # the runs start one period after the broker's start: the start's phase
            self._keep(start[0], start[1])

    def _arc(self, lo: int, hi: int) -> list[tuple[int, int]]:
        """The closed arc ``[lo, hi]`` of the circle of length P as intervals of ``[0, P)``."""
        p = self.period
        if hi - lo >= p - 1:
            return [(0, p - 1)]
        a, b = lo % p, hi % p
        return [(a, b)] if a <= b else [(0, b), (a, p - 1)]

    def _keep(self, lo: int, hi: int) -> None:
        arcs = self._arc(lo, hi)
        self.feasible = [
            (max(f0, a0), min(f1, a1)) for f0, f1 in self.feasible for a0, a1 in arcs if max(f0, a0) <= min(f1, a1)
        ]

    def forgotten(self, i: int, after: int, before: int) -> None:
        """Event ``i`` shows a run in ``(after, before)`` (widened by :data:`RUN_DELAY_NS`)."""
        self.probes.append(i)
        self._keep(after - RUN_DELAY_NS, before)

    def remembered(self, i: int, after: int, before: int) -> None:
        """Event ``i`` shows no run in ``(after, before)`` (narrowed by :data:`RUN_DELAY_NS`)."""
        before -= RUN_DELAY_NS
        if before <= after:
            return
        self.probes.append(i)
        if before - after >= self.period:
            self.feasible = []
            return
        self._keep(before, after + self.period)  # the complement of the open arc (after, before)

    @property
    def broken(self) -> bool:
        return not self.feasible


class Epochs:
    """Which epoch each producer is in, as the trace's events say (see the module)."""

    __slots__ = ("_bound_ns", "_closed", "_restart_t", "_state", "_switches", "off", "schedules", "stored_as")

    def __init__(self, bound_ns: int | None, *, off: bool = False) -> None:
        self._bound_ns = bound_ns
        #: producer -> (t, i, t0) of its latest producer_close not yet followed by a creation
        self._closed: dict[str, tuple[int, int, int]] = {}
        #: producer -> [the switch-ons it has counted, its epoch]: a switch-on moves a producer to its next epoch
        #: when it is next seen (no set of every producer is kept for it; a producer first seen after a switch-on
        #: thus starts at epoch 1, with no ids in epoch 0 to share)
        self._state: dict[str, list[int]] = {}
        self._switches = 0  # deduplication switch-ons so far
        self.off = off  #: deduplication switched off: the rules are suspended
        #: message key -> the identity whose receipt stored it (a receive of a resent uid evidences that one)
        self.stored_as: dict[str, str] = {}
        #: the purge schedule of each broker life (the last one is the current life's); None without the timeout
        self.schedules: list[Schedule] = [] if bound_ns is None else [Schedule(self.period_ns, None)]
        self._restart_t: int | None = None

    @property
    def period_ns(self) -> int:
        """P, the purge's period (a third of the timeout), in ns; 0 without the timeout."""
        return (self._bound_ns or 0) // 4  # the bound is T + T/3 = 4 P (T a whole number of minutes)

    def _epoch(self, producer: str) -> list[int]:
        state = self._state.get(producer)
        if state is None:  # seen before the first switch for all this class knows (it is made at the first one)
            state = self._state[producer] = [0, 0]
        if state[0] != self._switches:
            state[0] = self._switches
            state[1] += 1
        return state

    def identity(self, producer: str) -> str | None:
        """The identity ``producer``'s events count under now; None while deduplication is off."""
        if self.off:
            return None
        epoch = self._epoch(producer)[1]
        return producer if epoch == 0 else f"{producer}{SEP}{epoch}"

    @property
    def bound_ms(self) -> int:
        """T + P in ms (0 when no purge is proven: the header gives no timeout)."""
        return (self._bound_ns or 0) // _NS_PER_MS

    def closed(self, producer: str, t: int, i: int, t0: int | None = None) -> None:
        """``producer_close`` (event ``i``, the close called at ``t0`` and returned by ``t``): the broker no longer had
        the producer from ``t`` on, and had it until ``t0``."""
        if not self.off:
            self._closed[producer] = (t, i, t if t0 is None else t0)

    def closed_at(self, producer: str) -> tuple[int, int, int] | None:
        """``(t, i, t0)`` of the producer's close that its next creation would end, if any."""
        return self._closed.get(producer)

    def probe(self, i: int, producer: str, t0: int, t: int, forgotten: bool) -> None:
        """A ``producer_open`` (event ``i``, creation from ``t0`` to ``t``) of a producer that stored ids before its
        close, ``forgotten`` (answered -1) or not: a probe of the purge's schedule (call before :meth:`opened`)."""
        closed = self._closed.get(producer)
        if closed is None or not self.schedules or self.off:
            return
        timeout = 3 * self.period_ns  # T
        close_t0, close_t = closed[2], closed[0]
        if forgotten:
            self.schedules[-1].forgotten(i, close_t0 + timeout, t)
        else:
            self.schedules[-1].remembered(i, close_t + timeout, t0)

    def opened(self, producer: str, t0: int, t: int, answer: int) -> bool:
        """A ``producer_open`` whose creation ran from ``t0`` to ``t``, answered ``answer``: whether it starts a new
        epoch.  It does past the bound (a proven purge: the answer must be -1), and when answered -1 after a close
        that may have lasted longer than T (``t`` minus the close's ``t0``): a purge run may have come, as the
        answer says; the producer's ids are then judged afresh (a resend dropped as a duplicate of a forgotten id is
        ``lost_write``)."""
        since = self._closed.pop(producer, None)
        if since is None or self._bound_ns is None or self.off:
            return False
        proven = t0 - since[0] > self._bound_ns
        if not proven and not (answer == -1 and t - since[2] > 3 * self.period_ns):
            return False
        self._epoch(producer)[1] += 1
        return True

    def restarted(self, t: int, done: bool) -> None:
        """A broker restart began (``broker_restart`` at ``t``) or ended (``broker_restarted``, ``done``): no inactivity
        across it is proven (recovery marks no producer inactive), and a new broker life starts, whose purge runs
        one period after its start, somewhere between the two."""
        self._closed.clear()
        if not done:
            self._restart_t = t
        elif self.schedules:
            start = t if self._restart_t is None else self._restart_t
            self.schedules.append(Schedule(self.period_ns, (start, t)))
            self._restart_t = None

    def switched(self, on: bool) -> None:
        """Deduplication switched off (the rules suspended) or on again (every producer's next epoch)."""
        self._closed.clear()
        if on and self.off:
            self._switches += 1
        self.off = not on
