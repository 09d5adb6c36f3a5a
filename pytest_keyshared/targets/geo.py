"""Two Apache Pulsar clusters with a replicated namespace, in Docker: ``testcontainers-geo[:IMAGE:TAG]``.

Two standalones, clusters ``r1`` and ``r2``, run on a private Docker network where each is reachable under its
cluster name.  Each one is a cluster of its own (its own metadata store), so every cluster, the tenant and the
replicated namespace must be registered on **both** sides before anything replicates
(pulsar-semantics.md §9).  The target does that through the admin REST API, checks it reads back, and then
proves that a message published in ``r1`` reaches ``r2`` before it calls itself ready.

Addresses.  A broker tells clients where a topic lives (the lookup answer), so it must name an address the
asker can reach.  The host reaches each broker at ``127.0.0.1:<port>`` (published on loopback only, under the
same number inside the container, so the broker itself can use that address too); the other cluster's
replicator reaches it at ``<cluster>:<port>`` on the private network.  Each broker therefore advertises two
listeners (``advertisedListeners``, PIP-61): ``host`` (the default, ``internalListenerName``) and ``docker``;
the registrations of the peer cluster name ``listenerName = docker``, which Pulsar's replication client sends
with its lookups (``BrokerService.getReplicationClient``).  Pulsar refuses ``advertisedAddress`` together with
``advertisedListeners`` (``MultipleListenerValidator``), so it is left blank.

Replicated subscriptions are on (``enableReplicatedSubscriptions``, snapshots every
``snapshot_frequency_ms``); a consumer makes its subscription replicated with
``replicate_subscription_state_enabled=True`` (see :mod:`pytest_keyshared.driver.replication`).  Both brokers'
logs are saved when the target stops (``pulsar-r1.log``, ``pulsar-r2.log``).

Everything up to ``docker run`` (settings, container specs, the registration plan and its execution, readiness)
is plain functions, unit-tested without Docker against a local HTTP server that answers like Pulsar's admin API.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_keyshared.targets._docker import ContainerSpec, PrivateNetwork, RunningContainer
from pytest_keyshared.targets._process import free_port
from pytest_keyshared.targets.admin import AdminClient, AdminError
from pytest_keyshared.targets.base import (
    Capabilities,
    Claims,
    ClientQuirks,
    PulsarTarget,
    TargetError,
    UnsupportedByTarget,
    check_options,
)
from pytest_keyshared.targets.testcontainers import (
    broker_settings,
    container_spec,
    image_contract,
    readiness_problem,
)
from reference_model.errors import InvalidArgument

__all__ = [
    "ADDRESSING_SETTINGS",
    "CLUSTERS",
    "GEO_KIND",
    "HOST_LISTENER",
    "NAMESPACE",
    "NETWORK_LISTENER",
    "TENANT",
    "AdminCall",
    "ClusterEndpoint",
    "GeoTarget",
    "geo_container_specs",
    "geo_settings",
    "register_replication",
    "registration_plan",
    "replication_problem",
    "wait_all_ready",
]

GEO_KIND = "testcontainers-geo"
CLUSTERS: tuple[str, ...] = ("r1", "r2")
TENANT = "keyshared"
NAMESPACE = f"{TENANT}/replicated"
HOST_LISTENER = "host"  #: 127.0.0.1:<port>: the host's clients, and the broker's own internal client
NETWORK_LISTENER = "docker"  #: <cluster>:<port> on the private network: the other cluster's replicator
_OPTIONS: dict[str, type | tuple[type, ...]] = {
    "implementation": str,
    "deduplication": bool,
    "broker_settings": dict,
    "pulsar_version": str,
    "startup_timeout_s": (int, float),
    "replication_timeout_s": (int, float),
    "snapshot_frequency_ms": int,
    "pulsar_mem": str,
    "operation_timeout_s": int,
}


@dataclass(frozen=True, slots=True)
class ClusterEndpoint:
    """Where one cluster is: the same two port numbers on the host's loopback and inside its container."""

    name: str
    broker_port: int
    web_port: int

    @property
    def service_url(self) -> str:
        """For clients on the host."""
        return f"pulsar://127.0.0.1:{self.broker_port}"

    @property
    def admin_url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    @property
    def network_service_url(self) -> str:
        """For the other cluster's replicator, on the private network (the cluster name is its alias there)."""
        return f"pulsar://{self.name}:{self.broker_port}"

    @property
    def network_web_url(self) -> str:
        return f"http://{self.name}:{self.web_port}"

    def listeners(self) -> str:
        """``advertisedListeners``: the host listener first (it is also ``internalListenerName``)."""
        return f"{HOST_LISTENER}:{self.service_url},{NETWORK_LISTENER}:{self.network_service_url}"

    def cluster_data(self) -> dict[str, str]:
        """How the *other* cluster registers this one (Pulsar's ``ClusterData`` JSON)."""
        return {
            "serviceUrl": self.network_web_url,
            "brokerServiceUrl": self.network_service_url,
            "listenerName": NETWORK_LISTENER,
        }


