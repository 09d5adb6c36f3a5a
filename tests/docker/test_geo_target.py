"""Two Apache Pulsar 4.0 clusters with a replicated namespace: registrations, replication, a failover.

Starting the pair already proves a message published in r1 arrives in r2 (the target's probe); these tests
check what the target registered, run the failover driver on it, and run the suite's replication cases
against it.  Skipped with the reason when no Docker engine is reachable.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conformance.checks import Validity, check_trace
from pytest_keyshared.driver.replication import Failover, failover_header
from pytest_keyshared.targets import Target
from pytest_keyshared.targets.geo import NAMESPACE, NETWORK_LISTENER, GeoTarget

pytestmark = pytest.mark.docker


def test_both_sides_know_both_clusters_and_replicate_the_namespace(geo_clusters: Target) -> None:
    assert isinstance(geo_clusters, GeoTarget)
    for side in ("r1", "r2"):
        admin = geo_clusters.admin(side)
        assert {"r1", "r2"} <= set(admin.clusters())
        assert sorted(admin.request("GET", f"/admin/v2/namespaces/{NAMESPACE}/replication")) == ["r1", "r2"]
        peer = "r2" if side == "r1" else "r1"
        data = admin.request("GET", f"/admin/v2/clusters/{peer}")
        assert data["brokerServiceUrl"] == geo_clusters.endpoint(peer).network_service_url
        assert data.get("listenerName") == NETWORK_LISTENER
    assert geo_clusters.service_url == geo_clusters.endpoint("r1").service_url
    assert geo_clusters.service_url.startswith("pulsar://127.0.0.1:")


def test_a_consumer_failing_over_to_r2_skips_nothing(geo_clusters: Target, tmp_path: Path) -> None:
    assert isinstance(geo_clusters, GeoTarget)
    sites = geo_clusters.replication_sites(case="docker-switch", seed=0)
    path = tmp_path / "failover.jsonl"
    with Failover(sites, failover_header(geo_clusters, sites, seed=0), path) as run:
        run.publish(20)
        run.consume(lambda i: i < 10)
        run.advance(3 * geo_clusters.snapshot_frequency_ms)
        run.fail_over("r2")
    verdict = check_trace(path)
    assert verdict.validity is Validity.VALID, verdict.render()
    saved = geo_clusters.save_cluster_logs(tmp_path)
    assert [p.name for p in saved] == ["pulsar-r1.log", "pulsar-r2.log"] and all(p.stat().st_size for p in saved)


def test_the_suite_s_replication_cases_run_on_the_pair(docker_engine: None, tmp_path: Path) -> None:
    """A separate pytest process with its own pair: the cases run there instead of skipping."""
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "pytest_keyshared",
            "--pyargs",
            "conformance.cases.test_replication",
            "--keyshared-target=testcontainers-geo",
            f"--basetemp={tmp_path / 'run'}",
            "-q",
            "-rs",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    out = completed.stdout + completed.stderr
    assert completed.returncode == 0, out
    assert "4 passed" in out and "2 skipped" in out, out  # three clusters and a delayed link: the model only
