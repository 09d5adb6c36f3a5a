"""Dispatch rules pinned against Apache Pulsar's source per release (issue 12, part 2)."""

from __future__ import annotations

import pytest

from reference_model.broker import ModelBroker

TOPIC, SUB = "persistent://public/default/versions", "sub"


@pytest.mark.parametrize(("version", "implementation"), [("2.10", "classic"), ("3.0", "classic"), ("4.0", "pip379")])
def test_consumer_removal_does_not_bump_the_redelivery_count(version: str, implementation: str) -> None:
    """``PersistentDispatcherMultipleConsumers.removeConsumer``: pending entries go back to replay with
    ``redeliveryTracker.addIfAbsent`` (2.10 - 3.x) or no tracker call (4.x); only a redelivery request counts."""
    broker = ModelBroker(pulsar_version=version, implementation=implementation)
    producer = broker.create_producer(TOPIC)
    c1 = broker.subscribe(TOPIC, SUB, consumer_name="c1")
    producer.send(b"m", partition_key="k")
    first = c1.receive(timeout_millis=100)
    assert first is not None and first.redelivery_count() == 0
    c1.close()
    c2 = broker.subscribe(TOPIC, SUB, consumer_name="c2")
    again = c2.receive(timeout_millis=100)
    assert again is not None and again.message_id() == first.message_id()
    assert again.redelivery_count() == 0
    c2.redeliver_unacknowledged_messages()
    third = c2.receive(timeout_millis=100)
    assert third is not None and third.redelivery_count() == 1


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
