"""Consumers of the model broker: receiver queue and flow, acks, negative acks, redelivery, close and crash."""

from __future__ import annotations

import pytest

from reference_model.broker import (
    AlreadyClosed,
    BrokerConfig,
    ConsumerBusy,
    CumulativeAcknowledgementNotAllowedError,
    KeySharedPolicy,
    ModelBroker,
    ModelConsumer,
    NotAllowedError,
)
from reference_model.keyshared import DispatchConsumer


def _server(consumer: ModelConsumer) -> DispatchConsumer:
    assert consumer.server is not None
    return consumer.server


def test_the_receiver_queue_prefetches_up_to_its_size_and_flow_refills_at_half() -> None:
    broker = ModelBroker()
    producer = broker.create_producer("t")
    consumer = broker.subscribe("t", "s", receiver_queue_size=4)
    for i in range(10):
        producer.send(f"{i}".encode(), partition_key="k")
    assert consumer.num_prefetched() == 4 and _server(consumer).permits == 0
    consumer.receive(0)
    assert consumer.num_prefetched() == 3  # one taken, not yet flowed back (threshold is 4 // 2)
    consumer.receive(0)
    assert consumer.num_prefetched() == 4  # two taken: Flow(2), two more prefetched
    received = [consumer.receive(0) for _ in range(8)]
    assert [m.data() for m in received if m is not None] == [f"{i}".encode() for i in range(2, 10)]


def test_receive_times_out_on_the_simulated_clock() -> None:
    broker = ModelBroker()
    consumer = broker.subscribe("t", "s")
    assert consumer.receive(250) is None
    assert broker.clock.now_ms() == 250
    assert consumer.receive() is None  # nothing scheduled: returns instead of blocking forever


def test_a_batch_is_acknowledged_to_the_broker_when_all_its_messages_are() -> None:
    broker = ModelBroker()
    producer = broker.create_producer("t", batching_enabled=True)
    consumer = broker.subscribe("t", "s")
    for i in range(3):
        producer.send_async(f"{i}".encode(), lambda r, m: None, partition_key="k")
    producer.flush()
    msgs = [consumer.receive(0) for _ in range(3)]
    assert [m.message_id().batch_index() for m in msgs if m] == [0, 1, 2]
    consumer.acknowledge(msgs[0])  # type: ignore[arg-type]
    consumer.acknowledge(msgs[2])  # type: ignore[arg-type]
    assert len(_server(consumer).pending) == 1
    consumer.acknowledge(msgs[1])  # type: ignore[arg-type]
    assert len(_server(consumer).pending) == 0
    assert broker.topic_stats("t")["subscriptions"]["s"]["msgBacklog"] == 0


def test_negative_ack_redelivers_after_the_configured_delay_with_a_redelivery_count() -> None:
    broker = ModelBroker()
    producer = broker.create_producer("t")
    consumer = broker.subscribe("t", "s", negative_ack_redelivery_delay_ms=500)
    producer.send(b"x", partition_key="k")
    msg = consumer.receive(0)
    assert msg is not None and msg.redelivery_count() == 0
    consumer.negative_acknowledge(msg)
    assert consumer.receive(499) is None
    again = consumer.receive(1)
    assert again is not None and again.data() == b"x" and again.redelivery_count() == 1
    assert broker.clock.now_ms() == 500


def test_redeliver_unacknowledged_keeps_the_queue_so_prefetched_copies_arrive_twice() -> None:
    broker = ModelBroker()
    producer = broker.create_producer("t")
    consumer = broker.subscribe("t", "s")
    for i in range(3):
        producer.send(f"{i}".encode(), partition_key="k")
    first = consumer.receive(0)
    assert first is not None
    consumer.redeliver_unacknowledged_messages()
    data = []
    while (m := consumer.receive(0)) is not None:
        data.append((m.data(), m.redelivery_count()))
    assert data == [(b"1", 0), (b"2", 0), (b"0", 1), (b"1", 1), (b"2", 1)]


