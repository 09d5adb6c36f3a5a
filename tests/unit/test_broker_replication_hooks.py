"""The hooks the replicated-subscription layer builds on: markers, replicated entries, listeners, positions."""

from __future__ import annotations

from typing import Any

import pytest

from reference_model.broker import MARKER_PRODUCER_NAME, BrokerConfig, ModelBroker, SimClock
from reference_model.dedup import DedupConfig
from reference_model.errors import InvalidArgument
from reference_model.storage import Entry, MessageMetadata, Position, SingleMessage


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    def on_entry_added(self, topic: str, entry: Entry) -> None:
        self.events.append(("added", entry.position, entry.is_marker))

    def on_marker_read(self, topic: str, subscription: str, entry: Entry) -> None:
        self.events.append(("marker_read", subscription, entry.position))

    def on_mark_delete_advanced(self, topic: str, subscription: str, position: Position) -> None:
        self.events.append(("mark_delete", subscription, position))


def test_markers_take_entry_ids_count_in_backlog_until_read_and_are_never_delivered() -> None:
    broker = ModelBroker()
    recorder = Recorder()
    broker.add_listener(recorder)
    producer = broker.create_producer("t")
    sub = broker.subscribe("t", "s", receiver_queue_size=0)  # no permits: nothing is read yet
    producer.send(b"a")
    marker = broker.write_marker("t", 12, {"snapshot_id": "x"}, ["r1"])
    producer.send(b"b")
    assert marker == Position(0, 1)
    entry = broker.topic_log("t").get(marker)
    assert entry.metadata.producer_name == MARKER_PRODUCER_NAME and entry.metadata.marker_type == 12
    assert entry.metadata.replicate_to == ("r1",) and entry.marker_payload == {"snapshot_id": "x"}
    assert broker.topic_stats("t")["subscriptions"]["s"]["msgBacklog"] == 3
    got = [sub.receive(10), sub.receive(10)]
    assert [m.data() for m in got if m] == [b"a", b"b"]
    assert ("marker_read", "s", marker) in recorder.events
    assert broker.topic_stats("t")["subscriptions"]["s"]["msgBacklog"] == 2
    for m in got:
        sub.acknowledge(m)  # type: ignore[arg-type]
    assert recorder.events[-1] == ("mark_delete", "s", Position(0, 2))
    assert [e[0] for e in recorder.events[:3]] == ["added", "added", "added"]


def test_append_replicated_keeps_the_origin_and_dedups_by_the_original_producer() -> None:
    broker = ModelBroker(cluster="r2", config=BrokerConfig(dedup=DedupConfig(broker_enabled=True)))
    consumer = broker.subscribe("t", "s")
    md = MessageMetadata("p1", 7, partition_key="k")
    msgs = (SingleMessage(b"v", 7, partition_key="k"),)
    first = broker.append_replicated("t", md, msgs, replicated_from="r1")
    again = broker.append_replicated("t", md, msgs, replicated_from="r1")
    assert first == Position(0, 0) and again == Position(-1, -1)
    entry = broker.topic_log("t").get(first)
    assert entry.metadata.replicated_from == "r1" and entry.sticky_key == b"k"
    m = consumer.receive(0)
    assert m is not None and m.producer_name() == "p1" and m.message_id().ledger_id() == 0


def test_acknowledge_cumulative_to_moves_or_creates_a_replicated_subscription() -> None:
    broker = ModelBroker()
    recorder = Recorder()
    broker.add_listener(recorder)
    producer = broker.create_producer("t")
    for i in range(5):
        producer.send(f"{i}".encode())
    assert broker.subscription("t", "remote") is None
    assert broker.acknowledge_cumulative_to("t", "remote", (0, 2)) is True
    sub = broker.subscription("t", "remote")
    assert sub is not None and sub.replicated and sub.mark_delete_position == Position(0, 2)
    assert ("mark_delete", "remote", Position(0, 2)) in recorder.events
    assert broker.acknowledge_cumulative_to("t", "remote", (0, 1)) is False
    assert broker.acknowledge_cumulative_to("t", "missing", (0, 1), create_if_missing=False) is False
    consumer = broker.subscribe("t", "remote", replicate_subscription_state=True)
    assert [consumer.receive(0).data() for _ in range(2)] == [b"3", b"4"]  # type: ignore[union-attr]


