"""Topic stats under Apache Pulsar's JSON names, per implementation."""

from __future__ import annotations

from reference_model.broker import KeySharedPolicy, ModelBroker


def _setup(implementation: str, version: str = "4.0") -> ModelBroker:
    broker = ModelBroker(pulsar_version=version, implementation=implementation)
    producer = broker.create_producer("t", producer_name="p")
    broker.subscribe("t", "s", consumer_name="c1")
    for i in range(20):
        producer.send(f"{i}".encode(), partition_key=f"k{i}")
    broker.subscribe("t", "s", consumer_name="c2")
    for i in range(20):
        producer.send(f"{i}".encode(), partition_key=f"k{i}")
    return broker


def test_pip379_stats_carry_draining_hashes_and_range_arrays() -> None:
    stats = _setup("pip379").topic_stats("t")
    assert stats["publishers"] == [{"producerName": "p", "producerId": 0, "msgRateIn": 0.0, "msgThroughputIn": 0.0}]
    assert stats["msgInCounter"] == 40 and stats["deduplicationStatus"] == "Disabled"
    sub = stats["subscriptions"]["s"]
    assert sub["type"] == "Key_Shared" and sub["keySharedMode"] == "AUTO_SPLIT"
    assert sub["allowOutOfOrderDelivery"] is False and sub["isDurable"] is True
    assert sub["msgBacklog"] == 40 and sub["unackedMessages"] == sum(c["unackedMessages"] for c in sub["consumers"])
    c1, c2 = sub["consumers"]
    assert c1["drainingHashesCount"] > 0 and c1["drainingHashesUnackedMessages"] >= c1["drainingHashesCount"]
    assert sub["drainingHashesCount"] == c1["drainingHashesCount"] + c2["drainingHashesCount"]
    assert sub["msgInReplay"] > 0
    assert all(h["blockedAttempts"] > 0 for h in c1["drainingHashes"])
    assert all(isinstance(r, list) and len(r) == 2 for r in c1["keyHashRangeArrays"])
    assert "keyHashRanges" not in c1 and "readPositionWhenJoining" not in c1
    covered = sorted(tuple(r) for c in (c1, c2) for r in c["keyHashRangeArrays"])
    assert covered[0][0] == 1 and covered[-1][1] == 65535
    assert sum(e - s + 1 for s, e in covered) == 65535


def test_classic_stats_carry_join_positions_and_range_strings() -> None:
    stats = _setup("classic", "3.3").topic_stats("t")
    sub = stats["subscriptions"]["s"]
    c1, c2 = sub["consumers"]
    assert c2["readPositionWhenJoining"] == "0:20"
    assert sub["consumersAfterMarkDeletePosition"] == {"c2": "0:20"}
    assert all(r.startswith("[") and ", " in r for r in c1["keyHashRanges"])
    assert "keyHashRangeArrays" not in c1 and "drainingHashes" not in c1


def test_sticky_subscription_stats() -> None:
    broker = ModelBroker()
    broker.subscribe("t", "s", key_shared_policy=KeySharedPolicy(mode="STICKY", sticky_ranges=[(0, 99), (200, 299)]))
    sub = broker.topic_stats("t")["subscriptions"]["s"]
    assert sub["keySharedMode"] == "STICKY"
    assert sub["consumers"][0]["keyHashRangeArrays"] == [[0, 99], [200, 299]]
    assert sub["consumers"][0]["drainingHashesCount"] == 0


def test_internal_stats_show_cursor_positions_and_ack_holes() -> None:
    broker = ModelBroker()
    consumer = broker.subscribe("t", "s")
    producer = broker.create_producer("t")
    for i in range(5):
        producer.send(f"{i}".encode())
    msgs = [consumer.receive(0) for _ in range(5)]
    consumer.acknowledge(msgs[1])  # type: ignore[arg-type]
    consumer.acknowledge(msgs[2])  # type: ignore[arg-type]
    cursor = broker.topic_internal_stats("t")["cursors"]["s"]
    assert cursor["markDeletePosition"] == "0:-1"
    assert cursor["readPosition"] == "0:5"
    assert cursor["individuallyDeletedMessages"] == "[(0:0..0:2]]"
    assert broker.topic_stats("t")["subscriptions"]["s"]["nonContiguousDeletedMessagesRanges"] == 1
