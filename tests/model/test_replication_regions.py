"""``ReplicatorSubscriptionTest`` cases through model brokers joined by :class:`ReplicatedClusters`.

Each test builds 2 or 3 :class:`ModelBroker` s on one :class:`SimClock`. Consumers are Key_Shared (the only
consumer type the model broker has); with one consumer per cluster that behaves as the tests' Exclusive one.
"""

from __future__ import annotations

from reference_model.broker.clock import SimClock
from reference_model.broker.model_broker import ModelBroker
from reference_model.replication import MarkerType, ReplicatedClusters, ReplicationConfig

TOPIC = "persistent://public/default/orders"
SUB = "sub"


def make_clusters(*names: str, version: str = "4.0", **kwargs) -> tuple[ReplicatedClusters, list[ModelBroker]]:
    clock = SimClock()
    brokers = [ModelBroker(pulsar_version=version, cluster=name, clock=clock) for name in names]
    return ReplicatedClusters(brokers, **kwargs), brokers


def replicated_subscription(broker: ModelBroker) -> None:
    """Create the replicated subscription (Earliest) without leaving a consumer connected."""
    broker.subscribe(TOPIC, SUB, replicate_subscription_state=True, initial_position="Earliest").close()


def drain(consumer, *, ack: bool = True, limit: int | None = None) -> list[bytes]:
    out: list[bytes] = []
    while limit is None or len(out) < limit:
        msg = consumer.receive(200)
        if msg is None:
            break
        out.append(msg.data())
        if ack:
            consumer.acknowledge(msg)
    return out


def markers(broker: ModelBroker, marker_type: MarkerType) -> list:
    return [e for e in broker.topic_log(TOPIC) if e.metadata.marker_type == marker_type]


def test_data_is_replicated_in_order_and_not_sent_back() -> None:
    layer, (r1, r2) = make_clusters("r1", "r2", delays_ms={("r1", "r2"): 30})
    producer = r1.create_producer(TOPIC, producer_name="p")
    for i in range(5):
        producer.send(f"m{i}".encode(), partition_key=f"k{i}")
    layer.advance(29)
    assert [e for e in r2.topic_log(TOPIC) if not e.is_marker] == []
    layer.advance(1)
    copies = [e for e in r2.topic_log(TOPIC) if not e.is_marker]
    assert [e.messages[0].payload for e in copies] == [f"m{i}".encode() for i in range(5)]
    assert {e.metadata.replicated_from for e in copies} == {"r1"}
    assert {e.metadata.producer_name for e in copies} == {"p"}
    layer.run_until_idle()
    assert len([e for e in r1.topic_log(TOPIC) if not e.is_marker]) == 5  # nothing came back


def test_across_two_regions() -> None:
    """``testReplicatedSubscriptionAcrossTwoRegions``: union of consumed == sent, duplicates allowed."""
    layer, (r1, r2) = make_clusters("r1", "r2")
    replicated_subscription(r1)
    replicated_subscription(r2)
    consumer1 = r1.subscribe(TOPIC, SUB, replicate_subscription_state=True, receiver_queue_size=3)
    producer = r1.create_producer(TOPIC, producer_name="p")
    sent = [f"m{i}".encode() for i in range(6)]
    for payload in sent:
        producer.send(payload)
    first = drain(consumer1, limit=3)
    layer.advance(2 * ReplicationConfig().snapshot_frequency_ms)
    consumer1.close()
    consumer2 = r2.subscribe(TOPIC, SUB, replicate_subscription_state=True)
    second = drain(consumer2)
    assert set(first) | set(second) == set(sent)
    assert first == sent[:3]


def test_switch_to_standby_cluster_receives_everything() -> None:
    """``testReplicatedSubscribeAndSwitchToStandbyCluster``: 20 messages, half consumed in r1, all received."""
    layer, (r1, r2) = make_clusters("r1", "r2")
    replicated_subscription(r1)
    replicated_subscription(r2)
    consumer1 = r1.subscribe(TOPIC, SUB, replicate_subscription_state=True, receiver_queue_size=10)
    producer = r1.create_producer(TOPIC, producer_name="p")
    sent = [f"m{i}".encode() for i in range(20)]
    for payload in sent:
        producer.send(payload, partition_key=payload.decode())
    first = drain(consumer1, limit=10)
    layer.advance(3000)
    consumer1.close()
    second = drain(r2.subscribe(TOPIC, SUB, replicate_subscription_state=True))
    assert set(first) | set(second) == set(sent)
    assert set(sent) - set(first) <= set(second)


