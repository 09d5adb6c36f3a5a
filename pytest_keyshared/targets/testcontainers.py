"""Apache Pulsar standalone in Docker, through testcontainers: ``testcontainers`` or ``testcontainers:IMAGE:TAG``.

The image (``apachepulsar/pulsar``, a pinned 4.0 LTS tag by default) has no entry point; the container runs
``bin/apply-config-from-env.py conf/standalone.conf && exec bin/pulsar standalone -nfw -nss`` so that broker
settings passed as ``PULSAR_PREFIX_<key>`` variables reach ``standalone.conf`` (pulsar-semantics.md §9;
testcontainers-java's ``PulsarContainer`` does the same).  Readiness is Pulsar's own: ``GET /admin/v2/clusters``
answers ``["standalone"]`` and ``public/default`` exists.

Ports: the broker is told to listen on two free host ports and to advertise ``127.0.0.1``, and those ports
are published on 127.0.0.1 only, under the same numbers.  A topic lookup then answers an address the host
can reach (a randomly mapped port would make the client follow the advertised ``:6650``), and nothing is
bound on 0.0.0.0.  The Ryuk reaper is not used (it publishes a port on all interfaces); the container is
removed when the target stops and by an ``atexit`` safety net.

Everything up to ``docker run`` (image parsing, settings, env, command, readiness) is plain functions,
unit-tested without Docker; the container start itself needs a reachable Docker engine.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_keyshared.targets._docker import ContainerSpec, DockerUnavailable, RunningContainer, docker_engine_problem
from pytest_keyshared.targets._process import free_port
from pytest_keyshared.targets.admin import AdminClient
from pytest_keyshared.targets.base import Capabilities, Claims, ClientQuirks, PulsarTarget, TargetError, check_options
from reference_model.errors import InvalidArgument, UnknownVersion
from reference_model.versions import has_classic_dispatcher, parse_version

__all__ = [
    "DEFAULT_IMAGE",
    "DEFAULT_TAG",
    "DockerUnavailable",
    "TestcontainersTarget",
    "broker_settings",
    "container_command",
    "container_env",
    "container_spec",
    "docker_engine_problem",
    "parse_image",
    "readiness_problem",
    "wait_until_ready",
]

DEFAULT_IMAGE = "apachepulsar/pulsar"
#: A current 4.0 LTS release (pin full patch versions; never ``latest``).
DEFAULT_TAG = "4.0.14"
STANDALONE_CONF = "conf/standalone.conf"
_TAG_RE = re.compile(r"^v?\d+\.\d+(\.\d+)?([-.][A-Za-z0-9.]+)?$")
_OPTIONS: dict[str, type | tuple[type, ...]] = {
    "implementation": str,  #: pip379 (4.0 default) or classic (subscriptionKeySharedUseClassicPersistentImplementation)
    "deduplication": bool,  #: brokerDeduplicationEnabled for every topic
    #: extra broker.conf keys, e.g. {"keySharedLookAheadMsgInReplayThresholdPerSubscription": 20}
    "broker_settings": dict,
    "pulsar_version": str,  #: the version claimed when the tag does not say it
    "startup_timeout_s": (int, float),
    "pulsar_mem": str,
    "operation_timeout_s": int,
}
#: The cluster a plain standalone registers itself as (``clusterName`` in ``standalone.conf``).
STANDALONE_CLUSTER = "standalone"


def parse_image(rest: str) -> tuple[str, str]:
    """After ``testcontainers:`` -> ``(image, tag)``: ``""``, ``"4.0.6"`` or ``"apachepulsar/pulsar:4.0.6"``."""
    if not rest:
        return DEFAULT_IMAGE, DEFAULT_TAG
    if _TAG_RE.match(rest):
        return DEFAULT_IMAGE, rest
    image, sep, tag = rest.rpartition(":")
    if not sep or not image or "/" in tag:
        raise InvalidArgument(
            f"Expected 'testcontainers:IMAGE:TAG' (e.g. 'testcontainers:{DEFAULT_IMAGE}:{DEFAULT_TAG}') or"
            f" 'testcontainers:TAG' but got image {rest!r} without a tag; pin a release tag, never 'latest'."
        )
    if tag == "latest":
        raise InvalidArgument(
            f"Image tag 'latest' is not reproducible; pin a release, e.g. {DEFAULT_IMAGE}:{DEFAULT_TAG}."
        )
    return image, tag


def image_contract(name: str, opts: Mapping[str, Any]) -> tuple[str, str, str, str]:
    """``(image, tag, pulsar_version, implementation)`` of a container target string and its options.

    The version comes from the ``pulsar_version`` option, else from the image tag; the implementation from the
    ``implementation`` option, else PIP-379 from 4.0 on and classic before. Shared by the one-broker and the
    two-cluster targets, so both refuse the same inputs with the same one-line errors.
    """
    _kind, _, rest = name.partition(":")
    image, tag = parse_image(rest)
    version = opts.get("pulsar_version") or version_from_tag(tag)
    if version is None:
        raise InvalidArgument(
            f"Cannot tell the Pulsar version of image tag {tag!r}; pass the target option pulsar_version (e.g. '4.0')."
        )
    is_4 = parse_version(version).at_least(4, 0)
    implementation = opts.get("implementation", "pip379" if is_4 else "classic")
    if implementation not in ("pip379", "classic"):
        raise InvalidArgument(f"Option implementation={implementation!r}: expected 'pip379' or 'classic'.")
    if implementation == "pip379" and not is_4:
        raise InvalidArgument(f"Pulsar {version} has only the classic Key_Shared implementation (PIP-379 is 4.0+).")
    if implementation == "classic" and not has_classic_dispatcher(version):
        raise InvalidArgument(
            f"Pulsar {version} has no classic Key_Shared implementation (removed in 5.0, apache/pulsar#26687)."
        )
    return image, tag, version, implementation


def version_from_tag(tag: str) -> str | None:
    """``"4.0.13"`` -> ``"4.0.13"`` when the model knows that release line, else None."""
    match = re.match(r"^v?(\d+\.\d+(?:\.\d+)?)", tag)
    if match is None:
        return None
    try:
        parse_version(match.group(1))
    except UnknownVersion:
        return None
    return match.group(1)


def broker_settings(
    *,
    broker_port: int,
    web_port: int,
    implementation: str = "pip379",
    deduplication: bool = False,
    extra: Mapping[str, object] | None = None,
) -> dict[str, str]:
    """``standalone.conf`` keys for the container (values as Pulsar's config parser reads them)."""
    settings: dict[str, object] = {
        "brokerServicePort": broker_port,
        "webServicePort": web_port,
        "advertisedAddress": "127.0.0.1",
        "brokerDeduplicationEnabled": deduplication,
        "topicLevelPoliciesEnabled": True,
        "systemTopicEnabled": True,
        "subscriptionKeySharedUseClassicPersistentImplementation": implementation == "classic",
        "subscriptionKeySharedUseConsistentHashing": True,
    }
    settings.update(extra or {})
    return {key: _conf_value(value) for key, value in settings.items()}


def _conf_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value)
    raise InvalidArgument(
        f"Broker setting value {value!r} (type={type(value).__name__}) must be a bool, number or string."
    )


