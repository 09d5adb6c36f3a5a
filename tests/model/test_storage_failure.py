"""Storage that fails for a while (``ModelBroker.storage_down`` / ``storage_up``), with deduplication on.

``ClientDeduplicationFailureTest.testClientDeduplicationWithBkFailure`` and
``MessageDuplicationTest.testIsDuplicateWithFailure`` through the model broker and its producer, at every release
line (the fencing and ``resetHighestSequenceIdPushed`` logic is the same from 2.10 to 4.0).
"""

from __future__ import annotations

from typing import Any

import pytest

from reference_model.broker import BrokerPersistenceError, ModelBroker, SendTimeout
from reference_model.errors import InvalidArgument

TOPIC = "persistent://public/default/storage"
VERSIONS = ("2.10", "3.0", "3.3", "4.0")


def _broker(version: str) -> ModelBroker:
    broker = ModelBroker(version)
    broker.set_namespace_deduplication(True)
    return broker


def _stored(broker: ModelBroker) -> list[int]:
    return [m.sequence_id for e in broker.topic_log(TOPIC) if not e.is_marker for m in e.messages]


def _received(broker: ModelBroker, subscription: str) -> list[int]:
    consumer = broker.subscribe(TOPIC, subscription, initial_position="Earliest")
    out = []
    while (msg := consumer.receive(50)) is not None:
        out.append(msg.sequence_id())
        consumer.acknowledge(msg)
    consumer.close()
    return out


@pytest.mark.parametrize("version", VERSIONS)
def test_client_deduplication_with_bk_failure(version: str) -> None:
    """``testClientDeduplicationWithBkFailure``: sends fail while the storage is down, so do resends; after it
    is back, the subscription sees exactly the messages whose send succeeded."""
    broker = _broker(version)
    sub = broker.subscribe(TOPIC, "sub1", initial_position="Earliest")
    producer = broker.create_producer(TOPIC, producer_name="test-producer-1")
    for seq in range(1, 10):  # the Python client ignores sequence_id=0, so the test's ids 0..29 become 1..29
        producer.send(b"foo", sequence_id=seq)
    broker.storage_down(fail_after_ms=100)
    results: list[str] = []
    for seq in range(10, 20):
        producer.send_async(b"foo", lambda result, _mid: results.append(result), sequence_id=seq)
    broker.run_until_idle()
    assert results == ["BrokerPersistenceError"] * 10
    for _ in range(2):
        with pytest.raises(BrokerPersistenceError, match="ledger write failed"):
            producer.send(b"foo-10", sequence_id=10)
    broker.storage_up()
    for seq in range(20, 30):
        producer.send(b"foo", sequence_id=seq)
    expected = list(range(1, 10)) + list(range(20, 30))
    assert _stored(broker) == expected
    got = []
    while (msg := sub.receive(50)) is not None:
        got.append(msg.sequence_id())
    assert got == expected
    assert _received(broker, "sub2") == expected


@pytest.mark.parametrize("version", VERSIONS)
def test_failed_write_resets_pushed_to_persisted(version: str) -> None:
    """``testIsDuplicateWithFailure``: after a failed write pushed == persisted, for every producer, so the failed
    id is written when resent; a stored id is still a duplicate; a new id is written."""
    broker = _broker(version)
    p1 = broker.create_producer(TOPIC, producer_name="producer1")
    p2 = broker.create_producer(TOPIC, producer_name="producer2")
    for seq in (1, 5, 6):
        p1.send(b"x", sequence_id=seq)
    p2.send(b"x", sequence_id=1)
    broker.storage_down(fail_after_ms=0)
    with pytest.raises(BrokerPersistenceError):
        p1.send(b"x", sequence_id=7)
    stats = broker.dedup_stats(TOPIC)
    assert stats["highestSequencedPushed"] == {"producer1": 6, "producer2": 1}
    assert stats["highestSequencedPersisted"] == {"producer1": 6, "producer2": 1}
    broker.storage_up()
    assert p1.send(b"x", sequence_id=6).entry_id() == -1  # a stored id: -1:-1, nothing written
    assert p1.send(b"x", sequence_id=7).entry_id() >= 0  # the failed id: written now, once
    assert p1.send(b"x", sequence_id=8).entry_id() >= 0
    assert _stored(broker) == [1, 5, 6, 1, 7, 8]
    assert broker.dedup_stats(TOPIC)["highestSequencedPersisted"]["producer1"] == 8