def test_mark_delete_passing_a_snapshot_moves_the_remote_subscription() -> None:
    """A snapshot taken after 10 messages, those 10 acked: r2's subscription starts at message 10."""
    layer, (r1, r2) = make_clusters("r1", "r2")
    replicated_subscription(r1)
    replicated_subscription(r2)
    producer = r1.create_producer(TOPIC, producer_name="p")
    for i in range(10):
        producer.send(f"m{i}".encode())
    layer.advance(1000)  # the tick at 0 starts a snapshot; it completes at once (no delay)
    for i in range(10, 20):
        producer.send(f"m{i}".encode())
    consumer1 = r1.subscribe(TOPIC, SUB, replicate_subscription_state=True)
    assert drain(consumer1, limit=10) == [f"m{i}".encode() for i in range(10)]
    layer.run_until_idle()
    updates = markers(r1, MarkerType.REPLICATED_SUBSCRIPTION_UPDATE)
    assert len(updates) == 1
    (target,) = updates[0].marker_payload["clusters"]
    moved_to = (target["message_id"]["ledger_id"], target["message_id"]["entry_id"])
    assert target["cluster"] == "r2" and r2.subscription(TOPIC, SUB).mark_delete_position == moved_to
    request = r2.topic_log(TOPIC).get(moved_to)  # the position the request of the applied snapshot took in r2
    assert request.metadata.marker_type == MarkerType.REPLICATED_SUBSCRIPTION_SNAPSHOT_REQUEST
    assert request.metadata.replicated_from == "r1"
    consumer1.close()
    second = drain(r2.subscribe(TOPIC, SUB, replicate_subscription_state=True))
    assert second == [f"m{i}".encode() for i in range(10, 20)]  # no duplicate, nothing skipped


def test_update_creates_missing_remote_subscription() -> None:
    """``receiveSubscriptionUpdated``: a missing subscription is created (Earliest, replicated), then moved."""
    layer, (r1, r2) = make_clusters("r1", "r2")
    replicated_subscription(r1)
    r2.subscribe(TOPIC, "other", replicate_subscription_state=True).close()  # r2 needs a controller
    producer = r1.create_producer(TOPIC, producer_name="p")
    for i in range(3):
        producer.send(f"m{i}".encode())
    layer.advance(1000)
    drain(r1.subscribe(TOPIC, SUB, replicate_subscription_state=True))
    layer.run_until_idle()
    created = r2.subscription(TOPIC, SUB)
    assert created is not None and created.replicated
    assert created.mark_delete_position > r2.topic_log(TOPIC).earliest


def test_snapshots_stop_without_traffic_and_resume_with_it() -> None:
    """``testReplicationSnapshotStopWhenNoTraffic``: no new snapshot ids without data; r2 traffic restarts them."""
    layer, (r1, r2) = make_clusters("r1", "r2")
    replicated_subscription(r1)
    replicated_subscription(r2)
    layer.advance(5000)
    assert markers(r1, MarkerType.REPLICATED_SUBSCRIPTION_SNAPSHOT_REQUEST) == []  # nothing ever published
    r1.create_producer(TOPIC, producer_name="p").send(b"x")
    layer.advance(1500)
    taken = markers(r1, MarkerType.REPLICATED_SUBSCRIPTION_SNAPSHOT)
    assert len(taken) == 1
    layer.advance(10_000)
    assert markers(r1, MarkerType.REPLICATED_SUBSCRIPTION_SNAPSHOT) == taken
    r2.create_producer(TOPIC, producer_name="q").send(b"y")
    layer.advance(1000)
    assert len(markers(r1, MarkerType.REPLICATED_SUBSCRIPTION_SNAPSHOT)) == 2  # replicated data counts
    assert len(markers(r2, MarkerType.REPLICATED_SUBSCRIPTION_SNAPSHOT)) >= 1


def test_one_way_exactly_one_pending_snapshot_until_timeout() -> None:
    """``testReplicatedSubscriptionOneWay``: r2 has the feature off, so it never answers."""
    layer, (r1, r2) = make_clusters("r1", "r2", config={"r2": ReplicationConfig(enabled=False)})
    replicated_subscription(r1)
    replicated_subscription(r2)
    r1.create_producer(TOPIC, producer_name="p").send(b"x")
    layer.advance(10_000)
    controller = layer.controller("r1", TOPIC)
    assert controller is not None and len(controller.pending) == 1
    assert len(markers(r1, MarkerType.REPLICATED_SUBSCRIPTION_SNAPSHOT_REQUEST)) == 1
    assert layer.controller("r2", TOPIC) is None
    assert markers(r2, MarkerType.REPLICATED_SUBSCRIPTION_SNAPSHOT_RESPONSE) == []
    layer.advance(21_000)  # past the 30 s timeout: the request is sent a second time
    assert len(markers(r1, MarkerType.REPLICATED_SUBSCRIPTION_SNAPSHOT_REQUEST)) == 2
    assert len(controller.pending) == 1 and controller.snapshots_timed_out == 1