def container_env(settings: Mapping[str, str], *, pulsar_mem: str) -> dict[str, str]:
    """Each setting as ``PULSAR_PREFIX_<key>`` (it adds keys missing from the file, and replaces present ones)."""
    env = {f"PULSAR_PREFIX_{key}": value for key, value in settings.items()}
    env["PULSAR_MEM"] = pulsar_mem
    return env


def container_command() -> list[str]:
    """Apply the environment to ``standalone.conf``, then run the standalone without functions or stream storage."""
    return ["sh", "-c", f"bin/apply-config-from-env.py {STANDALONE_CONF} && exec bin/pulsar standalone -nfw -nss"]


def container_spec(
    image: str, settings: Mapping[str, str], *, pulsar_mem: str, network: str | None = None, alias: str | None = None
) -> ContainerSpec:
    """The standalone's container: its settings as environment, both ports published on loopback under the same
    numbers (``brokerServicePort`` and ``webServicePort`` from ``settings``), and, with ``network``, its alias
    there."""
    ports = (int(settings["brokerServicePort"]), int(settings["webServicePort"]))
    return ContainerSpec(
        image=image,
        command=tuple(container_command()),
        env=container_env(settings, pulsar_mem=pulsar_mem),
        ports=ports,
        network=network,
        aliases=(alias,) if network is not None and alias else (),
    )


def readiness_problem(admin: AdminClient, cluster: str = STANDALONE_CLUSTER) -> str | None:
    """None when the standalone is ready, else what is still missing (Pulsar's own readiness, §9).

    Ready means ``GET /admin/v2/clusters`` lists ``cluster`` (the standalone registers its own cluster at
    start; later registrations add others) and ``public/default`` exists.
    """
    try:
        clusters = admin.request("GET", "/admin/v2/clusters")
        if not isinstance(clusters, list) or cluster not in clusters:
            return f"/admin/v2/clusters answers {clusters!r}, without {cluster!r}"
        namespaces = admin.request("GET", "/admin/v2/namespaces/public")
        if not isinstance(namespaces, list) or "public/default" not in namespaces:
            return f"/admin/v2/namespaces/public answers {namespaces!r}, without 'public/default'"
    except TargetError as exc:
        return str(exc)
    return None


def wait_until_ready(
    admin: AdminClient, timeout_s: float, *, poll_s: float = 0.5, cluster: str = STANDALONE_CLUSTER
) -> None:
    """Bounded wait for :func:`readiness_problem` to clear; :class:`TargetError` with the last problem otherwise."""
    deadline = time.monotonic() + timeout_s
    while True:
        problem = readiness_problem(admin, cluster)
        if problem is None:
            return
        if time.monotonic() >= deadline:
            raise TargetError(f"Pulsar standalone {cluster!r} not ready after {timeout_s:g}s: {problem}.")
        time.sleep(poll_s)


