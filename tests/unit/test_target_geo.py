"""Two Apache Pulsar clusters with a replicated namespace (``testcontainers-geo``): everything short of Docker.

Settings, container specs, the registration plan, its execution and its read-back, readiness and the
replication-idle wait run here against small HTTP servers on 127.0.0.1 that keep state and answer like
Pulsar's admin API (409 when an entry exists, 412 for a tenant naming an unknown cluster, 404 for a namespace
of an unknown tenant, ...), one per cluster, as two independent standalones would.  Starting the containers is
in ``tests/docker/test_geo_target.py``.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from pytest_keyshared.driver.replication import BrokerSites, SiteEndpoint, replication_idle
from pytest_keyshared.targets import TargetError, UnsupportedByTarget, make_target, parse_target
from pytest_keyshared.targets._docker import LOOPBACK, DockerUnavailable, docker_engine_problem
from pytest_keyshared.targets.admin import AdminClient
from pytest_keyshared.targets.geo import (
    CLUSTERS,
    HOST_LISTENER,
    NAMESPACE,
    NETWORK_LISTENER,
    TENANT,
    AdminCall,
    ClusterEndpoint,
    GeoTarget,
    geo_container_specs,
    geo_settings,
    register_replication,
    registration_plan,
    replication_problem,
    wait_all_ready,
)
from pytest_keyshared.targets.testcontainers import DEFAULT_IMAGE, DEFAULT_TAG
from reference_model.errors import InvalidArgument

R1 = ClusterEndpoint("r1", 41001, 41002)
R2 = ClusterEndpoint("r2", 42001, 42002)


# --- the target string and its options -----------------------------------------------------------------------


def test_the_geo_target_string_and_its_contract(tmp_path: Path) -> None:
    assert parse_target("testcontainers-geo").kind == "testcontainers-geo"
    assert parse_target("testcontainers-geo:4.0.6").kind == "testcontainers-geo"
    target = make_target("testcontainers-geo", artifacts_dir=tmp_path)
    assert isinstance(target, GeoTarget)
    assert (target.image, target.tag) == (DEFAULT_IMAGE, DEFAULT_TAG)
    assert target.cluster_names == CLUSTERS == ("r1", "r2")
    assert target.replicated_namespace == NAMESPACE == f"{TENANT}/replicated"
    assert target.capabilities.replication and target.capabilities.admin_api and target.capabilities.broker_restart
    assert (target.claims.pulsar_version, target.claims.implementation) == ("4.0.14", "pip379")
    assert make_target("testcontainers-geo:3.0.12", artifacts_dir=tmp_path).claims.implementation == "classic"
    with pytest.raises(TargetError, match=r"no running cluster 'r1' .*not started"):
        _ = target.service_url


@pytest.mark.parametrize(
    ("spec", "options", "message"),
    [
        ("testcontainers-geo:apachepulsar/pulsar:latest", None, "not reproducible"),
        ("testcontainers-geo", {"snapshot_frequency_ms": 0}, "snapshot_frequency_ms=0: expected at least 10"),
        ("testcontainers-geo", {"broker_settings": {"clusterName": "x"}}, "may not set clusterName"),
        ("testcontainers-geo", {"startup_timeout": 5}, "Did you mean 'startup_timeout_s'"),
        ("testcontainers-geo:3.3.9", {"implementation": "pip379"}, "only the classic Key_Shared"),
    ],
)
def test_bad_options_are_one_teaching_line(
    tmp_path: Path, spec: str, options: dict[str, Any] | None, message: str
) -> None:
    with pytest.raises(InvalidArgument, match=message):
        make_target(spec, artifacts_dir=tmp_path, options=options)


def test_without_a_docker_engine_the_start_says_so_and_leaves_nothing(tmp_path: Path) -> None:
    if docker_engine_problem() is None:
        pytest.skip("a Docker engine is reachable here: the start would run two containers (tests/docker/)")
    target = make_target("testcontainers-geo", artifacts_dir=tmp_path)
    started = time.monotonic()
    with pytest.raises(DockerUnavailable, match=r"no Docker engine reachable \("):
        target.start()
    assert time.monotonic() - started < 15
    target.stop()  # safe after a failed start


# --- settings and container specs ----------------------------------------------------------------------------


def listener_problems(settings: dict[str, str]) -> list[str]:
    """Pulsar's rules for ``advertisedListeners`` (``MultipleListenerValidator``), restated."""
    problems = []
    if settings.get("advertisedAddress"):
        problems.append("advertisedListeners and advertisedAddress must not appear together")
    listeners: dict[str, list[str]] = {}
    for entry in settings["advertisedListeners"].split(","):
        name, _, url = entry.partition(":")
        listeners.setdefault(name, []).append(url)
    if settings["internalListenerName"] not in listeners:
        problems.append("the internal listener is not among the advertised ones")
    seen: dict[str, str] = {}
    for name, urls in listeners.items():
        if [urllib.parse.urlsplit(u).scheme for u in urls] != ["pulsar"]:
            problems.append(f"listener {name} needs exactly one pulsar:// address")
        for url in urls:
            hostport = urllib.parse.urlsplit(url).netloc
            if seen.setdefault(hostport, name) != name:
                problems.append(f"{hostport} is given to two listeners")
    return problems


