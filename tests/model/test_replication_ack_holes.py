"""apache/pulsar#25044 through model brokers: a mark-delete position that lags the head with ack holes.

Traffic in r1: one message every 250 ms for 90 s, so a snapshot completes every second. The r1 consumer
acknowledges every message at once except one in twenty (every 5 s), which it holds for 25 s: the mark-delete
position always sits before the oldest held message, 20-25 s behind the head. The newest-10 cache (Pulsar before
4.0.9 / 4.1.3) only ever holds the last ~10 s of snapshots, none at or below the mark-delete position: r2's
subscription is never moved. The distance-based cache (#25044: 4.0.9, 4.1.3, 4.2.0) keeps older snapshots and moves it.
"""

from __future__ import annotations

import pytest

from reference_model.broker.clock import SimClock
from reference_model.broker.model_broker import ModelBroker
from reference_model.replication import (
    DistanceSnapshotCache,
    MarkerType,
    NewestSnapshotCache,
    ReplicatedClusters,
)

TOPIC = "persistent://public/default/holes"
SUB = "sub"


def run_with_holes(version: str) -> tuple[ReplicatedClusters, ModelBroker, ModelBroker]:
    clock = SimClock()
    r1 = ModelBroker(pulsar_version=version, cluster="r1", clock=clock)
    r2 = ModelBroker(pulsar_version=version, cluster="r2", clock=clock)
    layer = ReplicatedClusters([r1, r2])
    r2.subscribe(TOPIC, SUB, replicate_subscription_state=True, initial_position="Earliest").close()
    consumer = r1.subscribe(TOPIC, SUB, replicate_subscription_state=True, initial_position="Earliest")
    producer = r1.create_producer(TOPIC, producer_name="p")
    held: list[tuple[int, object]] = []
    for i in range(360):
        producer.send(f"m{i}".encode(), partition_key=f"k{i % 7}")
        while (msg := consumer.receive(0)) is not None:
            if int(msg.data()[1:]) % 20 == 0:
                held.append((clock.now_ms() + 25_000, msg))
            else:
                consumer.acknowledge(msg)
        while held and held[0][0] <= clock.now_ms():
            consumer.acknowledge(held.pop(0)[1])
        layer.advance(250)
    return layer, r1, r2


@pytest.mark.parametrize(("version", "cache_type"), [("4.0.8", NewestSnapshotCache), ("4.1.2", NewestSnapshotCache)])
def test_newest_cache_never_replicates_the_position(version, cache_type) -> None:
    layer, r1, r2 = run_with_holes(version)
    cache = layer.snapshot_cache("r1", TOPIC, SUB)
    assert isinstance(cache, cache_type) and len(cache) == 10
    md = r1.subscription(TOPIC, SUB).mark_delete_position
    assert md > r1.topic_log(TOPIC).earliest  # r1 did advance, hole by hole
    assert all(s.local_position > md for s in cache.snapshots())  # but every cached snapshot is newer
    assert [e for e in r1.topic_log(TOPIC) if e.metadata.marker_type == MarkerType.REPLICATED_SUBSCRIPTION_UPDATE] == []
    assert r2.subscription(TOPIC, SUB).mark_delete_position == r2.topic_log(TOPIC).earliest


@pytest.mark.parametrize("version", ["4.0.9", "4.1.3", "4.2"])
def test_distance_cache_replicates_the_position(version: str) -> None:
    layer, r1, r2 = run_with_holes(version)
    assert isinstance(layer.snapshot_cache("r1", TOPIC, SUB), DistanceSnapshotCache)
    updates = [e for e in r1.topic_log(TOPIC) if e.metadata.marker_type == MarkerType.REPLICATED_SUBSCRIPTION_UPDATE]
    assert len(updates) >= 10  # about one per released hole
    remote_md = r2.subscription(TOPIC, SUB).mark_delete_position
    assert remote_md > r2.topic_log(TOPIC).earliest
    # What r2 skips was all acknowledged in r1: every r1 message before r2's position is at or below r1's.
    r1_md = r1.subscription(TOPIC, SUB).mark_delete_position
    skipped = {e.messages[0].payload for e in r2.topic_log(TOPIC) if not e.is_marker and e.position <= remote_md}
    acked_in_r1 = {e.messages[0].payload for e in r1.topic_log(TOPIC) if not e.is_marker and e.position <= r1_md}
    assert skipped and skipped <= acked_in_r1