class TestcontainersTarget(PulsarTarget):
    """Apache Pulsar standalone in a container, removed when the target stops (its log saved first)."""

    __test__ = False  # not a pytest test class, despite the name

    def __init__(self, name: str, artifacts_dir: Path, options: Mapping[str, Any] | None = None) -> None:
        super().__init__(name, artifacts_dir)
        opts = check_options(options, _OPTIONS, name)
        self.image, self.tag, version, implementation = image_contract(name, opts)
        extra = opts.get("broker_settings", {})
        for key in extra:
            if not isinstance(key, str) or not key:
                raise InvalidArgument(f"broker_settings keys must be broker.conf names, got {key!r}.")
        self._implementation = implementation
        self._deduplication = bool(opts.get("deduplication", False))
        self._extra_settings = dict(extra)
        self._startup_timeout_s = float(opts.get("startup_timeout_s", 180.0))
        self._pulsar_mem = str(opts.get("pulsar_mem", "-Xms256m -Xmx512m -XX:MaxDirectMemorySize=256m"))
        self.claims = Claims(
            pulsar_version=version,
            implementation=implementation,
            selector="consistent-hashing",
            points=int(self._extra_settings.get("subscriptionKeySharedConsistentHashingReplicaPoints", 100)),
            deduplication=self._deduplication,
        )
        self.capabilities = Capabilities(
            admin_api=True,
            dedup_switch=True,
            replication=False,
            crash_consumer=True,
            broker_restart=True,
            delayed_delivery=True,
            message_expiry=True,
            raw_send=True,
            partitioned_topics=True,
            reasons={
                "replication": "one standalone container is one cluster",
                "storage_failure": "the standalone container's BookKeeper runs inside the broker's process",
            },
        )
        self.quirks = ClientQuirks(operation_timeout_s=int(opts.get("operation_timeout_s", 10)))
        self._broker_port = 0
        self._web_port = 0
        self._container: RunningContainer | None = None
        self._admin: AdminClient | None = None
        self._log_path = self.artifacts_dir / "pulsar-standalone.log"

    @property
    def service_url(self) -> str:
        if not self._broker_port:
            raise TargetError(f"Target {self.name!r} is not started.")
        return f"pulsar://127.0.0.1:{self._broker_port}"

    @property
    def admin_url(self) -> str | None:
        return f"http://127.0.0.1:{self._web_port}" if self._web_port else None

    @property
    def broker_log(self) -> Path:
        return self._log_path

    def settings(self) -> dict[str, str]:
        return broker_settings(
            broker_port=self._broker_port,
            web_port=self._web_port,
            implementation=self._implementation,
            deduplication=self._deduplication,
            extra=self._extra_settings,
        )

    def header_extra(self) -> dict[str, Any]:
        return {**super().header_extra(), "image": f"{self.image}:{self.tag}"}

    def start(self) -> None:
        self.artifacts_dir.mkdir(parents=True, exist_ok=True)
        self._broker_port, self._web_port = free_port(), free_port()
        container = RunningContainer(
            container_spec(f"{self.image}:{self.tag}", self.settings(), pulsar_mem=self._pulsar_mem)
        )
        container.start()  # DockerUnavailable without an engine
        self._container = container
        self._admin = AdminClient(self.admin_url or "", timeout_s=5.0)
        try:
            wait_until_ready(self._admin, self._startup_timeout_s)
        except TargetError:
            self.stop()
            raise

    def log_position(self) -> int:
        return len(self._container.logs()) if self._container is not None else 0

    def copy_log(self, since: int, dest: Path) -> Path | None:
        logs = self._container.logs() if self._container is not None else b""
        if not logs:
            return None
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(logs[since:])
        return dest

    def stop(self) -> None:
        container, self._container = self._container, None
        if container is None:
            return
        logs = container.logs()
        if logs:
            with contextlib.suppress(OSError):
                self._log_path.write_bytes(logs)
        container.stop()

    def restart_broker(self, *, kill: bool = False) -> None:
        """``docker restart`` (or kill and start): same ports and storage; waits for readiness again."""
        if self._container is None or self._admin is None:
            raise TargetError(f"Target {self.name!r} is not running; cannot restart it.")
        self._container.restart(kill=kill)
        wait_until_ready(self._admin, self._startup_timeout_s)

    def expire_messages(self, topic: str, subscription: str, expire_time_s: int) -> None:
        if self._admin is None:
            raise TargetError(f"Target {self.name!r} is not started.")
        self._admin.expire_messages(topic, subscription, expire_time_s)

    def set_topic_deduplication(self, topic: str, enabled: bool) -> None:
        if self._admin is None:
            raise TargetError(f"Target {self.name!r} is not started.")
        self._admin.set_topic_deduplication(topic, enabled)
