"""The failover workload (``pytest_keyshared.driver.replication.Failover``) on clusters of the reference model.

The same workload runs on real clusters (``BrokerSites``, in ``tests/broker/test_failover_driver.py`` against
pulsar-lite and in ``tests/docker/`` against two Apache Pulsar clusters); here it runs on the model: it records
a trace of ordinary events (the failover, the snapshots, the re-attachment), the checker finds nothing when the
clusters keep the contract, catches a cluster that skips a message or delivers nothing, and every wait ends.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conformance.checks import Kind, Validity, check_trace
from conformance.target import Delivery, SiteConsumer, SiteProducer
from pytest_keyshared.driver.model_sites import ModelSites
from pytest_keyshared.driver.replication import Failover, failover_header

SNAPSHOT_MS = 1000


def recorded(sites: Any, path: Path) -> Failover:
    return Failover(sites, failover_header("model", sites, seed=3, pulsar_version="4.0"), path)


def switch_to_standby(run: Failover) -> Path:
    """ReplicatorSubscriptionTest.testReplicatedSubscribeAndSwitchToStandbyCluster, as the suite's case runs it."""
    with run:
        run.publish(20)
        run.advance(10)
        run.consume(lambda i: i < 10)
        run.advance(3 * SNAPSHOT_MS)
        run.fail_over("r2")
    assert run.trace_path is not None
    return run.trace_path


def events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()[1:]]


def test_a_failover_on_model_clusters_is_an_ordinary_trace_and_valid(tmp_path: Path) -> None:
    path = switch_to_standby(recorded(ModelSites(seed=3), tmp_path / "t.jsonl"))
    header = json.loads(path.read_text().splitlines()[0])
    assert header["clusters"] == ["r1", "r2"] and header["subscription"]["name"] == "ks-replicated-sub"
    trace = events(path)
    ops = [e["op"] for e in trace]
    failover = ops.index("failover")
    assert trace[failover]["cluster"] == "r1" and trace[failover]["to"] == "r2"
    assert trace[failover]["topic"].endswith("@r1")
    assert [e["cluster"] for e in trace[:failover] if e["op"] == "snapshot"] == ["r1", "r2"]
    reattach = trace[failover + 1]
    assert reattach["op"] == "open" and reattach["consumer"] == "c1" and reattach["topic"].endswith("@r2")
    assert trace[-1] == {**trace[-1], "op": "end", "drained": True}
    published = [e["uid"] for e in trace if e["op"] == "publish"]
    after = {e["uid"] for e in trace[failover:] if e["op"] == "receive"}
    assert published == [f"m{n}" for n in range(20)] and {f"m{n}" for n in range(10, 20)} <= after
    verdict = check_trace(path)
    assert verdict.validity is Validity.VALID, verdict.render()


class _Skipping:
    """A standby consumer that never hands over one message: a cluster that broke the contract."""

    def __init__(self, inner: SiteConsumer, hide: str) -> None:
        self.inner = inner
        self.hide = hide

    def receive(self, timeout_ms: int) -> Delivery | None:
        got = self.inner.receive(timeout_ms)
        if got is not None and got.payload == self.hide:
            self.inner.acknowledge(got.token)
            return self.inner.receive(timeout_ms)
        return got

    def acknowledge(self, token: Any) -> None:
        self.inner.acknowledge(token)

    def close(self) -> None:
        self.inner.close()


class SkippingSites(ModelSites):
    def subscribe(self, cluster: str) -> SiteConsumer:
        consumer = super().subscribe(cluster)
        return _Skipping(consumer, "m13") if cluster == "r2" else consumer


def test_a_cluster_that_skips_an_unacknowledged_message_is_caught_and_explained(tmp_path: Path) -> None:
    path = switch_to_standby(recorded(SkippingSites(seed=3), tmp_path / "t.jsonl"))
    (found,) = check_trace(path).violations
    assert found.kind is Kind.SKIPPED_AFTER_FAILOVER and found.facts["uid"] == "m13"
    assert found.explanation.startswith("skipped_after_failover: m13 (subscription 'ks-replicated-sub')")


class _Silent:
    def receive(self, timeout_ms: int) -> Delivery | None:
        return None

    def acknowledge(self, token: Any) -> None:
        raise AssertionError("nothing was received")

    def close(self) -> None:
        pass


class _Sink:
    def __init__(self) -> None:
        self.sent = 0

    def send(self, payload: str, key: str) -> str:
        self.sent += 1
        return f"1:{self.sent - 1}:-1:-1"


class SilentSites:
    """Clusters that accept messages and deliver none, with real-broker receive bounds."""

    clusters: tuple[str, ...] = ("r1", "r2")
    topic = "persistent://public/default/silent"
    subscription = "sub"
    consume_timeout_ms = 50
    failover_timeout_ms = 50

    def __init__(self) -> None:
        self.closed = False
        self.elapsed = 0

    def now_ns(self) -> int:
        return self.elapsed * 1_000_000

    def producer(self, cluster: str) -> SiteProducer:
        return _Sink()

    def subscribe(self, cluster: str) -> SiteConsumer:
        return _Silent()

    def elapse(self, ms: int) -> None:
        self.elapsed += ms

    def settle(self) -> str | None:
        return "replication not idle 1s after the failover began: r1: 4 entries still to replicate to r2"

    def backlog(self, cluster: str) -> int | None:
        return None

    def set_down(self, cluster: str, down: bool) -> None:
        pass

    def close(self) -> None:
        self.closed = True


