"""The model's non-persistent Key_Shared dispatcher against Pulsar's own unit tests of it.

``NonPersistentStickyKeyDispatcherMultipleConsumersTest``: ``testSendMessage`` (an entry goes to the consumer the
selector picks) and ``testSendMessageRespectFlowControl`` (a consumer without permits gets nothing, and its
entries go to no other consumer); plus what a non-persistent topic never does (redeliver after a nack or a close).
"""

from __future__ import annotations

import pytest

from reference_model.broker import ModelBroker
from reference_model.keyshared import NonPersistentDispatcher

TOPIC = "non-persistent://public/default/np"


def _drain(consumer: object) -> list[str]:
    keys = []
    while (message := consumer.receive(timeout_millis=0)) is not None:  # type: ignore[attr-defined]
        keys.append(message.partition_key())
        consumer.acknowledge(message)  # type: ignore[attr-defined]
    return keys


@pytest.mark.parametrize("version", ["3.0", "4.0", "4.2"])
def test_send_message_goes_to_the_selected_consumer(version: str) -> None:
    broker = ModelBroker(version)
    c1 = broker.subscribe(TOPIC, "s", consumer_name="c1")
    c2 = broker.subscribe(TOPIC, "s", consumer_name="c2")
    producer = broker.create_producer(TOPIC, producer_name="p")
    for i in range(60):
        producer.send(b"x", partition_key=f"k{i % 12}")
    broker.run_until_idle()
    got1, got2 = _drain(c1), _drain(c2)
    assert len(got1) + len(got2) == 60
    assert not set(got1) & set(got2)
    sub = broker.subscription(TOPIC, "s")
    assert sub is not None and isinstance(sub.dispatcher, NonPersistentDispatcher)


def test_a_consumer_without_permits_gets_nothing_and_nobody_else_gets_its_keys() -> None:
    broker = ModelBroker("4.0")
    c1 = broker.subscribe(TOPIC, "s", consumer_name="c1", receiver_queue_size=5)
    c2 = broker.subscribe(TOPIC, "s", consumer_name="c2", receiver_queue_size=1000)
    producer = broker.create_producer(TOPIC, producer_name="p")
    for i in range(100):
        producer.send(b"x", partition_key=f"k{i % 10}")
    broker.run_until_idle()
    got1, got2 = _drain(c1), _drain(c2)
    assert len(got1) == 5  # its permits, then every later entry of its keys is dropped
    assert not set(got1) & set(got2)
    sub = broker.subscription(TOPIC, "s")
    assert sub is not None and isinstance(sub.dispatcher, NonPersistentDispatcher)
    assert sub.dispatcher.dropped_no_permits == 100 - 5 - len(got2)


def test_nothing_is_redelivered_after_a_nack_or_a_close() -> None:
    broker = ModelBroker("4.0")
    c1 = broker.subscribe(TOPIC, "s", consumer_name="c1", negative_ack_redelivery_delay_ms=10)
    producer = broker.create_producer(TOPIC, producer_name="p")
    for i in range(10):
        producer.send(b"x", partition_key=f"k{i}")
    broker.run_until_idle()
    first = c1.receive(timeout_millis=0)
    assert first is not None
    c1.negative_acknowledge(first)
    held = [m for m in iter(lambda: c1.receive(timeout_millis=0), None)]
    assert len(held) == 9
    c2 = broker.subscribe(TOPIC, "s", consumer_name="c2")
    c1.close()
    broker.run_until_idle()
    assert c2.receive(timeout_millis=0) is None  # c1's unacknowledged messages are gone with it


def test_no_consumer_means_the_message_is_dropped() -> None:
    broker = ModelBroker("4.0")
    producer = broker.create_producer(TOPIC, producer_name="p")
    c1 = broker.subscribe(TOPIC, "s", consumer_name="c1")
    c1.close()
    producer.send(b"lost", partition_key="k")
    c2 = broker.subscribe(TOPIC, "s", consumer_name="c2")
    producer.send(b"kept", partition_key="k")
    broker.run_until_idle()
    message = c2.receive(timeout_millis=0)
    assert message is not None and message.data() == b"kept"
    assert c2.receive(timeout_millis=0) is None