def test_each_cluster_advertises_a_host_and_a_network_listener() -> None:
    settings = geo_settings(R1, snapshot_frequency_ms=500)
    assert settings["clusterName"] == "r1"
    assert (settings["brokerServicePort"], settings["webServicePort"]) == ("41001", "41002")
    assert (
        settings["advertisedListeners"]
        == f"{HOST_LISTENER}:pulsar://127.0.0.1:41001,{NETWORK_LISTENER}:pulsar://r1:41001"
    )
    assert settings["internalListenerName"] == HOST_LISTENER  # the host's clients and the broker's own client
    assert settings["advertisedAddress"] == ""
    assert settings["enableReplicatedSubscriptions"] == "true"
    assert settings["replicatedSubscriptionsSnapshotFrequencyMillis"] == "500"
    assert settings["subscriptionKeySharedUseClassicPersistentImplementation"] == "false"
    assert listener_problems(settings) == []
    extra = geo_settings(R2, extra={"keySharedUnblockingIntervalMs": 0, "brokerDeduplicationEnabled": True})
    assert (extra["keySharedUnblockingIntervalMs"], extra["brokerDeduplicationEnabled"]) == ("0", "true")
    with pytest.raises(InvalidArgument, match="may not set advertisedListeners"):
        geo_settings(R1, extra={"advertisedListeners": "x:pulsar://h:1"})


def test_two_containers_on_one_private_network_publish_on_loopback_only() -> None:
    specs = geo_container_specs("apachepulsar/pulsar:4.0.13", [R1, R2], network="ks-net", pulsar_mem="-Xmx512m")
    assert list(specs) == ["r1", "r2"]
    for endpoint in (R1, R2):
        spec = specs[endpoint.name]
        assert spec.image == "apachepulsar/pulsar:4.0.13"
        assert spec.command[:2] == ("sh", "-c") and "bin/pulsar standalone -nfw -nss" in spec.command[2]
        assert (spec.network, spec.aliases) == ("ks-net", (endpoint.name,))
        assert spec.ports == (endpoint.broker_port, endpoint.web_port)
        assert spec.published() == {
            f"{endpoint.broker_port}/tcp": (LOOPBACK, endpoint.broker_port),
            f"{endpoint.web_port}/tcp": (LOOPBACK, endpoint.web_port),
        }
        assert all(host == "127.0.0.1" for host, _ in spec.published().values())  # never 0.0.0.0
        assert spec.env["PULSAR_PREFIX_clusterName"] == endpoint.name
        assert spec.env["PULSAR_PREFIX_advertisedListeners"] == endpoint.listeners()
        assert spec.env["PULSAR_MEM"] == "-Xmx512m"
        assert all(k.startswith("PULSAR_PREFIX_") for k in spec.env if k != "PULSAR_MEM")


# --- the registration plan -----------------------------------------------------------------------------------


def test_each_side_registers_the_peer_then_the_tenant_then_the_namespace() -> None:
    plan = registration_plan([R1, R2])
    assert [c.describe() for c in plan["r1"]] == [
        "PUT /admin/v2/clusters/r2",
        "PUT /admin/v2/tenants/keyshared",
        "PUT /admin/v2/namespaces/keyshared/replicated",
        "POST /admin/v2/namespaces/keyshared/replicated/replication",
    ]
    assert plan["r1"][0].body == {
        "serviceUrl": "http://r2:42002",
        "brokerServiceUrl": "pulsar://r2:42001",
        "listenerName": NETWORK_LISTENER,  # the replicator asks r2 for its address on the private network
    }
    assert plan["r1"][0].if_exists == AdminCall("POST", "/admin/v2/clusters/r2", plan["r1"][0].body)
    assert plan["r2"][0].path == "/admin/v2/clusters/r1"
    assert plan["r2"][1].body == {"adminRoles": [], "allowedClusters": ["r1", "r2"]}
    assert plan["r1"][3].body == ["r1", "r2"]
    with pytest.raises(InvalidArgument, match="at least two distinct clusters"):
        registration_plan([R1])


