"""Apache Pulsar in Docker for the ``docker`` tests: one standalone, and one pair of replicated clusters, for the
session (each started only when a test asks for it).

Without a reachable Docker engine every test here is skipped with the reason ("no Docker engine reachable
(...)"); everything short of the container start is covered by ``tests/unit/test_target_testcontainers.py`` and
``tests/unit/test_target_geo.py``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pytest_keyshared.targets import Target, open_target
from pytest_keyshared.targets.testcontainers import docker_engine_problem


@pytest.fixture(scope="session")
def docker_engine() -> None:
    problem = docker_engine_problem()
    if problem is not None:
        pytest.skip(f"no Docker engine reachable ({problem})")


@pytest.fixture(scope="session")
def pulsar_container(docker_engine: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    with open_target("testcontainers", artifacts_dir=tmp_path_factory.mktemp("pulsar-standalone")) as target:
        yield target


@pytest.fixture(scope="session")
def geo_clusters(docker_engine: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    """Clusters r1 and r2 with the replicated namespace, registered on both sides and proven to replicate."""
    with open_target("testcontainers-geo", artifacts_dir=tmp_path_factory.mktemp("pulsar-geo")) as target:
        yield target
