"""ReplicatedClusters itself: construction errors, restarts, stats, the replicator rule table."""

from __future__ import annotations

import json

import pytest

from reference_model.broker.clock import SimClock
from reference_model.broker.model_broker import ModelBroker
from reference_model.errors import InvalidArgument
from reference_model.replication import MarkerType, ReplicatedClusters, ReplicationConfig, ReplicatorAction, classify
from reference_model.storage.entry import Entry, MessageMetadata
from reference_model.storage.position import Position

TOPIC = "persistent://public/default/layer"
SUB = "sub"


def two() -> tuple[ReplicatedClusters, ModelBroker, ModelBroker]:
    clock = SimClock()
    r1, r2 = ModelBroker(cluster="r1", clock=clock), ModelBroker(cluster="r2", clock=clock)
    return ReplicatedClusters([r1, r2]), r1, r2


def entry(**metadata) -> Entry:
    return Entry(Position(0, 0), MessageMetadata(producer_name="p", sequence_id=0, **metadata), (), b"")


@pytest.mark.parametrize(
    ("metadata", "remote", "action"),
    [
        ({}, "r2", ReplicatorAction.SEND),
        ({"replicate_to": ("r2", "r3")}, "r2", ReplicatorAction.SEND),
        ({"replicate_to": ("r1",)}, "r2", ReplicatorAction.SKIP_NOT_FOR_REMOTE),
        ({"replicated_from": "r3"}, "r2", ReplicatorAction.SKIP_REPLICATED),
        ({"replicated_from": "r2"}, "r2", ReplicatorAction.SKIP_REPLICATED),
        ({"replicated_from": "r2", "marker_type": 11}, "r2", ReplicatorAction.MARKER_FROM_REMOTE),
        ({"replicated_from": "r3", "marker_type": 10}, "r2", ReplicatorAction.SKIP_REPLICATED),
        ({"marker_type": 12, "replicate_to": ("r1",)}, "r2", ReplicatorAction.SKIP_NOT_FOR_REMOTE),
    ],
)
def test_replicator_rule(metadata, remote, action) -> None:
    assert classify(entry(**metadata), remote) is action


def test_restart_forgets_controllers_and_caches_keeps_replicating() -> None:
    layer, r1, r2 = two()
    for broker in (r1, r2):
        broker.subscribe(TOPIC, SUB, replicate_subscription_state=True, initial_position="Earliest").close()
    consumer = r1.subscribe(TOPIC, SUB, replicate_subscription_state=True, initial_position="Earliest")
    producer = r1.create_producer(TOPIC, producer_name="p")
    producer.send(b"a")
    layer.advance(1500)
    while consumer.receive(0) is not None:
        pass  # read, not acknowledged: the snapshot is cached, nothing passes it
    assert layer.snapshot_cache("r1", TOPIC, SUB) is not None
    before = layer.controller("r1", TOPIC)
    r1.restart()
    assert layer.snapshot_cache("r1", TOPIC, SUB) is None
    assert layer.controller("r1", TOPIC) is not before
    layer.advance(3000)  # no data since the topic was reloaded: no snapshot (#16618)
    assert layer.controller("r1", TOPIC).requests_written == 0
    producer.send(b"b")
    layer.advance(1000)
    assert layer.controller("r1", TOPIC).snapshots_completed == 1
    copies = [e.messages[0].payload for e in r2.topic_log(TOPIC) if not e.is_marker]
    assert copies == [b"a", b"b"]
    assert any(what == "restart" for _, cluster, _, what, _ in layer.events if cluster == "r1")


def test_a_replicator_of_one_direction_disconnected_holds_the_answers_back() -> None:
    layer, r1, r2 = two()
    for broker in (r2, r1):
        broker.subscribe(TOPIC, SUB, replicate_subscription_state=True, initial_position="Earliest").close()
    layer.set_link_down("r2", "r1")
    r1.create_producer(TOPIC, producer_name="p").send(b"a")
    layer.advance(2500)
    controller = layer.controller("r1", TOPIC)
    assert controller is not None and controller.snapshots_completed == 0 and controller.pending  # answers held
    assert [e.messages[0].payload for e in r2.topic_log(TOPIC) if not e.is_marker] == [b"a"]  # r1 -> r2 flows
    layer.set_link_down("r2", "r1", down=False)
    layer.run_until_idle()
    assert controller.snapshots_completed >= 1
    assert [what for _, _, _, what, _ in layer.events if what.startswith("link")] == ["link down", "link up"]