#: Settings the geo target chooses itself: how the clusters are named and reach each other.
ADDRESSING_SETTINGS: tuple[str, ...] = (
    "clusterName",
    "brokerServicePort",
    "webServicePort",
    "advertisedAddress",
    "advertisedListeners",
    "internalListenerName",
)


def geo_settings(
    endpoint: ClusterEndpoint,
    *,
    implementation: str = "pip379",
    deduplication: bool = False,
    snapshot_frequency_ms: int = 1000,
    extra: Mapping[str, object] | None = None,
) -> dict[str, str]:
    """``standalone.conf`` keys for one cluster of the pair (see the module docstring for the listeners).

    ``extra`` may set any other broker key (it wins over the defaults here), but not the addressing ones
    (:data:`ADDRESSING_SETTINGS`), which make the pair work.
    """
    clash = sorted(set(extra or {}) & set(ADDRESSING_SETTINGS))
    if clash:
        raise InvalidArgument(
            f"broker_settings may not set {', '.join(clash)}: the geo target chooses cluster names, ports and"
            f" listeners itself (r1/r2 on loopback and on the private network)."
        )
    settings = broker_settings(
        broker_port=endpoint.broker_port,
        web_port=endpoint.web_port,
        implementation=implementation,
        deduplication=deduplication,
    )
    settings.update(
        {
            "clusterName": endpoint.name,
            "advertisedAddress": "",  # Pulsar refuses it together with advertisedListeners
            "advertisedListeners": endpoint.listeners(),
            "internalListenerName": HOST_LISTENER,
            "enableReplicatedSubscriptions": "true",
            "replicatedSubscriptionsSnapshotFrequencyMillis": str(snapshot_frequency_ms),
        }
    )
    if extra:
        converted = broker_settings(broker_port=endpoint.broker_port, web_port=endpoint.web_port, extra=extra)
        settings.update({key: converted[key] for key in extra})
    return settings


def geo_container_specs(
    image: str,
    endpoints: Sequence[ClusterEndpoint],
    *,
    network: str,
    pulsar_mem: str,
    implementation: str = "pip379",
    deduplication: bool = False,
    snapshot_frequency_ms: int = 1000,
    extra: Mapping[str, object] | None = None,
) -> dict[str, ContainerSpec]:
    """One container per cluster, on ``network`` under the cluster's name, its ports published on loopback."""
    return {
        endpoint.name: container_spec(
            image,
            geo_settings(
                endpoint,
                implementation=implementation,
                deduplication=deduplication,
                snapshot_frequency_ms=snapshot_frequency_ms,
                extra=extra,
            ),
            pulsar_mem=pulsar_mem,
            network=network,
            alias=endpoint.name,
        )
        for endpoint in endpoints
    }


# --- registration through the admin API ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AdminCall:
    """One admin request; ``if_exists`` is what to do instead when Pulsar answers 409 (already exists)."""

    method: str
    path: str
    body: Any = None
    if_exists: AdminCall | None = None

    def describe(self) -> str:
        return f"{self.method} {self.path}"


