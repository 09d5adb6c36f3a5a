"""The nemesis: faults on single clients' connections, through a loopback proxy per client.

:class:`ProxiedSession` is the driver's :class:`~pytest_keyshared.driver.session.PulsarSession` with every
client (each consumer's, and the producers' shared one) pointed at a :class:`~.proxy.ProxyLink` of its own,
so a fault touches exactly one client: one consumer handle, or every producer.

:class:`Nemesis` is a thread beside the workload (Jepsen's nemesis process): it takes the plan's faults
(:meth:`conformance.soak.SoakGenerator.nemesis`) when due, picks the client among those open then, records the
``fault`` event naming the consumers or producers it touches *before* acting (the recording discipline), and
heals stalls, delays and partitions when their time is up (a ``<fault>_heal`` event).  Stopped, it heals what
is still active, so the drain runs on a healthy network.
Works for any broker reached by URL (pulsar-lite, ``pulsar://HOST:PORT``, a container's mapped port).
"""

from __future__ import annotations

import heapq
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from conformance.soak import PRODUCERS_CLIENT, NetFault
from pytest_keyshared.driver.pulsar_client import ClientSettings
from pytest_keyshared.driver.session import PulsarSession
from pytest_keyshared.soak.proxy import ProxyLink
from pytest_keyshared.targets.base import PulsarTarget, TargetError

__all__ = ["Nemesis", "ProxiedSession", "ViaLink", "upstream_of"]


def upstream_of(service_url: str) -> tuple[str, int]:
    """``pulsar://HOST:PORT`` -> ``(HOST, PORT)`` (TLS URLs cannot be proxied byte for byte here)."""
    parts = urlsplit(service_url)
    if parts.scheme != "pulsar" or parts.hostname is None:
        raise TargetError(f"Network faults need a pulsar:// service URL; the target serves {service_url!r}.")
    return parts.hostname, parts.port or 6650


class ViaLink(ClientSettings):
    """The run's client settings with another service URL; consumer ids still come from the run's counter."""

    def __init__(self, base: ClientSettings, url: str) -> None:
        super().__init__(
            url,
            operation_timeout_s=base.operation_timeout_s,
            log_path=base.log_path,
            distinct_ids=base.distinct_ids,
            nonce=base.nonce,
        )
        self._base = base

    def reserve_consumer_id(self) -> int:
        return self._base.reserve_consumer_id()


class ProxiedSession(PulsarSession):
    """A real broker, each client behind a proxy of its own; :meth:`apply` injects a network fault."""

    def __init__(self, target: PulsarTarget, topic: str, run_dir: Path, nonce: str) -> None:
        super().__init__(target, topic, run_dir, nonce)
        self.upstream = upstream_of(target.service_url)
        self.links: dict[str, ProxyLink] = {}

    def _link(self, client: str) -> ProxyLink:
        link = self.links.get(client)
        if link is None:
            link = self.links[client] = ProxyLink(self.upstream, client)
        return link

    def _settings_for(self, handle_name: str | None) -> Any:
        return ViaLink(self.settings, self._link(handle_name or PRODUCERS_CLIENT).url)

    def restart_broker(self, *, kill: bool) -> None:
        super().restart_broker(kill=kill)
        upstream = upstream_of(self.pulsar_target.service_url)
        if upstream != self.upstream:  # the broker came back elsewhere: follow it
            self.upstream = upstream
            for link in self.links.values():
                link.upstream = upstream

    def producer_names(self) -> list[str]:
        return sorted(self._producers)

    def apply(self, kind: str, client: str, *, heal: bool = False, delay_ms: int = 0) -> dict[str, Any]:
        """Start (or ``heal``) fault ``kind`` on ``client``'s connections; returns facts (connections cut)."""
        link = self._link(client)
        facts: dict[str, Any] = {}
        if kind == "cut":
            facts["connections"] = link.cut()
        elif kind == "stall":
            link.stall(not heal)
        elif kind == "delay":
            link.delay(0 if heal else delay_ms)
        elif kind == "partition":
            facts["connections"] = link.partition(not heal)
        else:
            raise ValueError(f"unknown network fault {kind!r}")
        return facts

    def close(self) -> None:
        try:
            super().close()
        finally:
            for link in self.links.values():
                link.close()
            self.links.clear()


class Nemesis:
    """Runs the network faults of a soak in a thread of its own until :meth:`stop`."""

    def __init__(
        self,
        session: ProxiedSession,
        recorder: Any,
        faults: Iterator[NetFault],
        consumers: Callable[[], list[str]],
        *,
        started: float,
    ) -> None:
        self.session = session
        self.recorder = recorder
        self.faults = faults
        self.consumers = consumers
        self.started = started  #: time.monotonic() of the run's start
        self.counts: dict[str, int] = {}
        self.errors: list[str] = []
        self._active: dict[tuple[str, str], float] = {}  # (kind, client) -> heal due (monotonic)
        self._heals: list[tuple[float, str, str]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ks-nemesis", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        try:
            for fault in self.faults:
                due = self.started + fault.at_ms / 1000
                while not self._stop.is_set():
                    self._heal_due()
                    now = time.monotonic()
                    if now >= due:
                        break
                    next_heal = self._heals[0][0] if self._heals else due
                    self._stop.wait(min(due, next_heal, now + 0.5) - now)
                if self._stop.is_set():
                    return
                self._inject(fault)
        except Exception as exc:  # the nemesis must never take the run down
            self.errors.append(f"{type(exc).__name__}: {exc}")

    def _touched(self, client: str) -> dict[str, Any]:
        if client == PRODUCERS_CLIENT:
            return {"producers": self.session.producer_names()}
        return {"consumers": [client]}

    def _inject(self, fault: NetFault) -> None:
        client = fault.client(self.consumers())
        if (fault.kind, client) in self._active:
            return  # that client already suffers this fault
        if client == PRODUCERS_CLIENT and not self.session.producer_names():
            return  # no producer has connected yet (a fault at the very start): nothing to fault
        self.recorder.fault(
            f"net_{fault.kind}",
            client=client,
            seconds=fault.seconds or None,
            delay_ms=fault.delay_ms or None,
            **self._touched(client),
        )
        self.session.apply(fault.kind, client, delay_ms=fault.delay_ms)
        self.counts[fault.kind] = self.counts.get(fault.kind, 0) + 1
        if fault.kind != "cut":
            heal_at = time.monotonic() + fault.seconds
            self._active[(fault.kind, client)] = heal_at
            heapq.heappush(self._heals, (heal_at, fault.kind, client))

    def _heal_due(self, everything: bool = False) -> None:
        while self._heals and (everything or self._heals[0][0] <= time.monotonic()):
            _, kind, client = heapq.heappop(self._heals)
            self._active.pop((kind, client), None)
            self.recorder.fault(f"net_{kind}_heal", client=client, **self._touched(client))
            self.session.apply(kind, client, heal=True)

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop injecting, then heal every active fault (recorded), so what follows runs on a healthy network."""
        self._stop.set()
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            self.errors.append(f"the nemesis thread did not stop within {timeout_s:g}s")
            return
        try:
            self._heal_due(everything=True)
        except Exception as exc:
            self.errors.append(f"healing at the end: {type(exc).__name__}: {exc}")
