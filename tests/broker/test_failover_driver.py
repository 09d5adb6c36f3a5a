"""The failover driver's real-broker half (``BrokerSites``) against pulsar-lite, which has no geo-replication.

Two "clusters" that are one broker share the subscription itself: failing over skips nothing, so the recorded
trace is valid (no false positive).  Each message gets a key of its own there: after a consumer
leaves, pulsar-lite redelivers one message per key only (pulsar-lite.md §5.3), which would be its finding, not
the driver's.  Two separate brokers replicate nothing: the driver must
report every unacknowledged message as skipped, and the replication probe must refuse them within its bound.
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path

import pytest

from conformance.checks import Kind, Validity, check_trace
from conformance.trace import read_trace
from pytest_keyshared.driver.replication import BrokerSites, Failover, SiteEndpoint, failover_header, probe_replication
from pytest_keyshared.targets import TargetError, open_target
from pytest_keyshared.targets.pulsar_lite import PulsarLiteTarget

pytestmark = pytest.mark.broker


def topic() -> str:
    return f"persistent://public/default/ks-failover-{secrets.token_hex(4)}"


def test_one_broker_as_both_clusters_skips_nothing(lite: PulsarLiteTarget, tmp_path: Path) -> None:
    sites = BrokerSites(
        [SiteEndpoint("r1", lite.service_url), SiteEndpoint("r2", lite.service_url)],
        topic=topic(),
        snapshot_ms=100,
        failover_timeout_ms=1000,
    )
    started = time.monotonic()
    path = tmp_path / "one.jsonl"
    with Failover(sites, failover_header(lite, sites, seed=0), path) as run:
        run.publish(20, keys=20)
        run.consume(lambda i: i < 10)
        run.advance(100)
        run.fail_over("r2")
    assert time.monotonic() - started < 30
    verdict = check_trace(path)
    assert verdict.validity is Validity.VALID, verdict.render()
    assert run.notes == ["replication progress cannot be read without the admin API; waited two snapshot periods"]


def test_a_reader_on_one_broker_as_both_clusters_reads_every_message(lite: PulsarLiteTarget, tmp_path: Path) -> None:
    # the read step's real-client half: a reader from the earliest message, has_message_available / read_next
    sites = BrokerSites(
        [SiteEndpoint("r1", lite.service_url), SiteEndpoint("r2", lite.service_url)],
        topic=topic(),
        snapshot_ms=100,
        failover_timeout_ms=1000,
    )
    path = tmp_path / "reader.jsonl"
    with Failover(sites, failover_header(lite, sites, seed=0), path) as run:
        run.publish(6, keys=6)
        run.consume(lambda i: i < 3)
        run.read("r2")
        run.fail_over("r2")
    verdict = check_trace(path)
    assert verdict.validity is Validity.VALID, verdict.render()
    # no admin API: the settle cannot show replication idle, so the reader is recorded but not judged
    assert any("reader 'reader-r2'" in n and "not judged" in n for n in verdict.notes), verdict.notes
    reads = [e for e in read_trace(path)[1] if e.op.value == "receive" and e.consumer == "reader-r2"]
    assert sorted(e.uid for e in reads) == [f"m{n}" for n in range(6)]


def test_two_brokers_without_replication_skip_every_unacknowledged_message(
    lite: PulsarLiteTarget, tmp_path: Path
) -> None:
    with open_target("pulsar-lite", artifacts_dir=tmp_path / "second") as other:
        assert isinstance(other, PulsarLiteTarget)
        sites = BrokerSites(
            [SiteEndpoint("r1", lite.service_url), SiteEndpoint("r2", other.service_url)],
            topic=topic(),
            snapshot_ms=50,
            failover_timeout_ms=1000,
        )
        path = tmp_path / "two.jsonl"
        with Failover(sites, failover_header(lite, sites, seed=0), path) as run:
            run.publish(12)
            run.consume(lambda i: i % 3 == 0)
            run.fail_over("r2")
        skipped = check_trace(path).violations
        assert {v.kind for v in skipped} == {Kind.SKIPPED_AFTER_FAILOVER}
        assert sorted(v.facts["uid"] for v in skipped) == sorted(f"m{n}" for n in range(12) if n % 3 != 0)[:8]

        started = time.monotonic()
        with pytest.raises(TargetError, match=r"Replication r1 -> r2 does not work: .* within 2s"):
            probe_replication([("r1", lite.service_url), ("r2", other.service_url)], topic=topic(), timeout_s=2)
        assert time.monotonic() - started < 10
    probe_replication([("r1", lite.service_url), ("r2", lite.service_url)], topic=topic(), timeout_s=10)