def test_clusters_that_deliver_nothing_end_the_run_with_notes_and_violations(tmp_path: Path) -> None:
    sites = SilentSites()
    run = recorded(sites, tmp_path / "t.jsonl")
    path = switch_to_standby(run)
    assert sites.closed
    end = events(path)[-1]
    assert end["notes"] == [
        "20 published message(s) had not reached the consumer in r1 50 ms after the last one that did",
        "replication not idle 1s after the failover began: r1: 4 entries still to replicate to r2",
    ]
    verdict = check_trace(path)
    assert {v.kind for v in verdict.violations} == {Kind.SKIPPED_AFTER_FAILOVER}
    assert any("12 more skipped message(s)" in n for n in verdict.notes)  # 20 skipped, 8 listed
    with pytest.raises(RuntimeError, match="already failed over"):
        run.consume(lambda i: True)
    assert run.close() == path  # closing twice is harmless


def test_a_run_abandoned_half_way_still_ends_its_trace(tmp_path: Path) -> None:
    run = recorded(ModelSites(seed=1), tmp_path / "t.jsonl")
    run.publish(3)
    run.consume(lambda i: False)
    run.close()
    trace = events(tmp_path / "t.jsonl")
    assert [e["op"] for e in trace[-2:]] == ["close", "end"] and trace[-1]["drained"] is False
    verdict = check_trace(tmp_path / "t.jsonl")
    assert verdict.validity is Validity.UNKNOWN  # not drained: delivery could not be judged


class _Away:
    """A consumer whose client says it is not connected for its first ``receives`` receives (each then times
    out, as a cut-off client's does), then is the wrapped consumer (None: away for good)."""

    def __init__(self, consumer: SiteConsumer, receives: int | None) -> None:
        self.consumer = consumer
        self.left = receives
        self.receives = 0

    def is_connected(self) -> bool:
        return self.left == 0

    def receive(self, timeout_ms: int) -> Delivery | None:
        self.receives += 1
        if self.left == 0:
            return self.consumer.receive(timeout_ms)
        if self.left is not None:
            self.left -= 1
        return None

    def acknowledge(self, token: Any) -> None:
        self.consumer.acknowledge(token)

    def close(self) -> None:
        self.consumer.close()


class AwaySites(ModelSites):
    """Model clusters whose consumer on ``r2`` (after the failover) is away for its first ``receives``."""

    def __init__(self, receives: int | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.receives = receives
        self.away: list[_Away] = []

    def subscribe(self, cluster: str) -> SiteConsumer:
        consumer = super().subscribe(cluster)
        if cluster != "r2" or len(self.away) < 1:  # the standby subscription's creation at the start: as is
            if cluster == "r2":
                self.away.append(_Away(consumer, 0))
            return consumer
        self.away.append(_Away(consumer, self.receives))
        return self.away[-1]


def test_the_drain_after_a_failover_waits_for_a_consumer_that_comes_back(tmp_path: Path) -> None:
    """Away for two receive windows after the failover, then back: drained, every message received in r2."""
    sites = AwaySites(2, seed=3)
    path = switch_to_standby(recorded(sites, tmp_path / "t.jsonl"))
    end = events(path)[-1]
    assert end["drained"] is True and "unreachable" not in end
    assert check_trace(path).valid  # without the wait: skipped_after_failover for every message owed in r2


def test_a_consumer_away_to_the_end_of_the_drain_after_a_failover_is_named(tmp_path: Path) -> None:
    from pytest_keyshared.driver.replication import AWAY_WINDOWS

    sites = AwaySites(None, seed=3)
    path = switch_to_standby(recorded(sites, tmp_path / "t.jsonl"))
    assert sites.away[-1].receives == 1 + AWAY_WINDOWS  # bounded: the silent receive, then the windows
    end = events(path)[-1]
    assert end["drained"] is False and end["unreachable"] == ["c1"]
    assert any("could not reach consumer 'c1'" in note for note in end["notes"]), end["notes"]
    verdict = check_trace(path)
    assert verdict.validity is Validity.UNKNOWN and not verdict.violations  # not judged, not invalid


def test_after_a_failover_with_everything_acknowledged_an_away_consumer_does_not_matter(tmp_path: Path) -> None:
    sites = AwaySites(None, seed=3)
    with recorded(sites, tmp_path / "t.jsonl") as run:
        run.publish(10)
        run.advance(10)
        run.consume(lambda i: True)
        run.advance(3 * SNAPSHOT_MS)
        run.fail_over("r2")
    end = events(tmp_path / "t.jsonl")[-1]
    assert end["drained"] is True and "unreachable" not in end
    assert check_trace(tmp_path / "t.jsonl").valid