def registration_plan(
    endpoints: Sequence[ClusterEndpoint], *, tenant: str = TENANT, namespace: str = NAMESPACE
) -> dict[str, list[AdminCall]]:
    """The calls that make ``namespace`` replicated between all ``endpoints``, per cluster, in order.

    On each side: register every *other* cluster (a standalone knows only itself), then the tenant allowed on
    all of them, then the namespace with all of them as replication clusters, then set its replication
    explicitly.  Creation answers 409 when the entry exists (a restarted target, say): clusters and tenants are
    then updated, an existing namespace is kept.
    """
    if not namespace.startswith(f"{tenant}/") or namespace.count("/") != 1:
        raise InvalidArgument(f"Namespace {namespace!r} must be '<tenant>/<name>' with tenant {tenant!r}.")
    names = [e.name for e in endpoints]
    if len(set(names)) != len(names) or len(names) < 2:
        raise InvalidArgument(f"Replication needs at least two distinct clusters, got {names}.")
    plan: dict[str, list[AdminCall]] = {}
    for side in endpoints:
        calls: list[AdminCall] = []
        for peer in endpoints:
            if peer.name == side.name:
                continue
            path = f"/admin/v2/clusters/{peer.name}"
            body = peer.cluster_data()
            calls.append(AdminCall("PUT", path, body, if_exists=AdminCall("POST", path, body)))
        tenant_path = f"/admin/v2/tenants/{tenant}"
        tenant_body = {"adminRoles": [], "allowedClusters": list(names)}
        calls.append(AdminCall("PUT", tenant_path, tenant_body, if_exists=AdminCall("POST", tenant_path, tenant_body)))
        ns_path = f"/admin/v2/namespaces/{namespace}"
        calls.append(AdminCall("PUT", ns_path, {"replication_clusters": list(names)}, if_exists=None))
        calls.append(AdminCall("POST", f"{ns_path}/replication", list(names)))
        plan[side.name] = calls
    return plan


def register_replication(admins: Mapping[str, AdminClient], plan: Mapping[str, Sequence[AdminCall]]) -> None:
    """Run ``plan`` side by side, in order; one :class:`TargetError` naming the side and the call that failed."""
    for side, calls in plan.items():
        admin = admins[side]
        for call in calls:
            try:
                admin.request(call.method, call.path, call.body)
            except AdminError as exc:
                if exc.status != 409:
                    raise TargetError(f"Registering replication on {side}: {exc}") from None
                if call.if_exists is not None:
                    try:
                        admin.request(call.if_exists.method, call.if_exists.path, call.if_exists.body)
                    except TargetError as again:
                        raise TargetError(f"Registering replication on {side}: {again}") from None
            except TargetError as exc:
                raise TargetError(f"Registering replication on {side}: {exc}") from None


def replication_problem(
    admins: Mapping[str, AdminClient], endpoints: Sequence[ClusterEndpoint], *, namespace: str = NAMESPACE
) -> str | None:
    """None when every side knows every cluster and replicates ``namespace`` to all of them; else what is off."""
    names = sorted(e.name for e in endpoints)
    for side, admin in admins.items():
        try:
            clusters = admin.request("GET", "/admin/v2/clusters")
            missing = [n for n in names if not isinstance(clusters, list) or n not in clusters]
            if missing:
                return f"{side} does not know cluster(s) {', '.join(missing)} (GET /admin/v2/clusters: {clusters!r})"
            for peer in endpoints:
                if peer.name == side:
                    continue
                data = admin.request("GET", f"/admin/v2/clusters/{peer.name}")
                url = data.get("brokerServiceUrl") if isinstance(data, dict) else None
                if url != peer.network_service_url:
                    return f"{side} registers {peer.name} at {url!r}, not {peer.network_service_url!r}"
            replication = admin.request("GET", f"/admin/v2/namespaces/{namespace}/replication")
            if not isinstance(replication, list) or sorted(replication) != names:
                return f"{side} replicates {namespace} to {replication!r}, not {names}"
        except TargetError as exc:
            return f"{side}: {exc}"
    return None


def wait_all_ready(admins: Mapping[str, AdminClient], timeout_s: float, *, poll_s: float = 0.5) -> None:
    """Bounded wait until every standalone is ready (:func:`readiness_problem` with its own cluster name).

    One deadline for all of them (they boot in parallel); the error names the first cluster still not ready.
    """
    deadline = time.monotonic() + timeout_s
    waiting = dict(admins)
    while True:
        for name in list(waiting):
            if readiness_problem(waiting[name], name) is None:
                del waiting[name]
        if not waiting:
            return
        if time.monotonic() >= deadline:
            name = next(iter(waiting))
            problem = readiness_problem(waiting[name], name)
            raise TargetError(f"Pulsar cluster {name!r} not ready after {timeout_s:g}s: {problem}.")
        time.sleep(poll_s)


# --- the target ------------------------------------------------------------------------------------------------