def test_acknowledge_cumulative_to_drops_pending_and_replayed_entries_below_it() -> None:
    broker = ModelBroker()
    producer = broker.create_producer("t")
    consumer = broker.subscribe("t", "s", replicate_subscription_state=True)
    for i in range(4):
        producer.send(f"{i}".encode(), partition_key="k")
    server = consumer.server
    assert server is not None and len(server.pending) == 4
    broker.acknowledge_cumulative_to("t", "s", (0, 1))
    assert [p for p, _, _ in server.pending] == [Position(0, 2), Position(0, 3)]
    assert broker.topic_stats("t")["subscriptions"]["s"]["unackedMessages"] == 2


def test_several_brokers_share_one_clock() -> None:
    clock = SimClock()
    east = ModelBroker(cluster="east", clock=clock)
    west = ModelBroker(cluster="west", clock=clock)
    east.advance(5)
    assert west.clock.now_ms() == 5
    assert broker_log_is_separate(east, west)


def broker_log_is_separate(a: ModelBroker, b: ModelBroker) -> bool:
    a.create_producer("t").send(b"x")
    return len(a.topic_log("t")) == 1 and len(b.topic_log("t")) == 0


def test_append_replicated_keeps_a_markers_payload_and_metadata() -> None:
    """A replicated REQUEST / RESPONSE / UPDATE is useless without its payload; the marker keeps its metadata
    with ``replicated_from`` set (``GeoPersistentReplicator`` sends what it read) and is never deduplicated."""
    source = ModelBroker(cluster="r1")
    written = source.write_marker("t", 10, {"snapshot_id": "r1-0", "source_cluster": "r1"}, None)
    marker = source.topic_log("t").get(written)
    remote = ModelBroker(cluster="r2", config=BrokerConfig(dedup=DedupConfig(broker_enabled=True)))
    consumer = remote.subscribe("t", "s")
    recorder = Recorder()
    remote.add_listener(recorder)
    payload = dict(marker.marker_payload or {})
    first = remote.append_replicated("t", marker.metadata, marker.messages, "r1", marker_payload=payload)
    again = remote.append_replicated("t", marker.metadata, marker.messages, "r1", marker_payload=payload)
    assert (first, again) == (Position(0, 0), Position(0, 1))  # markers are not deduplicated
    copied = remote.topic_log("t").get(first)
    assert copied.marker_payload == {"snapshot_id": "r1-0", "source_cluster": "r1"}
    assert copied.metadata.replicated_from == "r1" and copied.metadata.marker_type == 10
    assert copied.metadata.publish_time_ns == marker.metadata.publish_time_ns
    assert ("added", first, True) in recorder.events and ("marker_read", "s", first) in recorder.events
    assert consumer.receive(0) is None  # never delivered
    bare = remote.append_replicated("t", marker.metadata, (), "r1")
    assert remote.topic_log("t").get(bare).marker_payload == {}  # without a payload: an empty one


def test_append_replicated_refuses_what_it_cannot_append() -> None:
    broker = ModelBroker()
    md = MessageMetadata("p1", 1, marker_type=10)
    with pytest.raises(InvalidArgument, match="replicated_from"):
        broker.append_replicated("t", md, (), "")
    with pytest.raises(InvalidArgument, match="marker_payload"):
        broker.append_replicated("t", md, (), "r1", marker_payload=["not", "a", "mapping"])  # type: ignore[arg-type]


def test_subscriptions_lists_a_topics_subscriptions_in_creation_order_without_creating_the_topic() -> None:
    broker = ModelBroker()
    assert broker.subscriptions("t") == [] and broker.topics() == []
    broker.subscribe("t", "b")
    broker.subscribe("t", "a")
    broker.acknowledge_cumulative_to("persistent://public/default/t", "remote", (0, -1))
    assert broker.subscriptions("t") == ["b", "a", "remote"]
    assert broker.subscriptions("persistent://public/default/t") == ["b", "a", "remote"]
    assert broker.subscriptions("other") == [] and broker.topics() == ["persistent://public/default/t"]
