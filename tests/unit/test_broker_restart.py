"""Broker restart: what survives (log, cursors, dedup) and what does not (dispatch state, receiver queues)."""

from __future__ import annotations

from reference_model.broker import BrokerConfig, ModelBroker


def test_unacknowledged_messages_come_back_and_acknowledged_ones_do_not() -> None:
    broker = ModelBroker()
    producer = broker.create_producer("t")
    consumer = broker.subscribe("t", "s", consumer_name="c1")
    for i in range(6):
        producer.send(f"{i}".encode(), partition_key=f"k{i}")
    msgs = [consumer.receive(0) for _ in range(6)]
    for m in msgs:
        assert m is not None
    consumer.acknowledge(msgs[0])  # type: ignore[arg-type]
    consumer.acknowledge(msgs[3])  # type: ignore[arg-type]  # a hole above mark-delete
    broker.restart()
    assert consumer.is_connected()
    again = []
    while (m := consumer.receive(0)) is not None:
        again.append((m.data(), m.redelivery_count()))
    assert again == [(b"1", 0), (b"2", 0), (b"4", 0), (b"5", 0)]
    # the topic continues in a new ledger
    new_id = producer.send(b"6", partition_key="k6")
    assert new_id.ledger_id() == msgs[0].message_id().ledger_id() + 1  # type: ignore[union-attr]
    stats = broker.topic_internal_stats("t")
    assert [ledger["ledgerId"] for ledger in stats["ledgers"]] == [0, 1]
    assert stats["cursors"]["s"]["markDeletePosition"] == "0:0"


def test_prefetched_messages_are_dropped_and_everything_is_delivered_again_in_key_order() -> None:
    """Receiver queues are lost; clients reconnect one by one in their original order, so the first to come
    back gets whatever its permits allow, and the keys that move to the next one drain first (PIP-379)."""
    broker = ModelBroker()
    producer = broker.create_producer("t")
    c1 = broker.subscribe("t", "s", consumer_name="c1", receiver_queue_size=5)
    c2 = broker.subscribe("t", "s", consumer_name="c2", receiver_queue_size=5)
    for i in range(8):
        producer.send(f"{i}".encode(), partition_key=f"k{i % 3}")
    assert c1.num_prefetched() + c2.num_prefetched() == 8
    broker.restart()
    assert (c1.num_prefetched(), c2.num_prefetched()) == (5, 0)
    seen: dict[str, list[int]] = {}
    for _ in range(20):
        for c in (c1, c2):
            m = c.receive(20)
            if m is not None:
                seen.setdefault(m.partition_key(), []).append(int(m.data()))
                c.acknowledge(m)
    assert seen == {"k0": [0, 3, 6], "k1": [1, 4, 7], "k2": [2, 5]}


def test_crashed_consumers_vanish_and_closed_ones_stay_closed() -> None:
    broker = ModelBroker(config=BrokerConfig(crash_detection_delay_ms=60_000))
    producer = broker.create_producer("t")
    c1 = broker.subscribe("t", "s", consumer_name="c1")
    c2 = broker.subscribe("t", "s", consumer_name="c2")
    c3 = broker.subscribe("t", "s", consumer_name="c3")
    c1.crash()
    c2.close()
    broker.restart()
    names = [c["consumerName"] for c in broker.topic_stats("t")["subscriptions"]["s"]["consumers"]]
    assert names == ["c3"]
    for i in range(5):
        producer.send(f"{i}".encode(), partition_key=f"k{i}")
    assert c3.num_prefetched() == 5
    broker.advance(60_000)  # the old crash-detection timer is void after the restart
    assert names == ["c3"]
