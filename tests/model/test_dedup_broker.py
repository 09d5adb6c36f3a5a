"""``ClientDeduplicationTest`` / ``MessageDuplicationTest`` cases through the model broker and its producer.

The model producer follows the C++ client the Python ``pulsar-client`` wraps: a batch goes out under its first
sequence id, ``sequence_id=0`` is ignored, key-based batches are sent sorted by first id.
"""

from __future__ import annotations

import pytest

from reference_model.broker import DUPLICATE_MESSAGE_ID, ModelBroker

TOPIC = "persistent://public/default/dedup"


@pytest.fixture
def broker() -> ModelBroker:
    broker = ModelBroker()
    broker.set_namespace_deduplication(True)
    return broker


def stored_sequence_ids(broker: ModelBroker, topic: str = TOPIC) -> list[int]:
    return [m.sequence_id for e in broker.topic_log(topic) if not e.is_marker for m in e.messages]


def received_sequence_ids(broker: ModelBroker, topic: str = TOPIC) -> list[int]:
    consumer = broker.subscribe(topic, "check", initial_position="Earliest")
    out = []
    while (msg := consumer.receive(50)) is not None:
        out.append(msg.sequence_id())
        consumer.acknowledge(msg)
    consumer.close()
    return out


def test_producer_sequence_after_reconnect(broker: ModelBroker) -> None:
    """``testProducerSequenceAfterReconnect``."""
    producer = broker.create_producer(TOPIC, producer_name="my-producer-name")
    assert producer.last_sequence_id() == -1
    for i in range(10):
        producer.send(f"my-message-{i}".encode())
        assert producer.last_sequence_id() == i
    producer.close()
    producer = broker.create_producer(TOPIC, producer_name="my-producer-name")
    assert producer.last_sequence_id() == 9
    for i in range(10, 20):
        producer.send(f"my-message-{i}".encode())
        assert producer.last_sequence_id() == i
    assert stored_sequence_ids(broker) == list(range(20))


def test_producer_sequence_after_restart(broker: ModelBroker) -> None:
    """``testProducerSequenceAfterRestart``: the dedup state survives a crash-restart (snapshot + replay)."""
    producer = broker.create_producer(TOPIC, producer_name="my-producer-name")
    for i in range(10):
        producer.send(f"my-message-{i}".encode())
    producer.close()
    broker.restart()
    producer = broker.create_producer(TOPIC, producer_name="my-producer-name")
    assert producer.last_sequence_id() == 9
    producer.send(b"my-message-10")
    assert producer.last_sequence_id() == 10


def test_producer_deduplication(broker: ModelBroker) -> None:
    """``testProducerDeduplication``: 0,1,2 then 1,2 again -> 3 received; the same after a restart."""
    producer = broker.create_producer(TOPIC, producer_name="my-producer-name")
    for seq in (0, 1, 2):  # Python drops sequence_id=0; the counter assigns 0 anyway
        assert producer.send(f"my-message-{seq}".encode(), sequence_id=seq) != DUPLICATE_MESSAGE_ID
    assert producer.send(b"my-message-1", sequence_id=1) == DUPLICATE_MESSAGE_ID
    assert producer.send(b"my-message-2", sequence_id=2) == DUPLICATE_MESSAGE_ID
    assert received_sequence_ids(broker) == [0, 1, 2]
    producer.close()
    broker.restart()
    producer = broker.create_producer(TOPIC, producer_name="my-producer-name")
    assert producer.last_sequence_id() == 2
    assert producer.send(b"my-message-1", sequence_id=1) == DUPLICATE_MESSAGE_ID
    assert producer.send(b"my-message-2", sequence_id=2) == DUPLICATE_MESSAGE_ID
    assert stored_sequence_ids(broker) == [0, 1, 2]