class GeoTarget(PulsarTarget):
    """Clusters ``r1`` and ``r2`` with the replicated namespace ``keyshared/replicated``.

    As a scenario target it is ``r1`` (runs use ``public/default`` there, which is not replicated); the
    replication cases use :meth:`replication_sites`.
    """

    def __init__(self, name: str, artifacts_dir: Path, options: Mapping[str, Any] | None = None) -> None:
        super().__init__(name, artifacts_dir)
        opts = check_options(options, _OPTIONS, name)
        self.image, self.tag, version, implementation = image_contract(name, opts)
        snapshot_ms = int(opts.get("snapshot_frequency_ms", 1000))
        if snapshot_ms < 10:
            raise InvalidArgument(
                f"Option snapshot_frequency_ms={snapshot_ms}: expected at least 10 (Pulsar's default is 1000)."
            )
        extra = dict(opts.get("broker_settings", {}))
        for key in extra:
            if not isinstance(key, str) or not key:
                raise InvalidArgument(f"broker_settings keys must be broker.conf names, got {key!r}.")
        geo_settings(ClusterEndpoint(CLUSTERS[0], 1, 2), extra=extra)  # refuses addressing keys and odd values now
        self._implementation = implementation
        self._deduplication = bool(opts.get("deduplication", False))
        self._extra_settings = extra
        self.snapshot_frequency_ms = snapshot_ms
        self._startup_timeout_s = float(opts.get("startup_timeout_s", 240.0))
        self._replication_timeout_s = float(opts.get("replication_timeout_s", 60.0))
        self._pulsar_mem = str(opts.get("pulsar_mem", "-Xms256m -Xmx512m -XX:MaxDirectMemorySize=256m"))
        self.claims = Claims(
            pulsar_version=version,
            implementation=implementation,
            selector="consistent-hashing",
            points=int(extra.get("subscriptionKeySharedConsistentHashingReplicaPoints", 100)),
            deduplication=self._deduplication,
        )
        self.capabilities = Capabilities(
            admin_api=True,
            dedup_switch=True,
            replication=True,
            crash_consumer=True,
            broker_restart=True,
            delayed_delivery=True,
            reasons={
                "storage_failure": "the clusters' BookKeeper runs inside each standalone broker's process",
                "raw_send": "the geo target's sessions send through pulsar-client only",
            },
        )
        self.quirks = ClientQuirks(operation_timeout_s=int(opts.get("operation_timeout_s", 10)))
        self.cluster_names: tuple[str, ...] = CLUSTERS
        self.replicated_namespace = NAMESPACE
        self.endpoints: dict[str, ClusterEndpoint] = {}
        self._network: PrivateNetwork | None = None
        self._containers: dict[str, RunningContainer] = {}
        self._admins: dict[str, AdminClient] = {}

    # --- addresses -----------------------------------------------------------------------------------------

    def endpoint(self, cluster: str) -> ClusterEndpoint:
        if cluster not in self.endpoints:
            known = ", ".join(self.cluster_names)
            state = "" if self.endpoints else " (the target is not started)"
            raise TargetError(f"Target {self.name!r} has no running cluster {cluster!r}{state}; clusters: {known}.")
        return self.endpoints[cluster]

    def admin(self, cluster: str) -> AdminClient:
        self.endpoint(cluster)
        return self._admins[cluster]

    @property
    def service_url(self) -> str:
        return self.endpoint(CLUSTERS[0]).service_url

    @property
    def admin_url(self) -> str | None:
        return self.endpoints[CLUSTERS[0]].admin_url if self.endpoints else None

    @property
    def broker_log(self) -> Path:
        return self.artifacts_dir / f"pulsar-{CLUSTERS[0]}.log"

    def header_extra(self) -> dict[str, Any]:
        return {**super().header_extra(), "image": f"{self.image}:{self.tag}", "clusters": list(self.cluster_names)}

    def describe(self) -> str:
        where = ", ".join(f"{e.name} at {e.service_url}" for e in self.endpoints.values()) or "not started"
        return f"{self.name} ({where}; replicated namespace {self.replicated_namespace})"

    # --- lifecycle -----------------------------------------------------------------------------------------

    def container_specs(self, network: str) -> dict[str, ContainerSpec]:
        return geo_container_specs(
            f"{self.image}:{self.tag}",
            list(self.endpoints.values()),
            network=network,
            pulsar_mem=self._pulsar_mem,
            implementation=self._implementation,
            deduplication=self._deduplication,
            snapshot_frequency_ms=self.snapshot_frequency_ms,
            extra=self._extra_settings,
        )

    def start(self) -> None:
        self.artifacts_dir.mkdir(parents=True, exist_ok=True)
        self.endpoints = {name: ClusterEndpoint(name, free_port(), free_port()) for name in CLUSTERS}
        try:
            self._network = PrivateNetwork().create()  # DockerUnavailable without an engine
            for name, spec in self.container_specs(self._network.name).items():
                self._containers[name] = RunningContainer(spec, network=self._network).start()
            self._admins = {name: AdminClient(e.admin_url, timeout_s=5.0) for name, e in self.endpoints.items()}
            wait_all_ready(self._admins, self._startup_timeout_s)
            endpoints = list(self.endpoints.values())
            register_replication(self._admins, registration_plan(endpoints))
            problem = replication_problem(self._admins, endpoints)
            if problem is not None:
                raise TargetError(f"Replication registered but does not read back: {problem}.")
            from pytest_keyshared.driver.replication import probe_replication

            probe_replication(
                [(e.name, e.service_url) for e in endpoints],
                topic=f"persistent://{NAMESPACE}/ks-probe-{secrets.token_hex(4)}",
                timeout_s=self._replication_timeout_s,
            )
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        containers, self._containers = self._containers, {}
        for name, container in containers.items():
            logs = container.logs()
            if logs:
                with contextlib.suppress(OSError):
                    (self.artifacts_dir / f"pulsar-{name}.log").write_bytes(logs)
            container.stop()
        network, self._network = self._network, None
        if network is not None:
            network.remove()
        self.endpoints, self._admins = {}, {}

    def log_position(self) -> int:
        container = self._containers.get(CLUSTERS[0])
        return len(container.logs()) if container is not None else 0

    def copy_log(self, since: int, dest: Path) -> Path | None:
        container = self._containers.get(CLUSTERS[0])
        logs = container.logs() if container is not None else b""
        if not logs:
            return None
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(logs[since:])
        return dest

    def save_cluster_logs(self, dest_dir: Path) -> list[Path]:
        """Both brokers' logs so far into ``dest_dir`` (``pulsar-r1.log``, ``pulsar-r2.log``)."""
        saved = []
        dest_dir.mkdir(parents=True, exist_ok=True)
        for name, container in self._containers.items():
            logs = container.logs()
            if logs:
                path = dest_dir / f"pulsar-{name}.log"
                path.write_bytes(logs)
                saved.append(path)
        return saved

    def restart_broker(self, *, kill: bool = False) -> None:
        """Restart ``r1`` (the scenario target) on the same ports and storage; waits until it is ready again."""
        container = self._containers.get(CLUSTERS[0])
        if container is None:
            raise TargetError(f"Target {self.name!r} is not running; cannot restart it.")
        container.restart(kill=kill)
        wait_all_ready({CLUSTERS[0]: self._admins[CLUSTERS[0]]}, self._startup_timeout_s)

    def set_cluster_down(self, cluster: str, down: bool) -> None:
        """Cut ``cluster`` off (``docker pause``: its broker stops answering anyone) or bring it back."""
        self.endpoint(cluster)
        self._containers[cluster].pause(down)

    def set_topic_deduplication(self, topic: str, enabled: bool) -> None:
        self.admin(CLUSTERS[0]).set_topic_deduplication(topic, enabled)

    def replication_sites(
        self,
        *,
        case: str,
        seed: int,
        clusters: Sequence[str] = CLUSTERS,
        delays_ms: Mapping[tuple[str, str], int] | None = None,
        deduplication: bool = False,
        partitions: int = 0,
    ) -> Any:
        """The clusters as the failover driver uses them, on a topic of the replicated namespace of its own.

        ``deduplication`` needs the pair started with ``deduplication=true`` (``brokerDeduplicationEnabled``);
        ``partitions``: the topic is a partitioned topic, created through each cluster's admin API."""
        from pytest_keyshared.driver.replication import BrokerSites, SiteEndpoint

        if not set(clusters) <= set(self.cluster_names):
            raise UnsupportedByTarget(
                f"Target {self.name!r} has clusters {', '.join(self.cluster_names)}; this case needs"
                f" {', '.join(clusters)}."
            )
        if delays_ms:
            raise UnsupportedByTarget(f"Target {self.name!r} cannot delay its replication link (the model can).")
        if deduplication and not self._deduplication:
            raise UnsupportedByTarget(
                f"Target {self.name!r} runs without deduplication; start it with deduplication=true for this case."
            )

        endpoints = [SiteEndpoint(c, self.endpoint(c).service_url, self.admin(c)) for c in clusters]
        slug = "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in case)[:40] or "case"
        return BrokerSites(
            endpoints,
            topic=f"persistent://{NAMESPACE}/ks-failover-{slug}-{seed}-{secrets.token_hex(4)}",
            operation_timeout_s=self.quirks.operation_timeout_s,
            snapshot_ms=self.snapshot_frequency_ms,
            settle_timeout_s=self._replication_timeout_s,
            set_down=self.set_cluster_down,
            partitions=partitions,
        )
