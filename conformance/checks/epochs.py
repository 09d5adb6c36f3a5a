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
  otherwise: :func:`make_not_purged`).  A broker restart or a deduplication switch between the close and the
  creation proves nothing (recovery does not mark a producer inactive, and a switch-on clears the marks), nor does
  a shorter inactivity: the rules then hold unchanged.  T comes from the header's ``broker_conf`` (the setting the
  run used); without it no purge is proven.
* a **deduplication switch**: the ``fault`` ``deduplication_off`` suspends the rules (the broker stores every send
  and answers a connecting producer -1; what it stores then is evidence of nothing), and ``deduplication_on``
  starts a new epoch of every producer (Pulsar opens a new ``pulsar.dedup`` cursor at the end of the topic: its
  maps start empty, and a broker restart replays only what was written after it).

Epochs are kept as *identities*: epoch 0 of producer ``p`` is ``p`` itself, epoch n is ``p`` + :data:`SEP` + n, so
every map the rules keep by producer keeps them apart without a field of its own; :func:`split_identity` gives a
violation its producer's name back.  Both engines run this through the streaming checker; a trace with an epoch
event is checked whole by a partitioned engine (:meth:`Epochs.active`), since the events that start an epoch are
not about one message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["EPOCH_FAULTS", "SEP", "TIMEOUT_SETTING", "Epochs", "purge_bound_ns", "split_identity"]

#: the ``broker_conf`` setting (broker.conf name): minutes a disconnected producer is kept by deduplication
TIMEOUT_SETTING = "brokerDeduplicationProducerInactivityTimeoutMinutes"
#: between a producer's name and its epoch number in an identity (no producer name of a trace holds it)
SEP = "\x1e"
_NS_PER_MS = 1_000_000
#: the ``fault`` names that bear on epochs: a restart ends every proof of inactivity, a switch starts or suspends
EPOCH_FAULTS = frozenset({"broker_restart", "deduplication_off", "deduplication_on"})


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


class Epochs:
    """Which epoch each producer is in, as the trace's events say (see the module)."""

    __slots__ = ("_bound_ns", "_closed", "_state", "_switches", "off", "stored_as")

    def __init__(self, bound_ns: int | None, *, off: bool = False) -> None:
        self._bound_ns = bound_ns
        #: producer -> (t, i) of its latest producer_close not yet followed by a creation
        self._closed: dict[str, tuple[int, int]] = {}
        #: producer -> [the switch-ons it has counted, its epoch]: a switch-on moves a producer to its next epoch
        #: when it is next seen (no set of every producer is kept for it; a producer first seen after a switch-on
        #: thus starts at epoch 1, with no ids in epoch 0 to share)
        self._state: dict[str, list[int]] = {}
        self._switches = 0  # deduplication switch-ons so far
        self.off = off  #: deduplication switched off: the rules are suspended
        #: message key -> the identity whose receipt stored it (a receive of a resent uid evidences that one)
        self.stored_as: dict[str, str] = {}

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

    def closed(self, producer: str, t: int, i: int) -> None:
        """``producer_close`` (event ``i``) at ``t``: the broker no longer had the producer from then on."""
        if not self.off:
            self._closed[producer] = (t, i)

    def closed_at(self, producer: str) -> tuple[int, int] | None:
        """``(t, i)`` of the producer's close that its next creation would end, if any."""
        return self._closed.get(producer)

    def opened(self, producer: str, t0: int) -> bool:
        """A ``producer_open`` whose creation began at ``t0``: whether it starts a new epoch (a proven purge)."""
        since = self._closed.pop(producer, None)
        if since is None or self._bound_ns is None or self.off or t0 - since[0] <= self._bound_ns:
            return False
        self._epoch(producer)[1] += 1
        return True

    def restarted(self) -> None:
        """A broker restart: no inactivity across it is proven (recovery marks no producer inactive)."""
        self._closed.clear()

    def switched(self, on: bool) -> None:
        """Deduplication switched off (the rules suspended) or on again (every producer's next epoch)."""
        self._closed.clear()
        if on and self.off:
            self._switches += 1
        self.off = not on
