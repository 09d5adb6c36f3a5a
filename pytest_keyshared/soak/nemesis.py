"""The nemesis: faults on single clients' connections, through a loopback proxy per client.

:class:`ProxiedSession` is the driver's :class:`~pytest_keyshared.driver.session.PulsarSession` with every
client (each consumer's, and the producers' shared one) pointed at a :class:`~.proxy.ProxyLink` of its own,
so a fault touches exactly one client: one consumer handle, or every producer.  :meth:`ProxiedSession.apply`
performs a :class:`~conformance.soak.NetFault`; the run records the ``fault`` event, naming the consumers or
producers it touches, *before* calling it (the recording discipline: a fault is recorded before it acts).
Works for any broker reached by URL (pulsar-lite, ``pulsar://HOST:PORT``, a container's mapped port).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from conformance.soak import PRODUCERS_CLIENT, NetFault
from pytest_keyshared.driver.pulsar_client import ClientSettings
from pytest_keyshared.driver.session import PulsarSession
from pytest_keyshared.soak.proxy import ProxyLink
from pytest_keyshared.targets.base import PulsarTarget, TargetError

__all__ = ["ProxiedSession", "upstream_of"]


def upstream_of(service_url: str) -> tuple[str, int]:
    """``pulsar://HOST:PORT`` -> ``(HOST, PORT)`` (TLS URLs cannot be proxied byte for byte here)."""
    parts = urlsplit(service_url)
    if parts.scheme != "pulsar" or parts.hostname is None:
        raise TargetError(f"Network faults need a pulsar:// service URL; the target serves {service_url!r}.")
    return parts.hostname, parts.port or 6650


class _ViaLink(ClientSettings):
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
        self.applied: dict[str, int] = {}  #: fault kind -> times applied

    def _link(self, client: str) -> ProxyLink:
        link = self.links.get(client)
        if link is None:
            link = self.links[client] = ProxyLink(self.upstream, client)
        return link

    def _settings_for(self, handle_name: str | None) -> Any:
        return _ViaLink(self.settings, self._link(handle_name or PRODUCERS_CLIENT).url)

    def restart_broker(self, *, kill: bool) -> None:
        super().restart_broker(kill=kill)
        upstream = upstream_of(self.pulsar_target.service_url)
        if upstream != self.upstream:  # the broker came back elsewhere: follow it
            self.upstream = upstream
            for link in self.links.values():
                link.upstream = upstream

    def producer_names(self) -> list[str]:
        return sorted(self._producers)

    def apply(self, fault: NetFault) -> dict[str, Any]:
        """Perform ``fault`` on its client's connections; returns facts for the trace (connections cut)."""
        link = self._link(fault.client)
        facts: dict[str, Any] = {}
        if fault.kind == "cut":
            facts["connections"] = link.cut()
        elif fault.kind == "stall":
            link.stall(not fault.heal)
        elif fault.kind == "delay":
            link.delay(0 if fault.heal else fault.delay_ms)
        elif fault.kind == "partition":
            facts["connections"] = link.partition(not fault.heal)
        else:
            raise ValueError(f"unknown network fault {fault.kind!r}")
        if not fault.heal:
            self.applied[fault.kind] = self.applied.get(fault.kind, 0) + 1
        return facts

    def close(self) -> None:
        try:
            super().close()
        finally:
            for link in self.links.values():
                link.close()
            self.links.clear()