def test_cumulative_ack_is_refused_on_key_shared() -> None:
    broker = ModelBroker()
    consumer = broker.subscribe("t", "s")
    broker.create_producer("t").send(b"x")
    msg = consumer.receive(0)
    assert msg is not None
    with pytest.raises(CumulativeAcknowledgementNotAllowedError, match="not allowed on a Key_Shared"):
        consumer.acknowledge_cumulative(msg)


def test_close_hands_pending_messages_to_the_other_consumers_at_once() -> None:
    broker = ModelBroker()
    producer = broker.create_producer("t")
    c1 = broker.subscribe("t", "s", consumer_name="c1")
    for i in range(20):
        producer.send(f"{i}".encode(), partition_key=f"k{i}")
    c2 = broker.subscribe("t", "s", consumer_name="c2")
    before = c1.num_prefetched()
    assert before == 20
    c1.close()
    assert c2.num_prefetched() == 20
    assert all(m.redelivery_count() == 0 for m in c2.prefetched())  # a close does not count (3.0+)
    with pytest.raises(AlreadyClosed):
        c1.receive(0)


def test_a_crash_is_noticed_after_the_detection_delay_and_messages_sent_meanwhile_are_redelivered() -> None:
    broker = ModelBroker(config=BrokerConfig(crash_detection_delay_ms=1000))
    producer = broker.create_producer("t")
    c1 = broker.subscribe("t", "s", consumer_name="c1")
    c2 = broker.subscribe("t", "s", consumer_name="c2")
    c1.crash()
    for i in range(30):
        producer.send(f"{i}".encode(), partition_key=f"k{i}")
    c1_keys = [
        m
        for m in range(30)
        if broker.subscription("t", "s").dispatcher.select(  # type: ignore[union-attr]
            broker.subscription("t", "s").dispatcher.selector.slot_of(f"k{m}".encode())  # type: ignore[union-attr]
        )
        is _server(c1)
    ]
    assert c1_keys, "some keys are c1's"
    assert c2.num_prefetched() == 30 - len(c1_keys)  # the broker still sends c1's keys to c1
    broker.advance(999)
    assert c2.num_prefetched() == 30 - len(c1_keys)
    broker.advance(1)
    assert c2.num_prefetched() == 30
    assert broker.topic_stats("t")["subscriptions"]["s"]["consumers"][0]["consumerName"] == "c2"


def test_a_different_policy_is_refused_while_consumers_are_connected_and_accepted_after() -> None:
    broker = ModelBroker()
    c1 = broker.subscribe("t", "s")
    with pytest.raises(ConsumerBusy, match="Subscription is of different type"):
        broker.subscribe("t", "s", key_shared_policy=KeySharedPolicy(allow_out_of_order_delivery=True))
    with pytest.raises(ConsumerBusy):
        broker.subscribe("t", "s", key_shared_policy=KeySharedPolicy(mode="STICKY", sticky_ranges=[(0, 10)]))
    c1.close()
    c2 = broker.subscribe("t", "s", key_shared_policy=KeySharedPolicy(allow_out_of_order_delivery=True))
    assert broker.topic_stats("t")["subscriptions"]["s"]["allowOutOfOrderDelivery"] is True
    del c2


def test_key_shared_disabled_by_subscription_types_enabled() -> None:
    broker = ModelBroker(config=BrokerConfig(subscription_types_enabled=("Shared", "Exclusive")))
    with pytest.raises(NotAllowedError, match="not enabled"):
        broker.subscribe("t", "s")


def test_generated_consumer_names_come_from_the_seed() -> None:
    names = [ModelBroker(seed=7).subscribe("t", "s").consumer_name() for _ in range(2)]
    assert names[0] == names[1] and len(names[0]) == 5
    assert ModelBroker(seed=8).subscribe("t", "s").consumer_name() != names[0]


def test_zero_receiver_queue_asks_for_one_message_per_receive() -> None:
    broker = ModelBroker()
    producer = broker.create_producer("t")
    consumer = broker.subscribe("t", "s", receiver_queue_size=0)
    for i in range(3):
        producer.send(f"{i}".encode())
    assert consumer.num_prefetched() == 0
    got = [consumer.receive(10) for _ in range(3)]
    assert [m.data() for m in got if m] == [b"0", b"1", b"2"]