def test_a_deleted_subscription_is_gone_and_one_with_consumers_is_kept() -> None:
    _, r1, _ = two()
    consumer = r1.subscribe(TOPIC, SUB, replicate_subscription_state=True, initial_position="Earliest")
    with pytest.raises(InvalidArgument, match="connected consumers"):
        r1.delete_subscription(TOPIC, SUB)
    consumer.close()
    assert r1.delete_subscription(TOPIC, SUB) and r1.subscription(TOPIC, SUB) is None
    assert not r1.delete_subscription(TOPIC, SUB)
    assert not r1.set_replicated_subscription_status(TOPIC, SUB, True)


def test_controller_needs_a_replicated_subscription() -> None:
    layer, r1, _ = two()
    r1.create_producer(TOPIC, producer_name="p").send(b"a")
    layer.advance(2000)
    assert layer.controller("r1", TOPIC) is None
    assert not [e for e in r1.topic_log(TOPIC) if e.is_marker]
    r1.subscribe(TOPIC, "plain").close()
    assert layer.controller("r1", TOPIC) is None


def test_topics_existing_before_the_layer_replicate_from_their_end() -> None:
    clock = SimClock()
    r1, r2 = ModelBroker(cluster="r1", clock=clock), ModelBroker(cluster="r2", clock=clock)
    producer = r1.create_producer(TOPIC, producer_name="p")
    producer.send(b"old")
    layer = ReplicatedClusters([r1, r2])
    producer.send(b"new")
    layer.run_until_idle()
    assert [e.messages[0].payload for e in r2.topic_log(TOPIC) if not e.is_marker] == [b"new"]
    assert layer.replicator("r1", "r2", "layer").delivered == 1


def test_stats_are_json_safe() -> None:
    layer, r1, r2 = two()
    r2.subscribe(TOPIC, SUB, replicate_subscription_state=True).close()
    r1.subscribe(TOPIC, SUB, replicate_subscription_state=True, initial_position="Earliest")
    r1.create_producer(TOPIC, producer_name="p").send(b"a")
    layer.advance(1000)
    stats = layer.stats()
    json.dumps(stats)
    assert stats["r1"]["replicators"][f"{TOPIC}->r2"]["delivered"] >= 1
    # Two: the tick at 0 ms, and the one at 1000 ms (the data written at 0 ms is not older than that start).
    assert stats["r1"]["controllers"][TOPIC]["snapshotsCompleted"] == 2
    assert stats["r1"]["snapshotCaches"][f"{TOPIC}#{SUB}"] == ["r1-1", "r1-2"]
    assert not stats["r2"]["down"]
    assert "ReplicatedClusters(clusters=['r1', 'r2']" in repr(layer)
    assert layer.clusters == ("r1", "r2") and layer.config("r2") == ReplicationConfig()
    assert layer.broker("r1") is r1 and not layer.is_down("r1")
    assert any(what == f"write {MarkerType.REPLICATED_SUBSCRIPTION_SNAPSHOT.name}" for *_, what, _ in layer.events)


def test_invalid_construction() -> None:
    clock = SimClock()
    r1 = ModelBroker(cluster="r1", clock=clock)
    with pytest.raises(InvalidArgument, match="at least two clusters"):
        ReplicatedClusters([r1])
    with pytest.raises(InvalidArgument, match="distinct name"):
        ReplicatedClusters([r1, ModelBroker(cluster="r1", clock=clock)])
    with pytest.raises(InvalidArgument, match="share one clock"):
        ReplicatedClusters([r1, ModelBroker(cluster="r2")])
    with pytest.raises(InvalidArgument, match="cluster name"):
        ReplicatedClusters([r1, object()])  # type: ignore[list-item]
    r2 = ModelBroker(cluster="r2", clock=clock)
    with pytest.raises(InvalidArgument, match="Did you mean 'r2'"):
        ReplicatedClusters([r1, r2], config={"r22": ReplicationConfig()})
    with pytest.raises(InvalidArgument, match="ReplicationConfig for cluster 'r2'"):
        ReplicatedClusters([r1, r2], config={"r2": {"enabled": False}})  # type: ignore[dict-item]
    with pytest.raises(InvalidArgument, match="mapping cluster"):
        ReplicatedClusters([r1, r2], config=3)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("call", "fragment"),
    [
        (lambda layer: layer.set_delay("r1", "r9", 5), "remote='r9'"),
        (lambda layer: layer.set_delay("r1", "r1", 5), "both 'r1'"),
        (lambda layer: layer.set_delay("r1", "r2", -1), "delay_ms >= 0"),
        (lambda layer: layer.set_delay("r1", "r2", 1.5), "1.5"),
        (lambda layer: layer.set_down("r"), "cluster='r'"),
        (lambda layer: layer.controller("x", TOPIC), "cluster='x'"),
    ],
)
def test_invalid_calls(call, fragment) -> None:
    layer, _, _ = two()
    with pytest.raises(InvalidArgument) as info:
        call(layer)
    assert fragment in str(info.value)


