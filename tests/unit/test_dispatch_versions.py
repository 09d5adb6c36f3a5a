"""Dispatch rules pinned against Apache Pulsar's source per release (issue 12, part 2)."""

from __future__ import annotations

import pytest

from reference_model.broker import ModelBroker

TOPIC, SUB = "persistent://public/default/versions", "sub"


@pytest.mark.parametrize(
    ("version", "implementation", "redelivered"), [("2.10", "classic", 1), ("3.0", "classic", 1), ("4.0", "pip379", 1)]
)
def test_consumer_removal_does_not_bump_the_redelivery_count(
    version: str, implementation: str, redelivered: int
) -> None:
    """The last consumer's removal clears the tracker; a "redeliver all" raises the count from 2.11 on
    (``incrementAndGetRedeliveryCount``, apache/pulsar#17060), and before it tracks the pending positions
    (``Consumer.redeliverUnacknowledgedMessages`` sends the positions form when the consumer has pending acks, as
    every Key_Shared consumer does; the dispatcher's ``addIfAbsent``), so the next send raises it to 1 too."""
    broker = ModelBroker(pulsar_version=version, implementation=implementation)
    producer = broker.create_producer(TOPIC)
    c1 = broker.subscribe(TOPIC, SUB, consumer_name="c1")
    producer.send(b"m", partition_key="k")
    first = c1.receive(timeout_millis=100)
    assert first is not None and first.redelivery_count() == 0
    c1.close()
    c2 = broker.subscribe(TOPIC, SUB, consumer_name="c2", negative_ack_redelivery_delay_ms=100)
    again = c2.receive(timeout_millis=100)
    assert again is not None and again.message_id() == first.message_id()
    assert again.redelivery_count() == 0
    c2.redeliver_unacknowledged_messages()
    third = c2.receive(timeout_millis=100)
    assert third is not None and third.redelivery_count() == redelivered
    c2.negative_acknowledge(third)
    fourth = c2.receive(timeout_millis=5_000)
    assert fourth is not None and fourth.redelivery_count() == redelivered + 1  # a nack raises it on every line


@pytest.mark.parametrize(
    ("version", "implementation", "counted"),
    [("2.10", "classic", 1), ("3.0", "classic", 0), ("3.3", "classic", 0), ("4.0", "pip379", 0), ("4.0", "classic", 0)],
)
def test_a_close_or_crash_with_others_left_raises_the_count_only_before_2_11(
    version: str, implementation: str, counted: int
) -> None:
    """``removeConsumer`` with consumers left: ``addIfAbsent`` and a raise at the next send before 2.11, no tracker
    call from 3.0 on (2.x ``PulsarCommandSenderImpl``; 3.0+ ``PersistentDispatcherMultipleConsumers``)."""
    for leave in ("close", "crash"):
        broker = ModelBroker(pulsar_version=version, implementation=implementation)
        topic = f"{TOPIC}-{leave}"
        producer = broker.create_producer(topic)
        c1 = broker.subscribe(topic, SUB, consumer_name="c1")
        c2 = broker.subscribe(topic, SUB, consumer_name="c2")
        for n in range(20):
            producer.send(b"m", partition_key=f"k{n}")
        held = c1.receive(timeout_millis=100)
        assert held is not None and held.redelivery_count() == 0
        c1.close() if leave == "close" else c1.crash()
        counts = {}
        while (m := c2.receive(timeout_millis=600_000)) is not None:
            counts[m.partition_key()] = m.redelivery_count()
            c2.acknowledge(m)
        assert counts[held.partition_key()] == counted, leave


@pytest.mark.parametrize("version", ["2.10", "3.0", "4.0"])
def test_classic_records_a_joiner_behind_a_single_unacknowledged_entry(version: str) -> None:
    """``getNumberOfEntriesSinceFirstNotAckedMessage`` counts ``(markDelete, readPosition]`` by entry-id arithmetic
    (``ManagedLedgerImpl.getNumberOfEntries``): one unacknowledged entry read gives 2, so the joiner is recorded
    (``> 1``) and cannot take the key's next message while the first is held (found by generated/model-programs)."""
    broker = ModelBroker(pulsar_version=version, implementation="classic")
    producer = broker.create_producer(TOPIC)
    c1 = broker.subscribe(TOPIC, SUB, consumer_name="c1")
    producer.send(b"0", partition_key="k")
    held = c1.receive(timeout_millis=100)
    assert held is not None
    broker.subscribe(TOPIC, SUB, consumer_name="c2")
    stats = broker.topic_stats(TOPIC)["subscriptions"][SUB]
    assert set(stats["consumersAfterMarkDeletePosition"]) == {"c2"}