@dataclass
class FakeCluster:
    """One standalone's admin state: it knows itself, tenant ``public`` and ``public/default`` at boot."""

    name: str
    boot_probes: int = 0  #: answer 503 to this many readiness probes first
    fail: dict[str, int] = field(default_factory=dict)  #: "METHOD path" -> status to answer instead
    stats: list[dict[str, Any]] = field(default_factory=list)  #: topic stats answers, the last one repeats
    requests: list[tuple[str, str, Any]] = field(default_factory=list)
    clusters: dict[str, dict[str, Any]] = field(default_factory=dict)
    tenants: dict[str, dict[str, Any]] = field(default_factory=dict)
    namespaces: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.clusters[self.name] = {"brokerServiceUrl": f"pulsar://127.0.0.1:{self.name}"}
        self.tenants["public"] = {"adminRoles": [], "allowedClusters": [self.name]}
        self.namespaces["public/default"] = [self.name]

    def answer(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        self.requests.append((method, path, body))
        if f"{method} {path}" in self.fail:
            return self.fail[f"{method} {path}"], {"reason": "injected"}
        parts = path.split("/")[3:]  # after /admin/v2/
        if method == "GET" and path == "/admin/v2/clusters":
            if self.boot_probes > 0:
                self.boot_probes -= 1
                return 503, {"reason": "starting"}
            return 200, sorted(self.clusters)
        if method == "GET" and path == "/admin/v2/namespaces/public":
            return 200, sorted(ns for ns in self.namespaces if ns.startswith("public/"))
        if parts[0] == "clusters" and len(parts) == 2:
            name = parts[1]
            if method == "GET":
                return (200, self.clusters[name]) if name in self.clusters else (404, {"reason": "not found"})
            if method == "PUT" and name in self.clusters:
                return 409, {"reason": "Cluster already exists"}
            if method == "POST" and name not in self.clusters:
                return 404, {"reason": "Cluster does not exist"}
            self.clusters[name] = body
            return 204, None
        if parts[0] == "tenants":
            name = parts[1]
            unknown = [c for c in body.get("allowedClusters", []) if c not in self.clusters]
            if unknown:
                return 412, {"reason": f"Clusters do not exist: {unknown}"}
            if method == "PUT" and name in self.tenants:
                return 409, {"reason": "Tenant already exists"}
            self.tenants[name] = body
            return 204, None
        if parts[0] == "namespaces":
            tenant, ns = parts[1], "/".join(parts[1:3])
            if len(parts) == 4 and parts[3] == "replication":
                if method == "GET":
                    return (200, self.namespaces[ns]) if ns in self.namespaces else (404, {"reason": "no namespace"})
                allowed = self.tenants.get(tenant, {}).get("allowedClusters", [])
                if any(c not in allowed for c in body):
                    return 403, {"reason": "Cluster not in the tenant's allowed clusters"}
                self.namespaces[ns] = list(body)
                return 204, None
            if tenant not in self.tenants:
                return 404, {"reason": "Tenant does not exist"}
            if ns in self.namespaces:
                return 409, {"reason": "Namespace already exists"}
            self.namespaces[ns] = list((body or {}).get("replication_clusters", [self.name]))
            return 204, None
        if parts[0] == "persistent" and path.endswith("/stats"):
            answer = self.stats.pop(0) if len(self.stats) > 1 else (self.stats[0] if self.stats else {})
            return 200, answer
        return 404, {"reason": f"no such path {path}"}


def _handler(state: FakeCluster) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _reply(self, code: int, body: Any) -> None:
            raw = b"" if body is None else json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def _handle(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            self._reply(*state.answer(method, self.path, body))

        def do_GET(self) -> None:
            self._handle("GET")

        def do_PUT(self) -> None:
            self._handle("PUT")

        def do_POST(self) -> None:
            self._handle("POST")

    return Handler


Pair = tuple[dict[str, FakeCluster], dict[str, AdminClient]]


@pytest.fixture
def pair() -> Iterator[Pair]:
    states = {name: FakeCluster(name) for name in CLUSTERS}
    servers = []
    admins = {}
    for name, state in states.items():
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        servers.append(server)
        admins[name] = AdminClient(f"http://127.0.0.1:{server.server_address[1]}", timeout_s=2)
    try:
        yield states, admins
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()


def writes(state: FakeCluster) -> list[str]:
    return [f"{m} {p}" for m, p, _ in state.requests if m != "GET"]


def test_registration_runs_in_plan_order_on_both_sides_and_reads_back(pair: Pair) -> None:
    states, admins = pair
    plan = registration_plan([R1, R2])
    assert replication_problem(admins, [R1, R2]) == "r1 does not know cluster(s) r2 (GET /admin/v2/clusters: ['r1'])"
    register_replication(admins, plan)
    for name in CLUSTERS:
        assert writes(states[name]) == [c.describe() for c in plan[name]]
    assert states["r1"].clusters["r2"]["listenerName"] == NETWORK_LISTENER
    assert states["r2"].namespaces[NAMESPACE] == ["r1", "r2"]
    assert replication_problem(admins, [R1, R2]) is None


def test_registering_again_updates_what_exists(pair: Pair) -> None:
    states, admins = pair
    plan = registration_plan([R1, R2])
    register_replication(admins, plan)
    moved = ClusterEndpoint("r2", 43001, 43002)
    register_replication(admins, registration_plan([R1, moved]))  # a restarted pair on new ports
    assert "POST /admin/v2/clusters/r2" in writes(states["r1"])  # 409 on PUT, then the update
    assert states["r1"].clusters["r2"]["brokerServiceUrl"] == "pulsar://r2:43001"
    assert replication_problem(admins, [R1, moved]) is None


def test_the_order_matters_and_a_refused_call_is_one_line_naming_side_and_call(pair: Pair) -> None:
    states, admins = pair
    tenant_first = {"r1": registration_plan([R1, R2])["r1"][1:2]}
    with pytest.raises(TargetError, match=r"Registering replication on r1: .*tenants/keyshared answered 412"):
        register_replication(admins, tenant_first)  # Pulsar refuses a tenant naming a cluster it does not know
    states["r2"].fail["PUT /admin/v2/namespaces/keyshared/replicated"] = 500
    with pytest.raises(TargetError, match=r"^Registering replication on r2: Admin API PUT .* answered 500"):
        register_replication(admins, registration_plan([R1, R2]))


def test_read_back_names_the_side_that_does_not_replicate(pair: Pair) -> None:
    states, admins = pair
    register_replication(admins, registration_plan([R1, R2]))
    states["r2"].namespaces[NAMESPACE] = ["r2"]
    assert replication_problem(admins, [R1, R2]) == f"r2 replicates {NAMESPACE} to ['r2'], not ['r1', 'r2']"
    states["r1"].clusters["r2"] = {"brokerServiceUrl": "pulsar://127.0.0.1:42001"}
    assert "r1 registers r2 at 'pulsar://127.0.0.1:42001', not 'pulsar://r2:42001'" in (
        replication_problem(admins, [R1, R2]) or ""
    )


def test_readiness_waits_for_each_cluster_under_one_bound(pair: Pair) -> None:
    states, admins = pair
    states["r1"].boot_probes, states["r2"].boot_probes = 2, 5
    wait_all_ready(admins, timeout_s=5, poll_s=0.01)
    assert states["r2"].boot_probes == 0
    states["r2"].boot_probes = 10**6
    started = time.monotonic()
    with pytest.raises(TargetError, match=r"cluster 'r2' not ready after 0.3s: .*answered 503"):
        wait_all_ready(admins, timeout_s=0.3, poll_s=0.05)
    assert time.monotonic() - started < 3


# --- waiting for replication to be idle ----------------------------------------------------------------------


def stats(backlog: int, *, peer: str, connected: bool = True) -> dict[str, Any]:
    return {"msgInCounter": 10, "replication": {peer: {"replicationBacklog": backlog, "connected": connected}}}


def test_replication_is_idle_when_every_replicator_is_connected_and_caught_up() -> None:
    assert replication_idle(stats(0, peer="r2"), ["r2"]) is None
    assert replication_idle(stats(3, peer="r2"), ["r2"]) == "3 entries still to replicate to r2"
    assert replication_idle(stats(0, peer="r2", connected=False), ["r2"]) == "the replicator to r2 is not connected"
    assert replication_idle(stats(0, peer="r3"), ["r2"]) == "no replicator to r2 yet"
    assert "no 'replication' section" in (replication_idle({"msgInCounter": 1}, ["r2"]) or "")


def sites(admins: dict[str, AdminClient], **kw: Any) -> BrokerSites:
    endpoints = [SiteEndpoint(name, f"pulsar://127.0.0.1:{n}", admins[name]) for n, name in enumerate(CLUSTERS, 1)]
    return BrokerSites(endpoints, topic="persistent://keyshared/replicated/t", poll_s=0.01, **kw)


def test_settle_waits_until_both_sides_are_idle(pair: Pair) -> None:
    states, admins = pair
    states["r1"].stats = [stats(5, peer="r2"), stats(2, peer="r2"), stats(0, peer="r2")]
    states["r2"].stats = [stats(1, peer="r1"), stats(0, peer="r1")]
    assert sites(admins, snapshot_ms=10, settle_timeout_s=5).settle() is None
    assert sum(p.endswith("/stats") for _, p, _ in states["r1"].requests) >= 3


def test_settle_gives_up_with_a_note_never_a_hang(pair: Pair) -> None:
    states, admins = pair
    states["r1"].stats = [stats(7, peer="r2")]
    states["r2"].stats = [stats(0, peer="r1")]
    started = time.monotonic()
    note = sites(admins, snapshot_ms=10, settle_timeout_s=0.3).settle()
    assert note == "replication not idle 0.3s after the failover began: r1: 7 entries still to replicate to r2"
    assert time.monotonic() - started < 3


def test_sites_without_an_admin_api_wait_two_snapshot_periods_and_say_so() -> None:
    endpoints = [SiteEndpoint("r1", "pulsar://127.0.0.1:1"), SiteEndpoint("r2", "pulsar://127.0.0.1:2")]
    started = time.monotonic()
    note = BrokerSites(endpoints, topic="persistent://a/b/c", snapshot_ms=50).settle()
    assert note is not None and "without the admin API" in note
    assert 0.1 <= time.monotonic() - started < 2


def test_sites_need_two_clusters_and_a_way_to_cut_one_off() -> None:
    with pytest.raises(TargetError, match="needs two clusters"):
        BrokerSites([SiteEndpoint("r1", "pulsar://127.0.0.1:1")], topic="persistent://a/b/c")
    two = [SiteEndpoint("r1", "pulsar://127.0.0.1:1"), SiteEndpoint("r2", "pulsar://127.0.0.1:2")]
    with pytest.raises(UnsupportedByTarget, match="cannot be cut off"):
        BrokerSites(two, topic="persistent://a/b/c").set_down("r2", True)
    calls: list[tuple[str, bool]] = []
    down: Callable[[str, bool], None] = lambda cluster, flag: calls.append((cluster, flag))  # noqa: E731
    BrokerSites(two, topic="persistent://a/b/c", set_down=down).set_down("r2", True)
    assert calls == [("r2", True)]


def test_a_deduplicating_failover_needs_the_pair_started_with_deduplication(tmp_path: Path) -> None:
    """``keyshared_failover(..., deduplication=True)``: without ``deduplication=true`` the pair cannot honour it, and
    the case skips with this line instead of running on clusters that do not deduplicate."""
    target = make_target("testcontainers-geo", artifacts_dir=tmp_path)
    with pytest.raises(UnsupportedByTarget, match="start it with deduplication=true"):
        target.replication_sites(case="c", seed=1, deduplication=True)


def test_deleting_an_absent_subscription_is_false_and_other_refusals_still_raise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Pulsar answers 404 ``Subscription not found`` (or ``Topic not found``) to a delete of what is not there:
    the client says False, as the model's ``delete_subscription`` does; a 412 (consumers connected) still raises."""
    from pytest_keyshared.targets.admin import AdminError

    answers: list[int] = []

    def request(self: AdminClient, method: str, path: str, body: Any = None) -> Any:
        status = answers.pop(0)
        if status != 204:
            raise AdminError(f"{method} {path}: {status}", status)
        return None

    monkeypatch.setattr(AdminClient, "request", request)
    admin = AdminClient("http://127.0.0.1:1")
    answers[:] = [204, 404]
    assert admin.delete_subscription("persistent://public/default/t", "s") is True
    assert admin.delete_subscription("persistent://public/default/t", "s") is False
    answers[:] = [412]
    with pytest.raises(AdminError):
        admin.delete_subscription("persistent://public/default/t", "s")
