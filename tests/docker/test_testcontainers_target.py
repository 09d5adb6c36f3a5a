"""Apache Pulsar 4.0 standalone (PIP-379) as a target: the contracts pulsar-lite breaks hold here."""

from __future__ import annotations

import json
from pathlib import Path

import pulsar
import pytest

from conformance.scenarios import load_scenario
from pytest_keyshared.driver import run_scenario
from pytest_keyshared.targets import Target
from pytest_keyshared.targets.testcontainers import TestcontainersTarget

pytestmark = pytest.mark.docker


def test_the_standalone_is_reachable_from_the_host_through_lookups(pulsar_container: Target) -> None:
    assert isinstance(pulsar_container, TestcontainersTarget)
    assert pulsar_container.service_url.startswith("pulsar://127.0.0.1:")
    client = pulsar.Client(pulsar_container.service_url, operation_timeout_seconds=30)
    try:
        producer = client.create_producer("persistent://public/default/lookup-check")
        assert producer.send(b"x").entry_id() >= 0  # the advertised address answered the lookup
    finally:
        client.close()


@pytest.mark.parametrize("name", ["steady-state", "join-while-pending", "leave-while-pending", "crash-while-pending"])
def test_core_scenarios_are_valid_on_pulsar_4(pulsar_container: Target, name: str, tmp_path: Path) -> None:
    result = run_scenario(pulsar_container, load_scenario(name), seed=0, out_dir=tmp_path)
    assert result.verdict is not None and result.verdict.valid, result.verdict.render()
    assert result.counters.acked_expected == result.counters.expected_uids


def test_dedup_retry_is_valid_once_the_harness_switches_deduplication_on(
    pulsar_container: Target, tmp_path: Path
) -> None:
    result = run_scenario(pulsar_container, load_scenario("dedup-retry"), seed=0, out_dir=tmp_path)
    publishes = [json.loads(line) for line in result.trace_path.read_text().splitlines()[1:]]
    receipts = [e["msg_id"] for e in publishes if e["op"] == "publish" and e["seq"] > 40][-10:]
    assert receipts == ["-1:-1:-1:-1"] * 10
    assert "duplicate_publish" not in result.violation_kinds()