def test_discontinuous_sequence_ids(broker: ModelBroker) -> None:
    """``testProducerDeduplicationWithDiscontinuousSequenceId`` (non-batched): 2,3,5 then 2,4,6 -> 4 stored."""
    producer = broker.create_producer(TOPIC, producer_name="p")
    for seq in (2, 3, 5):
        producer.send(b"x", sequence_id=seq)
    receipts = [producer.send(b"y", sequence_id=seq) for seq in (2, 4, 6)]
    assert receipts[:2] == [DUPLICATE_MESSAGE_ID, DUPLICATE_MESSAGE_ID] and receipts[2] != DUPLICATE_MESSAGE_ID
    assert received_sequence_ids(broker) == [2, 3, 5, 6]
    producer.close()
    broker.restart()
    assert broker.create_producer(TOPIC, producer_name="p").last_sequence_id() == 6


def dropped(receipts: list) -> list[bool]:
    """Which receipts say "already stored": message id ``-1:-1`` (a batch keeps its batch index)."""
    return [(r.ledger_id(), r.entry_id()) == (-1, -1) for r in receipts]


def send_batch(producer, seqs, keys=None) -> list:
    receipts: list = []
    for index, seq in enumerate(seqs):
        key = None if keys is None else keys[index]
        producer.send_async(b"b", lambda result, msg_id: receipts.append(msg_id), partition_key=key, sequence_id=seq)
    producer.flush()
    return receipts


def test_key_based_batching_order_python_first_id_rule(broker: ModelBroker) -> None:
    """``testKeyBasedBatchingOrder`` with the Python client: A(10,13,14) B(11,12) go out as A then B."""
    producer = broker.create_producer(
        TOPIC, producer_name="p", batching_enabled=True, batching_type="KeyBased", batching_max_messages=100
    )
    keys = ["A", "B", "B", "A", "A"]
    first = send_batch(producer, [10, 11, 12, 13, 14], keys)
    assert not any(dropped(first))
    assert received_sequence_ids(broker) == [10, 13, 14, 11, 12]  # Java's client would give 11,12,10,13,14
    assert all(dropped(send_batch(producer, [10, 11, 12, 13, 14], keys)))
    assert stored_sequence_ids(broker) == [10, 13, 14, 11, 12]


def test_batch_with_old_and_new_ids_dropped_whole(broker: ModelBroker) -> None:
    """#6273: after 0..3 stored one by one, the batch 3,4,5 is judged by 3 and dropped with 4 and 5."""
    single = broker.create_producer(TOPIC, producer_name="p")
    for _ in range(4):
        single.send(b"s")
    single.close()
    batching = broker.create_producer(TOPIC, producer_name="p", batching_enabled=True, batching_max_messages=100)
    assert dropped(send_batch(batching, [3, 4, 5])) == [True] * 3
    assert stored_sequence_ids(broker) == [0, 1, 2, 3]


def test_cpp_highest_sequence_id_gap(broker: ModelBroker) -> None:
    """After batch [10..19] (sent as 10, no highest id), a lone re-send of 15 is accepted: stored twice."""
    producer = broker.create_producer(
        TOPIC, producer_name="p", initial_sequence_id=9, batching_enabled=True, batching_max_messages=100
    )
    send_batch(producer, [None] * 10)
    assert producer.last_sequence_id() == 19
    assert producer.send(b"again", sequence_id=15) != DUPLICATE_MESSAGE_ID
    assert stored_sequence_ids(broker).count(15) == 2
    producer.close()
    assert broker.create_producer(TOPIC, producer_name="p").last_sequence_id() == 15


def test_not_for_system_topics(broker: ModelBroker) -> None:
    """``testMessageDeduplicationShouldNotWorkForSystemTopic``."""
    topic = "persistent://public/default/__change_events"
    broker.set_topic_deduplication(topic, True)
    producer = broker.create_producer(topic, producer_name="p")
    assert producer.send(b"a", sequence_id=5) != DUPLICATE_MESSAGE_ID
    assert producer.send(b"a", sequence_id=5) != DUPLICATE_MESSAGE_ID
    assert broker.topic_stats(topic)["deduplicationStatus"] == "Disabled"