@pytest.mark.parametrize("enabled", [True, False])
def test_a_subscription_deleted_in_the_remote_comes_back_with_the_next_update(enabled: bool) -> None:
    # testReplicatedSubscriptionWhenReplicatorProducerIsClosed: r2 has no replicated subscription left, so no
    # controller; the marker from r1 starts one (PersistentTopic.receivedReplicatedSubscriptionMarker) and the
    # UPDATE creates the subscription at its position (receiveSubscriptionUpdated).  With replicated
    # subscriptions disabled in r2 (enableReplicatedSubscriptions=false) nothing is started and it stays gone.
    clock = SimClock()
    r1, r2 = ModelBroker(cluster="r1", clock=clock), ModelBroker(cluster="r2", clock=clock)
    layer = ReplicatedClusters([r1, r2], config={"r2": ReplicationConfig(enabled=enabled)})
    r2.subscribe(TOPIC, SUB, replicate_subscription_state=True, initial_position="Earliest").close()
    consumer = r1.subscribe(TOPIC, SUB, replicate_subscription_state=True, initial_position="Earliest")
    producer = r1.create_producer(TOPIC, producer_name="p")
    r2.delete_subscription(TOPIC, SUB)
    assert r2.subscription(TOPIC, SUB) is None and layer.controller("r2", TOPIC) is None
    for n in range(3):
        producer.send(f"m{n}".encode())
    for _ in range(3):
        layer.advance(1000)
        while (message := consumer.receive(0)) is not None:
            consumer.acknowledge(message)
    layer.run_until_idle()
    sub = r2.subscription(TOPIC, SUB)
    if not enabled:
        assert sub is None
        return
    assert sub is not None and sub.replicated
    again = r2.subscribe(TOPIC, SUB, replicate_subscription_state=True, initial_position="Earliest")
    assert again.receive(0) is None  # its cursor is past the three acknowledged messages


@pytest.mark.parametrize("dedup", [True, False])
@pytest.mark.parametrize("fault", ["lose_receipts", "repeat_window"])
def test_a_replicator_sending_again_is_stored_once_by_a_deduplicating_remote(dedup: bool, fault: str) -> None:
    # OneWayReplicatorDeduplicationTest: receipts lost then a reconnection, or repeated Send commands; markers are
    # sent again too (every tick writes one between the messages)
    from reference_model.broker import BrokerConfig
    from reference_model.dedup import DedupConfig

    clock = SimClock()
    config = BrokerConfig(dedup=DedupConfig(broker_enabled=dedup))
    r1, r2 = (ModelBroker(cluster=c, clock=clock, config=config) for c in ("r1", "r2"))
    layer = ReplicatedClusters([r1, r2])
    r2.subscribe(TOPIC, SUB, replicate_subscription_state=True, initial_position="Earliest").close()
    r1.subscribe(TOPIC, SUB, replicate_subscription_state=True, initial_position="Earliest").close()
    if fault == "lose_receipts":
        layer.set_replicator_faults("r1", "r2", lose_receipts=True)
    else:
        layer.set_replicator_faults("r1", "r2", repeat_window=2)
    producer = r1.create_producer(TOPIC, producer_name="p")
    for n in range(6):
        producer.send(f"m{n}".encode())
        layer.advance(1200)
    layer.set_replicator_faults("r1", "r2")
    layer.set_link_down("r1", "r2")
    layer.set_link_down("r1", "r2", down=False)
    layer.run_until_idle()
    reader = r2.subscribe(TOPIC, "reader", initial_position="Earliest")
    got = []
    while (message := reader.receive(0)) is not None:
        got.append(message.data().decode())
    copies = sorted(got)
    if dedup:
        assert got == [f"m{n}" for n in range(6)]
    else:
        assert len(copies) > 6 and set(copies) == {f"m{n}" for n in range(6)}


def test_replicator_faults_are_checked() -> None:
    layer, _r1, _r2 = two()
    with pytest.raises(InvalidArgument, match="repeat_window"):
        layer.set_replicator_faults("r1", "r2", repeat_window=-1)
    with pytest.raises(InvalidArgument, match="both 'r1'"):
        layer.set_replicator_faults("r1", "r1", lose_receipts=True)