@pytest.mark.parametrize("version", VERSIONS)
def test_resend_while_in_flight_gets_an_error_then_first_write_completes(version: str) -> None:
    """``testIsDuplicateWithFailure`` (in flight): a resend of an id whose write has not completed is refused
    with ``PersistenceError``, not ``-1:-1`` and not a second write; the first write completes when the storage
    is back."""
    broker = _broker(version)
    producer = broker.create_producer(TOPIC, producer_name="p1", send_timeout_millis=500)
    producer.send(b"x", sequence_id=1)
    broker.storage_down(fail_after_ms=5_000)
    with pytest.raises(SendTimeout):
        producer.send(b"x", sequence_id=2)
    with pytest.raises(BrokerPersistenceError, match="Cannot determine whether the message is a duplicate"):
        producer.send(b"x", sequence_id=2)
    assert broker.dedup_stats(TOPIC)["highestSequencedPushed"] == {"p1": 2}
    assert broker.dedup_stats(TOPIC)["highestSequencedPersisted"] == {"p1": 1}
    broker.storage_up()
    assert _stored(broker) == [1, 2]
    assert producer.send(b"x", sequence_id=2).entry_id() == -1
    assert _stored(broker) == [1, 2]


def test_in_flight_writes_fail_together_and_the_topic_takes_writes_again() -> None:
    """Every write in flight fails when the first one's time is up; the next one starts a new wait."""
    broker = _broker("4.0")
    producer = broker.create_producer(TOPIC, producer_name="p1")
    outcomes: list[tuple[int, str]] = []
    broker.storage_down(fail_after_ms=300)

    def record(seq: int) -> Any:
        return lambda result, _mid: outcomes.append((seq, result))

    producer.send_async(b"x", record(1), sequence_id=1)
    broker.advance(200)
    producer.send_async(b"x", record(2), sequence_id=2)
    broker.advance(100)
    assert outcomes == [(1, "BrokerPersistenceError"), (2, "BrokerPersistenceError")]
    producer.send_async(b"x", record(3), sequence_id=3)
    broker.advance(299)
    assert len(outcomes) == 2
    broker.advance(1)
    assert outcomes[-1] == (3, "BrokerPersistenceError")
    assert _stored(broker) == []


def test_topics_created_while_down_are_down_and_bad_input_is_one_line() -> None:
    broker = _broker("4.0")
    broker.storage_down(fail_after_ms=10)
    producer = broker.create_producer("persistent://public/default/late", producer_name="p1")
    with pytest.raises(BrokerPersistenceError):
        producer.send(b"x", sequence_id=1)
    broker.storage_up()
    assert producer.send(b"x", sequence_id=1).entry_id() == 0
    with pytest.raises(InvalidArgument, match="fail_after_ms"):
        broker.storage_down(fail_after_ms=-1)


def test_without_deduplication_failed_sends_are_not_stored() -> None:
    broker = ModelBroker("4.0")
    producer = broker.create_producer(TOPIC, producer_name="p1")
    producer.send(b"x", sequence_id=1)
    broker.storage_down(fail_after_ms=50)
    with pytest.raises(BrokerPersistenceError):
        producer.send(b"x", sequence_id=2)
    broker.storage_up()
    producer.send(b"x", sequence_id=2)
    assert _stored(broker) == [1, 2]


def test_a_restart_while_down_fails_the_writes_in_flight() -> None:
    broker = _broker("4.0")
    producer = broker.create_producer(TOPIC, producer_name="p1")
    producer.send(b"x", sequence_id=1)
    broker.storage_down(fail_after_ms=10_000)
    outcomes: list[str] = []
    producer.send_async(b"x", lambda result, _mid: outcomes.append(result), sequence_id=2)
    broker.restart()
    assert outcomes == ["BrokerPersistenceError"]
    broker.storage_up()
    producer.send(b"x", sequence_id=2)
    assert _stored(broker) == [1, 2]
