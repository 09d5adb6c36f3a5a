"""Compaction in the model (``reference_model.storage.compaction``): the latest message per key up to the horizon,
markers left out, and a compacted read that adds everything after the horizon
(``ReplicatedSubscriptionTest.testReplicatedSubscriptionWithCompaction``)."""

from __future__ import annotations

from reference_model.broker.clock import SimClock
from reference_model.broker.model_broker import ModelBroker
from reference_model.replication import ReplicatedClusters

TOPIC = "persistent://public/default/compacted"


def payloads(broker: ModelBroker) -> list[str]:
    return [e.messages[0].payload.decode() for e in broker.read_compacted(TOPIC)]


def test_a_compacted_read_gets_the_latest_value_per_key_and_no_marker() -> None:
    clock = SimClock()
    r1, r2 = ModelBroker(cluster="r1", clock=clock), ModelBroker(cluster="r2", clock=clock)
    layer = ReplicatedClusters([r1, r2])
    consumer = r1.subscribe(TOPIC, "sub", replicate_subscription_state=True, initial_position="Earliest")
    producer = r1.create_producer(TOPIC)
    producer.send(b"V1", partition_key="K1")
    producer.send(b"V2", partition_key="K1")
    producer.send(b"W1", partition_key="K2")
    while (message := consumer.receive(0)) is not None:
        consumer.acknowledge(message)
    layer.run_until_idle()
    layer.advance(3000)  # snapshots complete: markers follow the data
    layer.run_until_idle()
    assert any(e.is_marker for e in r1.topic_log(TOPIC)), "the scenario needs markers in the topic"
    assert payloads(r1) == ["V1", "V2", "W1"]  # never compacted: every data message, no marker
    done = r1.compact(TOPIC)
    assert done.horizon == r1.topic_log(TOPIC).last_position
    assert payloads(r1) == ["V2", "W1"]
    producer.send(b"V3", partition_key="K1")  # after the horizon: read as it is, until the next compaction
    assert payloads(r1) == ["V2", "W1", "V3"]
    r1.compact(TOPIC)
    assert payloads(r1) == ["W1", "V3"]
