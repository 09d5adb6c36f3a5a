"""The snapshot counters of a failover run (``/metrics``) judged against its trace, both ways
(:mod:`conformance.cases._snapshot_metrics`), and the Prometheus page parser of real clusters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conformance.cases._snapshot_metrics import snapshot_metrics_problems
from conformance.target import SNAPSHOT_METRICS
from conformance.trace import SubscriptionSpec, TraceHeader
from conformance.trace.builder import TraceBuilder
from pytest_keyshared.driver.replication import parse_snapshot_metrics

A = "t@r1"
COMPLETED, TIMED_OUT = SNAPSHOT_METRICS
SECOND = 1_000_000_000


def _header(conf: dict[str, Any] | None = None) -> TraceHeader:
    extra: dict[str, Any] = {"clusters": ["r1", "r2"]}
    if conf is not None:
        extra["broker_conf"] = conf
    return TraceHeader(target="hand-written", subscription=SubscriptionSpec("s"), deduplication=False, extra=extra)


def _snapshot(b: TraceBuilder, completed: tuple[int, int], timed_out: int = 0, *, settled: bool = True) -> None:
    for cluster, done in zip(("r1", "r2"), completed, strict=True):
        metrics = {COMPLETED: done, TIMED_OUT: timed_out if cluster == "r1" else 0}
        periods = 2 if settled else None
        b.add(
            "snapshot",
            subscription="s",
            cluster=cluster,
            backlog=0,
            settled=settled,
            snapshot_periods=periods,
            metrics=metrics,
        )


def completions(
    tmp_path: Path, later: tuple[int, int], *, step: int = 10, fault: bool = False, off: bool = False
) -> list[str]:
    """m0 published; a settle; m1 published (and a fault with ``fault``); a settle whose counts are ``later``."""
    b = TraceBuilder(_header(), step=step)
    b.open("c1", topic=A)
    b.publish("k0", "1:0", uid="m0", topic=A, seq=0)
    _snapshot(b, (2, 1))
    if off:
        b.add("fault", fault="replicated_subscription_off", cluster="r2", subscription="s", consumers=[], producers=[])
    b.publish("k1", "1:1", uid="m1", topic=A, seq=1)
    if fault:
        b.add("fault", fault="broker_restart", cluster="r1", consumers=[], producers=[])
    _snapshot(b, later)
    b.end()
    return snapshot_metrics_problems(b.write(tmp_path / "t.jsonl"))


@pytest.mark.parametrize("step", [10, 0], ids=["distinct-timestamps", "equal-timestamps"])
def test_a_settle_after_a_publish_without_a_new_completed_snapshot_is_found(tmp_path: Path, step: int) -> None:
    problems = completions(tmp_path, (2, 2), step=step)
    assert len(problems) == 1 and problems[0].startswith(f"{COMPLETED} on r1 stayed at 2")
    assert completions(tmp_path, (2, 1), step=step)[0].startswith(f"{COMPLETED} on r1")  # both clusters judged
    assert len(completions(tmp_path, (2, 1), step=step)) == 2


@pytest.mark.parametrize("step", [10, 0], ids=["distinct-timestamps", "equal-timestamps"])
def test_counts_that_grew_are_valid(tmp_path: Path, step: int) -> None:
    assert completions(tmp_path, (3, 2), step=step) == []


def test_a_fault_or_a_switched_off_status_voids_the_floor(tmp_path: Path) -> None:
    assert completions(tmp_path, (0, 0), fault=True) == []  # a restart resets the counters
    assert completions(tmp_path, (2, 1), off=True) == []  # a cluster may have no controller


def test_no_publish_between_two_settles_claims_nothing(tmp_path: Path) -> None:
    b = TraceBuilder(_header(), step=10)
    b.open("c1", topic=A)
    b.publish("k0", "1:0", uid="m0", topic=A, seq=0)
    _snapshot(b, (2, 1))
    _snapshot(b, (2, 1))
    b.end()
    assert snapshot_metrics_problems(b.write(tmp_path / "t.jsonl")) == []


def timeouts(
    tmp_path: Path, after: int, *, wait_s: int = 35, conf: dict[str, Any] | None = None, other: bool = False
) -> list[str]:
    """A settle (0 timed out); the link r2 -> r1 down; m1 published on r1; ``wait_s`` later a snapshot on r1 with
    ``after`` timed out."""
    b = TraceBuilder(_header(conf), step=0)
    b.open("c1", topic=A)
    b.publish("k0", "1:0", uid="m0", topic=A, seq=0)
    _snapshot(b, (2, 1))
    b.add("fault", fault="link_down", cluster="r2", remote="r1", consumers=[], producers=[])
    if other:
        b.add("fault", fault="cluster_down", cluster="r2", consumers=[], producers=[])
    b.publish("k1", "1:1", uid="m1", topic=A, seq=1)
    b.t += wait_s * SECOND
    _snapshot(b, (2, 1), after, settled=False)
    b.end()
    return snapshot_metrics_problems(b.write(tmp_path / "t.jsonl"))


def test_answers_lost_past_the_timeout_without_a_timed_out_snapshot_are_found(tmp_path: Path) -> None:
    problems = timeouts(tmp_path, 0)
    assert len(problems) == 1 and problems[0].startswith(f"{TIMED_OUT} on r1 is 0")
    assert timeouts(tmp_path, 1) == []


def test_the_timeout_floor_needs_the_time_and_the_link_alone(tmp_path: Path) -> None:
    assert timeouts(tmp_path, 0, wait_s=31) == []  # 30 s + two periods not yet passed
    assert timeouts(tmp_path, 0, wait_s=0) == []  # equal timestamps claim nothing
    assert timeouts(tmp_path, 0, other=True) == []  # r1's replicator to a down cluster: no snapshot starts
    conf = {"replicatedSubscriptionsSnapshotTimeoutSeconds": 60}
    assert timeouts(tmp_path, 0, conf=conf) == []  # the header's longer timeout
    assert len(timeouts(tmp_path, 0, conf={"replicatedSubscriptionsSnapshotTimeoutSeconds": "5"}, wait_s=8)) == 1


def test_prometheus_pages_are_summed_over_label_sets() -> None:
    page = "\n".join(
        [
            "# TYPE pulsar_replicated_subscriptions_snapshot_ms summary",
            'pulsar_replicated_subscriptions_snapshot_ms{cluster="r1",quantile="0.5"} 3.0',
            'pulsar_replicated_subscriptions_snapshot_ms_count{cluster="r1"} 22.0',
            'pulsar_replicated_subscriptions_snapshot_ms_sum{cluster="r1"} 434.0',
            'pulsar_replicated_subscriptions_timedout_snapshots_total{cluster="r1"} 2.0',
            'pulsar_replicated_subscriptions_timedout_snapshots_created{cluster="r1"} 1.6E9',
            "pulsar_replicated_subscriptions_timedout_snapshots 1",
        ]
    )
    assert parse_snapshot_metrics(page) == {COMPLETED: 22, TIMED_OUT: 3}
    assert parse_snapshot_metrics("# nothing\nother_metric 5\n") is None