def test_one_way_before_23839_requests_every_tick() -> None:
    layer, (r1, _r2) = make_clusters("r1", "r2", version="3.0.9", config={"r2": ReplicationConfig(enabled=False)})
    replicated_subscription(r1)
    r1.create_producer(TOPIC, producer_name="p").send(b"x")
    layer.advance(9_500)
    assert len(markers(r1, MarkerType.REPLICATED_SUBSCRIPTION_SNAPSHOT_REQUEST)) == 10


def test_three_clusters_second_round() -> None:
    """More than two clusters: after every remote answered, the same request goes out again."""
    layer, (r1, r2, r3) = make_clusters("r1", "r2", "r3", delays_ms={("r2", "r1"): 20, ("r3", "r1"): 50})
    for broker in (r1, r2, r3):
        replicated_subscription(broker)
    r1.create_producer(TOPIC, producer_name="p").send(b"x")
    layer.run_until_idle()
    requests = markers(r1, MarkerType.REPLICATED_SUBSCRIPTION_SNAPSHOT_REQUEST)
    assert [e.marker_payload["snapshot_id"] for e in requests] == ["r1-1", "r1-1"]
    responses = [
        e for e in markers(r1, MarkerType.REPLICATED_SUBSCRIPTION_SNAPSHOT_RESPONSE) if e.metadata.replicated_from
    ]
    assert len(responses) == 4  # two rounds x two remotes
    (snapshot,) = [
        e for e in markers(r1, MarkerType.REPLICATED_SUBSCRIPTION_SNAPSHOT) if e.marker_payload["snapshot_id"] == "r1-1"
    ]
    first_requests = {
        name: markers(broker, MarkerType.REPLICATED_SUBSCRIPTION_SNAPSHOT_REQUEST)[0].position
        for name, broker in (("r2", r2), ("r3", r3))
    }
    clusters = {
        c["cluster"]: (c["message_id"]["ledger_id"], c["message_id"]["entry_id"])
        for c in snapshot.marker_payload["clusters"]
    }
    assert clusters == first_requests  # positions of the first round
    last_response = max(e.position for e in responses)
    local = snapshot.marker_payload["local_message_id"]
    assert (local["ledger_id"], local["entry_id"]) == last_response
    assert snapshot.metadata.replicate_to == ("r1",)
    assert layer.controller("r1", TOPIC).requests_written == 2


def test_down_cluster_pauses_replication_and_snapshots() -> None:
    layer, (r1, r2) = make_clusters("r1", "r2", delays_ms={("r1", "r2"): 100})
    replicated_subscription(r1)
    replicated_subscription(r2)
    producer = r1.create_producer(TOPIC, producer_name="p")
    producer.send(b"a")
    layer.advance(50)
    layer.set_down("r2")
    producer.send(b"b")
    layer.advance(5000)
    assert [e for e in r2.topic_log(TOPIC) if not e.is_marker] == []  # "a" was in flight: taken back
    assert markers(r1, MarkerType.REPLICATED_SUBSCRIPTION_SNAPSHOT) == []
    assert layer.replicator("r1", "r2", TOPIC).resend
    layer.set_down("r2", down=False)
    layer.advance(150)
    assert [e.messages[0].payload for e in r2.topic_log(TOPIC) if not e.is_marker] == [b"a", b"b"]
    layer.advance(2000)
    assert len(markers(r1, MarkerType.REPLICATED_SUBSCRIPTION_SNAPSHOT)) >= 1


def test_same_seed_same_history() -> None:
    def run() -> list:
        layer, (r1, r2) = make_clusters("r1", "r2", delays_ms={("r1", "r2"): 7, ("r2", "r1"): 13})
        replicated_subscription(r1)
        replicated_subscription(r2)
        producer = r1.create_producer(TOPIC, producer_name="p")
        consumer = r1.subscribe(TOPIC, SUB, replicate_subscription_state=True)
        for i in range(30):
            producer.send(f"m{i}".encode(), partition_key=f"k{i % 4}")
            if i % 3 == 0:
                drain(consumer, limit=2)
            layer.advance(170)
        layer.run_until_idle()
        return layer.events

    assert run() == run()
