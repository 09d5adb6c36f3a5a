"""Containers and private networks in Docker, described as data and started through testcontainers.

A :class:`ContainerSpec` says everything about a container before Docker is touched: image, command,
environment, the ports it publishes (on 127.0.0.1 only, under the same numbers inside and out), the private
network it joins and its aliases there.  The specs are plain values, so the targets' choices are unit-tested
without a Docker engine; :class:`RunningContainer` and :class:`PrivateNetwork` are the thin layer that hands
them to testcontainers.

Ryuk is never used: it publishes its own port on all interfaces.  Whatever is started here is removed when its
owner stops it, and by an ``atexit`` safety net if the owner forgot.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_keyshared.targets.base import TargetError

__all__ = [
    "LOOPBACK",
    "ContainerSpec",
    "DockerUnavailable",
    "PrivateNetwork",
    "RunningContainer",
    "docker_engine_problem",
]

#: The only host interface anything is published on.
LOOPBACK = "127.0.0.1"

_LIVE: dict[int, Any] = {}  # id(owner) -> object with .stop() or .remove()
_LIVE_LOCK = threading.Lock()


class DockerUnavailable(TargetError):
    """No Docker engine is reachable; tests that need one skip with this message."""


def docker_engine_problem(timeout_s: float = 3.0) -> str | None:
    """None when a Docker engine answers a ping, else why not (the reason docker tests skip with)."""
    try:
        docker: Any = importlib.import_module("docker")  # optional dependency, only for these targets
    except ImportError:
        return "the 'docker' package is not installed (pip install 'pytest-keyshared[docker]')"
    try:
        client = docker.from_env(timeout=int(max(1, timeout_s)))
        try:
            client.ping()
        finally:
            client.close()
    except Exception as exc:  # docker raises several unrelated types for "no engine"
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'no answer'}"
    return None


@dataclass(frozen=True, slots=True)
class ContainerSpec:
    """One container, fully described before it exists.

    ``ports`` lists the container ports to publish; each is published on ``127.0.0.1`` under the same number
    (a broker that advertises ``127.0.0.1:<port>`` then answers lookups with an address the host can reach,
    and, inside its container, with itself).  ``aliases`` are its names on ``network``.
    """

    image: str
    command: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    ports: tuple[int, ...] = ()
    network: str | None = None
    aliases: tuple[str, ...] = ()

    def published(self) -> dict[str, tuple[str, int]]:
        """The port bindings as Docker takes them: ``{"6650/tcp": ("127.0.0.1", 6650)}``."""
        return {f"{port}/tcp": (LOOPBACK, port) for port in self.ports}

    def describe(self) -> str:
        where = f" on network {self.network} as {', '.join(self.aliases)}" if self.network else ""
        ports = ", ".join(f"{LOOPBACK}:{p}" for p in self.ports) or "no ports"
        return f"{self.image} ({ports}){where}"


def _require_engine() -> None:
    problem = docker_engine_problem()
    if problem is not None:
        raise DockerUnavailable(f"no Docker engine reachable ({problem})")


def _no_ryuk() -> None:
    from testcontainers.core.config import testcontainers_config

    testcontainers_config.ryuk_disabled = True  # Ryuk publishes its port on all interfaces


class PrivateNetwork:
    """A user-defined bridge network only our containers join (name chosen by testcontainers)."""

    def __init__(self) -> None:
        self._network: Any = None

    @property
    def name(self) -> str:
        if self._network is None:
            raise TargetError("The private Docker network is not created.")
        name: str = self._network.name
        return name

    @property
    def handle(self) -> Any:
        return self._network

    def create(self) -> PrivateNetwork:
        _require_engine()
        _no_ryuk()
        from testcontainers.core.network import Network

        try:
            self._network = Network().create()
        except Exception as exc:
            raise TargetError(f"Could not create a Docker network: {type(exc).__name__}: {exc}") from None
        with _LIVE_LOCK:
            _LIVE[id(self)] = self
        return self

    def remove(self) -> None:
        network, self._network = self._network, None
        with _LIVE_LOCK:
            _LIVE.pop(id(self), None)
        if network is not None:
            with contextlib.suppress(Exception):
                network.remove()

    def stop(self) -> None:  # the safety net's verb
        self.remove()


class RunningContainer:
    """A started container: its logs, restart, pause, and removal.  Built from a :class:`ContainerSpec`."""

    def __init__(self, spec: ContainerSpec, *, network: PrivateNetwork | None = None) -> None:
        self.spec = spec
        self._network = network
        self._container: Any = None

    @property
    def started(self) -> bool:
        return self._container is not None

    def start(self) -> RunningContainer:
        """``docker run`` the spec; :class:`DockerUnavailable` without an engine, :class:`TargetError` on failure."""
        _require_engine()
        _no_ryuk()
        from testcontainers.core.container import DockerContainer

        container = DockerContainer(self.spec.image)
        for key, value in self.spec.env.items():
            container.with_env(key, value)
        container.with_command(list(self.spec.command))
        ports: dict[str, Any] = container.ports
        ports.update(self.spec.published())
        if self.spec.network is not None:
            if self._network is None or self._network.name != self.spec.network:
                raise TargetError(
                    f"Container {self.spec.describe()} needs network {self.spec.network!r} created first."
                )
            container.with_network(self._network.handle)
            container.with_network_aliases(*self.spec.aliases)
        try:
            container.start()
        except Exception as exc:
            with contextlib.suppress(Exception):
                container.stop()
            raise TargetError(f"Could not start container {self.spec.describe()}: {exc}") from None
        self._container = container
        with _LIVE_LOCK:
            _LIVE[id(self)] = self
        return self

    def logs(self) -> bytes:
        """Everything the container wrote so far (stdout then stderr); empty when it is gone."""
        if self._container is None:
            return b""
        with contextlib.suppress(Exception):
            out, err = self._container.get_logs()
            return bytes(out) + bytes(err)
        return b""

    def restart(self, *, kill: bool = False) -> None:
        """``docker restart`` (or kill and start): same ports, same storage."""
        wrapped = self._wrapped("restart")
        try:
            if kill:
                wrapped.kill()
                wrapped.start()
            else:
                wrapped.restart(timeout=30)
        except Exception as exc:
            raise TargetError(f"Could not restart container {self.spec.describe()}: {exc}") from None

    def pause(self, paused: bool = True) -> None:
        """``docker pause`` / ``unpause``: the processes freeze; peers see a broker that stops answering."""
        wrapped = self._wrapped("pause")
        try:
            wrapped.pause() if paused else wrapped.unpause()
        except Exception as exc:
            raise TargetError(f"Could not {'pause' if paused else 'unpause'} {self.spec.describe()}: {exc}") from None

    def stop(self) -> None:
        """Remove the container (safe to call twice)."""
        container, self._container = self._container, None
        with _LIVE_LOCK:
            _LIVE.pop(id(self), None)
        if container is not None:
            with contextlib.suppress(Exception):
                container.stop()

    def _wrapped(self, what: str) -> Any:
        if self._container is None:
            raise TargetError(f"Container {self.spec.describe()} is not running; cannot {what} it.")
        return self._container.get_wrapped_container()


@atexit.register
def _remove_leftovers() -> None:  # pragma: no cover - safety net
    with _LIVE_LOCK:
        leftovers = list(_LIVE.values())
        _LIVE.clear()
    for container in [x for x in leftovers if isinstance(x, RunningContainer)]:
        with contextlib.suppress(Exception):
            container.stop()
    for network in [x for x in leftovers if isinstance(x, PrivateNetwork)]:  # after: in use, it cannot go
        with contextlib.suppress(Exception):
            network.remove()
