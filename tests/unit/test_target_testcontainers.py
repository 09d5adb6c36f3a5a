"""Apache Pulsar in Docker: everything short of the container start, and the admin REST calls.

The image, broker settings, ``PULSAR_PREFIX_`` environment, command and readiness rule are plain functions.
Readiness and the deduplication switch are exercised against a small local HTTP server that answers the
few admin paths the harness calls, the way a booting standalone does (503 first, then the real bodies).
The container start itself is in ``tests/docker/`` and needs a Docker engine.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from pytest_keyshared.targets import TargetError, make_target
from pytest_keyshared.targets.admin import AdminClient, topic_path
from pytest_keyshared.targets.testcontainers import (
    DEFAULT_IMAGE,
    DEFAULT_TAG,
    TestcontainersTarget,
    broker_settings,
    container_command,
    container_env,
    docker_engine_problem,
    parse_image,
    readiness_problem,
    version_from_tag,
    wait_until_ready,
)
from reference_model.errors import InvalidArgument


def test_images_default_to_a_pinned_4_0_lts_tag() -> None:
    assert parse_image("") == (DEFAULT_IMAGE, DEFAULT_TAG)
    assert DEFAULT_TAG.startswith("4.0.")
    assert parse_image("4.0.6") == (DEFAULT_IMAGE, "4.0.6")
    assert parse_image("apachepulsar/pulsar-all:3.0.12") == ("apachepulsar/pulsar-all", "3.0.12")
    assert parse_image("registry.local:5000/pulsar:4.0.13") == ("registry.local:5000/pulsar", "4.0.13")
    assert version_from_tag("4.0.13") == "4.0.13"
    assert version_from_tag("v3.3.9") == "3.3.9"
    assert version_from_tag("nightly") is None


def test_settings_reach_standalone_conf_as_pulsar_prefix_variables() -> None:
    settings = broker_settings(
        broker_port=40001,
        web_port=40002,
        implementation="classic",
        deduplication=True,
        extra={"keySharedLookAheadMsgInReplayThresholdPerSubscription": 20, "keySharedUnblockingIntervalMs": 0},
    )
    assert settings["subscriptionKeySharedUseClassicPersistentImplementation"] == "true"
    assert settings["brokerDeduplicationEnabled"] == "true"
    assert settings["advertisedAddress"] == "127.0.0.1"  # lookups answer an address the host can reach
    assert (settings["brokerServicePort"], settings["webServicePort"]) == ("40001", "40002")
    assert settings["keySharedLookAheadMsgInReplayThresholdPerSubscription"] == "20"
    env = container_env(settings, pulsar_mem="-Xmx512m")
    assert env["PULSAR_PREFIX_brokerDeduplicationEnabled"] == "true"
    assert env["PULSAR_PREFIX_keySharedUnblockingIntervalMs"] == "0"
    assert env["PULSAR_MEM"] == "-Xmx512m"
    assert all(k.startswith("PULSAR_PREFIX_") for k in env if k != "PULSAR_MEM")
    assert (
        broker_settings(broker_port=1, web_port=2)["subscriptionKeySharedUseClassicPersistentImplementation"] == "false"
    )


def test_the_command_applies_the_environment_then_runs_a_lean_standalone() -> None:
    command = container_command()
    assert command[:2] == ["sh", "-c"]
    apply, run = command[2].split(" && ")
    assert apply == "bin/apply-config-from-env.py conf/standalone.conf"
    assert run == "exec bin/pulsar standalone -nfw -nss"


def test_target_options_pick_the_contract(tmp_path: Path) -> None:
    target = make_target("testcontainers:3.0.12", artifacts_dir=tmp_path)
    assert isinstance(target, TestcontainersTarget)
    assert (target.claims.pulsar_version, target.claims.implementation) == ("3.0.12", "classic")
    assert target.header_extra()["image"] == f"{DEFAULT_IMAGE}:3.0.12"
    modern = make_target("testcontainers", artifacts_dir=tmp_path, options={"implementation": "classic"})
    assert modern.claims.implementation == "classic" and modern.capabilities.dedup_switch
    with pytest.raises(InvalidArgument, match="only the classic Key_Shared implementation"):
        make_target("testcontainers:3.3.9", artifacts_dir=tmp_path, options={"implementation": "pip379"})
    with pytest.raises(InvalidArgument, match="pass the target option pulsar_version"):
        make_target("testcontainers:my/pulsar:nightly", artifacts_dir=tmp_path)
    assert make_target("testcontainers:my/pulsar:nightly", artifacts_dir=tmp_path, options={"pulsar_version": "4.0"})


def test_5_0_runs_pip379_and_refuses_the_classic_dispatcher(tmp_path: Path) -> None:
    """5.0 removed the classic dispatcher (apache/pulsar#26687): no setting selects it, so asking for it is refused."""
    five = make_target("testcontainers:5.0.0", artifacts_dir=tmp_path)
    assert (five.claims.pulsar_version, five.claims.implementation) == ("5.0.0", "pip379")
    for spec, options in (
        ("testcontainers:5.0.0", {"implementation": "classic"}),
        ("pulsar://127.0.0.1:6650", {"pulsar_version": "5.0", "implementation": "classic"}),
    ):
        with pytest.raises(InvalidArgument, match=r"no classic Key_Shared implementation.*#26687"):
            make_target(spec, artifacts_dir=tmp_path, options=options)


def test_docker_engine_problem_is_a_reason_or_none() -> None:
    started = time.monotonic()
    problem = docker_engine_problem(timeout_s=2)
    assert problem is None or (isinstance(problem, str) and problem)
    assert time.monotonic() - started < 15


# --- a booting standalone's admin API, on loopback -------------------------------------------------------


class FakeAdmin:
    """Answers /admin/v2 like a standalone that becomes ready after ``boot_calls`` cluster probes."""

    def __init__(self, boot_calls: int = 2, dedup_lag_calls: int = 1) -> None:
        self.boot_calls = boot_calls
        self.dedup_lag_calls = dedup_lag_calls
        self.requests: list[tuple[str, str, Any]] = []
        self.dedup: dict[str, bool] = {}
        self._reads_since_set = 0


def _handler(state: FakeAdmin) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _send(self, code: int, body: Any) -> None:
            raw = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def do_GET(self) -> None:
            state.requests.append(("GET", self.path, None))
            if self.path == "/admin/v2/clusters":
                state.boot_calls -= 1
                self._send(503, {"reason": "starting"}) if state.boot_calls >= 0 else self._send(200, ["standalone"])
            elif self.path == "/admin/v2/namespaces/public":
                self._send(200, ["public/default", "public/functions"])
            elif self.path.endswith("/deduplicationEnabled"):
                state._reads_since_set += 1
                lagging = state._reads_since_set <= state.dedup_lag_calls
                self._send(200, None if lagging else state.dedup.get(self.path))
            elif self.path.endswith("/stats"):
                status = "Enabled" if any(state.dedup.values()) else "Disabled"
                self._send(200, {"deduplicationStatus": status, "msgInCounter": 0})
            else:
                self._send(404, {"reason": "Topic not found"})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append(("POST", self.path, body))
            state.dedup[self.path] = body
            state._reads_since_set = 0
            self.send_response(204)
            self.end_headers()

    return Handler


@pytest.fixture
def fake_admin() -> Iterator[tuple[FakeAdmin, AdminClient]]:
    state = FakeAdmin()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield state, AdminClient(f"http://127.0.0.1:{server.server_address[1]}", timeout_s=2)
    finally:
        server.shutdown()
        server.server_close()


def test_readiness_waits_for_the_standalone_cluster_and_default_namespace(
    fake_admin: tuple[FakeAdmin, AdminClient],
) -> None:
    state, admin = fake_admin
    assert "answered 503" in (readiness_problem(admin) or "")
    wait_until_ready(admin, timeout_s=5, poll_s=0.01)
    assert readiness_problem(admin) is None
    assert ("GET", "/admin/v2/namespaces/public", None) in state.requests


def test_readiness_gives_up_with_the_last_problem(fake_admin: tuple[FakeAdmin, AdminClient]) -> None:
    state, admin = fake_admin
    state.boot_calls = 10**6
    started = time.monotonic()
    with pytest.raises(TargetError, match=r"not ready after 0.3s: .*answered 503"):
        wait_until_ready(admin, timeout_s=0.3, poll_s=0.05)
    assert time.monotonic() - started < 3


def test_deduplication_is_a_topic_policy_applied_before_the_run(fake_admin: tuple[FakeAdmin, AdminClient]) -> None:
    state, admin = fake_admin
    admin.set_topic_deduplication("persistent://public/default/ks-a-1-x", True, wait_s=5)
    path = "/admin/v2/persistent/public/default/ks-a-1-x/deduplicationEnabled"
    assert ("POST", path, True) in state.requests
    assert [r for r in state.requests if r[0] == "GET" and r[1] == path]  # read back until applied
    assert any(r[1].endswith("/stats") for r in state.requests)  # and the topic reports it Enabled


def test_admin_errors_are_one_line_target_errors(fake_admin: tuple[FakeAdmin, AdminClient]) -> None:
    _, admin = fake_admin
    with pytest.raises(TargetError, match=r"answered 404: .*Topic not found"):
        admin.request("GET", "/admin/v2/persistent/public/default/absent/internalStats")
    unreachable = AdminClient("http://127.0.0.1:1", timeout_s=1)
    with pytest.raises(TargetError, match="failed"):
        unreachable.clusters()
    assert topic_path("persistent://public/default/a b") == "persistent/public/default/a%20b"
    with pytest.raises(TargetError, match="Expected a topic like"):
        topic_path("public/default/x")