def test_disable_via_topic_policy(broker: ModelBroker) -> None:
    """``testMessageDeduplication``: a topic policy overrides the namespace; disabling forgets the ids."""
    producer = broker.create_producer(TOPIC, producer_name="p")
    producer.send(b"a", sequence_id=5)
    assert broker.topic_stats(TOPIC)["deduplicationStatus"] == "Enabled"
    broker.set_topic_deduplication(TOPIC, False)
    assert broker.topic_stats(TOPIC)["deduplicationStatus"] == "Disabled"
    assert producer.send(b"a", sequence_id=5) != DUPLICATE_MESSAGE_ID
    broker.set_topic_deduplication(TOPIC, None)  # back to the namespace policy: on, with a fresh cursor
    assert producer.send(b"a", sequence_id=5) != DUPLICATE_MESSAGE_ID
    assert producer.send(b"a", sequence_id=5) == DUPLICATE_MESSAGE_ID
    assert stored_sequence_ids(broker) == [5, 5, 5]


def test_off_by_default() -> None:
    broker = ModelBroker()
    producer = broker.create_producer(TOPIC, producer_name="p")
    producer.send(b"a", sequence_id=3)
    assert producer.send(b"a", sequence_id=3) != DUPLICATE_MESSAGE_ID
    producer.close()
    assert broker.create_producer(TOPIC, producer_name="p").last_sequence_id() == -1


def test_namespace_deduplication_policy_api() -> None:
    """``testNamespaceDeduplicationApi``: not set -> true -> false -> removed (not set)."""
    broker = ModelBroker()
    assert broker.namespace_dedup_policy("public/default") is None
    for value in (True, False, None):
        broker.set_namespace_deduplication(value)
        assert broker.namespace_dedup_policy("public/default") is value


def test_non_batch_async(broker: ModelBroker) -> None:
    """``testProducerDeduplicationNonBatchAsync``: async 2,3,5 then 2,4 -> 3 stored; last id 5 after a restart."""
    producer = broker.create_producer(TOPIC, producer_name="p")
    receipts: list = []
    for seq in (2, 3, 5, 2, 4):
        producer.send_async(b"x", lambda result, msg_id: receipts.append((result, msg_id)), sequence_id=seq)
    broker.run_until_idle()
    assert [result for result, _ in receipts] == ["Ok"] * 5
    assert dropped([msg_id for _, msg_id in receipts]) == [False, False, False, True, True]
    assert received_sequence_ids(broker) == [2, 3, 5]
    producer.close()
    broker.restart()
    assert broker.create_producer(TOPIC, producer_name="p").last_sequence_id() == 5


def test_reenable_forgets_marks_of_producers_that_reconnected_while_off() -> None:
    """Deduplication off and on at run time: a producer that closed while it was on and reconnected while it was
    off keeps its inactivity mark (Pulsar's ``producerAdded`` returns while disabled), and the re-enable drops
    it (``replayCursor``: ``inactiveProducers.clear()``). So the purge never forgets the producer while it is
    connected: its resend of an id stored after the re-enable is still a duplicate past the inactivity timeout.
    A broker that kept the mark would store it a second time (the automatic mutant deduplication.py:151)."""
    from reference_model.broker import BrokerConfig
    from reference_model.dedup import DedupConfig

    broker = ModelBroker(config=BrokerConfig(dedup=DedupConfig(producer_inactivity_timeout_ms=60_000)))
    broker.set_namespace_deduplication(True)
    producer = broker.create_producer(TOPIC, producer_name="p1")
    for seq in range(3):
        producer.send(f"m{seq}".encode(), sequence_id=seq)
    producer.close()  # on: marked inactive
    broker.set_topic_deduplication(TOPIC, False)
    producer = broker.create_producer(TOPIC, producer_name="p1")  # off: the mark stays
    assert producer.last_sequence_id() == -1  # the maps were cleared with the disable
    assert "p1" in broker.dedup_stats(TOPIC)["inactiveProducers"]
    producer.send(b"m3", sequence_id=3)
    broker.set_topic_deduplication(TOPIC, True)
    assert broker.dedup_stats(TOPIC)["inactiveProducers"] == {}
    for seq in (4, 5):
        assert producer.send(f"m{seq}".encode(), sequence_id=seq) != DUPLICATE_MESSAGE_ID
    broker.advance(2 * 60_000)  # past the timeout, several purges later; the producer stays connected
    assert producer.send(b"m4", sequence_id=4) == DUPLICATE_MESSAGE_ID
    assert stored_sequence_ids(broker) == [0, 1, 2, 3, 4, 5]
