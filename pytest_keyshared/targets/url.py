"""Any running broker, by URL: ``pulsar://HOST:PORT``, optionally with an admin URL.

The harness does not own this broker, so it never restarts it; with an admin URL it can switch
deduplication per topic.  The contract it is held to comes from options (``pulsar_version``,
``implementation``, ``selector``), defaulting to Pulsar 4.0 with PIP-379 and consistent hashing.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_keyshared.targets._process import port_accepts
from pytest_keyshared.targets.admin import AdminClient
from pytest_keyshared.targets.base import Capabilities, Claims, ClientQuirks, PulsarTarget, TargetError, check_options
from reference_model.errors import InvalidArgument
from reference_model.versions import has_classic_dispatcher, parse_version

__all__ = ["UrlTarget", "parse_broker_url"]

_OPTIONS: dict[str, type | tuple[type, ...]] = {
    "admin_url": str,
    "pulsar_version": str,
    "implementation": str,
    "selector": str,
    "points": int,
    "deduplication": bool,  #: the broker deduplicates every topic (brokerDeduplicationEnabled=true)
    "distinct_consumer_ids": bool,  #: the broker needs distinct consumer ids across connections (pulsar-lite-like)
    "sync_publish": bool,
    "operation_timeout_s": int,
    "connect_timeout_s": (int, float),
}
IMPLEMENTATIONS = ("pip379", "classic")
AUTO_SPLIT_SELECTORS = ("consistent-hashing", "auto-split")


def parse_broker_url(spec: str) -> tuple[str, int, str | None]:
    """``pulsar://HOST:PORT[?admin=http://HOST:PORT]`` -> ``(host, port, admin_url)``."""
    parsed = urllib.parse.urlsplit(spec)
    if parsed.scheme != "pulsar":
        hint = " TLS (pulsar+ssl://) is not supported." if parsed.scheme == "pulsar+ssl" else ""
        raise InvalidArgument(f"Expected a broker URL like 'pulsar://127.0.0.1:6650' but got {spec!r}.{hint}")
    try:
        port = parsed.port
    except ValueError:
        port = None
    if not parsed.hostname or port is None:
        raise InvalidArgument(f"Broker URL {spec!r} needs a host and a port, e.g. 'pulsar://127.0.0.1:6650'.")
    if parsed.path not in ("", "/"):
        raise InvalidArgument(f"Broker URL {spec!r} must not have a path; give only pulsar://HOST:PORT.")
    query = urllib.parse.parse_qs(parsed.query)
    unknown = sorted(set(query) - {"admin"})
    if unknown:
        raise InvalidArgument(f"Broker URL {spec!r}: unknown parameter {unknown[0]!r}; only '?admin=http://HOST:PORT'.")
    admin = query.get("admin", [None])[-1]
    if admin is not None and not admin.startswith(("http://", "https://")):
        raise InvalidArgument(f"Broker URL {spec!r}: admin must be an http(s) URL, e.g. admin=http://127.0.0.1:8080.")
    return parsed.hostname, port, admin


class UrlTarget(PulsarTarget):
    """A broker the harness does not own; checked for reachability at start, never stopped."""

    def __init__(self, name: str, artifacts_dir: Path, options: Mapping[str, Any] | None = None) -> None:
        super().__init__(name, artifacts_dir)
        opts = check_options(options, _OPTIONS, name)
        self.host, self.port, admin_in_url = parse_broker_url(name)
        self._admin_url = opts.get("admin_url", admin_in_url)
        version = opts.get("pulsar_version", "4.0")
        parse_version(version)  # raises UnknownVersion with the known lines
        implementation = opts.get("implementation", "pip379" if parse_version(version).at_least(4, 0) else "classic")
        if implementation not in IMPLEMENTATIONS:
            raise InvalidArgument(f"Option implementation={implementation!r}: expected one of {IMPLEMENTATIONS}.")
        if implementation == "classic" and not has_classic_dispatcher(version):
            raise InvalidArgument(
                f"Pulsar {version} has no classic Key_Shared implementation (removed in 5.0, apache/pulsar#26687)."
            )
        selector = opts.get("selector", "consistent-hashing")
        if selector not in AUTO_SPLIT_SELECTORS:
            raise InvalidArgument(f"Option selector={selector!r}: expected one of {AUTO_SPLIT_SELECTORS}.")
        self.claims = Claims(
            pulsar_version=version,
            implementation=implementation,
            selector=selector,
            points=int(opts.get("points", 100)),
            deduplication=bool(opts.get("deduplication", False)),
        )
        has_admin = self._admin_url is not None
        self.capabilities = Capabilities(
            admin_api=has_admin,
            dedup_switch=has_admin,
            replication=False,
            crash_consumer=True,
            broker_restart=False,
            delayed_delivery=True,
            message_expiry=has_admin,
            raw_send=True,
            partitioned_topics=has_admin,
            reasons={
                "admin_api": "no admin URL given (pulsar://HOST:PORT?admin=http://HOST:8080)",
                "dedup_switch": "no admin URL given (pulsar://HOST:PORT?admin=http://HOST:8080)",
                "message_expiry": "no admin URL given (pulsar://HOST:PORT?admin=http://HOST:8080)",
                "partitioned_topics": "no admin URL given (pulsar://HOST:PORT?admin=http://HOST:8080)",
                "replication": "a single broker URL names one cluster",
                "broker_restart": "the harness does not own a broker it reaches by URL",
                "storage_failure": "the harness cannot stop the storage of a broker it reaches by URL",
            },
        )
        self.quirks = ClientQuirks(
            distinct_consumer_ids=bool(opts.get("distinct_consumer_ids", False)),
            sync_publish=bool(opts.get("sync_publish", True)),
            operation_timeout_s=int(opts.get("operation_timeout_s", 10)),
        )
        self._connect_timeout_s = float(opts.get("connect_timeout_s", 5.0))
        self._admin = None if self._admin_url is None else AdminClient(self._admin_url)

    @property
    def service_url(self) -> str:
        return f"pulsar://{self.host}:{self.port}"

    @property
    def admin_url(self) -> str | None:
        return self._admin_url

    def header_extra(self) -> dict[str, Any]:
        return {**super().header_extra(), "broker_url": self.service_url}

    def start(self) -> None:
        if not port_accepts(self.host, self.port, timeout_s=self._connect_timeout_s):
            raise TargetError(
                f"No broker answers at {self.service_url} (TCP connect failed within {self._connect_timeout_s:g}s)."
                f" Start one there, or use the default target 'pulsar-lite'."
            )
        if self._admin is not None:
            self._admin.clusters()  # raises a one-line TargetError when the admin API is unreachable

    def stop(self) -> None:
        """Nothing to stop: the harness did not start this broker."""

    def expire_messages(self, topic: str, subscription: str, expire_time_s: int) -> None:
        if self._admin is None:
            super().expire_messages(topic, subscription, expire_time_s)
            return
        self._admin.expire_messages(topic, subscription, expire_time_s)

    def set_topic_deduplication(self, topic: str, enabled: bool) -> None:
        if self._admin is None:
            super().set_topic_deduplication(topic, enabled)
            return
        self._admin.set_topic_deduplication(topic, enabled)
