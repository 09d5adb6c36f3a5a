"""``ClientDeduplicationTest`` cases a Python client can express, plus the client batching rules.

The broker side is :class:`MessageDeduplication` behind a minimal publish path (``_Topic``: write on NOT_DUP,
``-1:-1`` on DUP, ``PersistenceError`` on UNKNOWN). The producer side follows the C++ client the Python
``pulsar-client`` wraps (``_PythonProducer``): the id counter starts at ``last_sequence_id + 1`` from
ProducerSuccess, a batch goes out under its first id, ``last_sequence_id() = first + count - 1``. The same cases
run through the model broker in ``tests/model/test_dedup_broker.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from reference_model.dedup import (
    DUPLICATE_RECEIPT,
    DedupConfig,
    DedupDecision,
    MessageDeduplication,
    SendIds,
    batch_send_ids,
    client_last_sequence_id,
    key_based_batches,
    python_batch_send_ids,
    python_explicit_sequence_id,
)
from reference_model.errors import InvalidArgument

PERSISTENCE_ERROR = "PersistenceError"


@dataclass
class _Topic:
    """The publish path of ``PersistentTopic`` reduced to what deduplication decides."""

    dedup: MessageDeduplication = field(default_factory=lambda: MessageDeduplication(DedupConfig(entries_interval=4)))
    log: list[tuple[tuple[int, int], str, SendIds, tuple[int, ...]]] = field(default_factory=list)
    ledger: int = 0

    def __post_init__(self) -> None:
        self.dedup.set_enabled(True, now_ns=0)

    def publish(self, name: str, ids: SendIds, content: tuple[int, ...], *, persist: bool = True):
        decision = self.dedup.is_duplicate(name, ids.sequence_id, ids.highest_sequence_id)
        if decision is DedupDecision.DUP:
            return DUPLICATE_RECEIPT
        if decision is DedupDecision.UNKNOWN:
            return PERSISTENCE_ERROR
        position = (self.ledger, len(self.log))
        self.log.append((position, name, ids, content))
        if persist:
            self.dedup.on_persisted(name, ids.sequence_id, ids.highest_sequence_id, position)
        return position

    def stored(self) -> list[int]:
        return [seq for *_, content in self.log for seq in content]

    def restart(self) -> None:
        """Crash-restart: keep the ``pulsar.dedup`` cursor, rebuild, replay the entries after it."""
        saved = self.dedup.snapshot()
        self.dedup = MessageDeduplication(self.dedup.config)
        after = [
            (pos, name, ids.sequence_id, ids.highest_sequence_id)
            for pos, name, ids, _ in self.log
            if saved.position is None or pos > saved.position
        ]
        self.dedup.recover(saved, after)
        self.ledger += 1


@dataclass
class _PythonProducer:
    """The sequence-id bookkeeping of the C++ ``ProducerImpl`` (what ``pulsar.Producer`` wraps)."""

    topic: _Topic
    name: str
    initial_sequence_id: int | None = None
    last: int = -1
    generator: int = 0

    def __post_init__(self) -> None:
        self.connect()

    def connect(self) -> None:
        last_from_broker = self.topic.dedup.producer_connected(self.name)
        initial = python_explicit_sequence_id(self.initial_sequence_id)
        self.last = initial if initial is not None else last_from_broker
        self.generator = self.last + 1

    def close(self) -> None:
        self.topic.dedup.producer_disconnected(self.name, now_ns=0)

    def _ids(self, explicit: list[int | None]) -> list[int]:
        out = []
        for value in explicit:
            seq = python_explicit_sequence_id(value)
            if seq is None:
                seq = self.generator
                self.generator += 1
            out.append(seq)
        return out

    def send(self, sequence_id: int | None = None):
        return self.send_batch([sequence_id])[0]

    def send_batch(self, explicit: list[int | None]):
        ids = self._ids(explicit)
        receipt = self.topic.publish(self.name, python_batch_send_ids(ids), tuple(ids))
        if receipt != PERSISTENCE_ERROR:
            self.last = client_last_sequence_id(ids[0], len(ids))
        return [receipt] * len(ids)

    def send_key_based(self, messages: list[tuple[str, int | None]]):
        keyed = list(zip([k for k, _ in messages], self._ids([s for _, s in messages]), strict=True))
        receipts = []
        for send_ids, content in key_based_batches(keyed):
            receipt = self.topic.publish(self.name, send_ids, content)
            if receipt != PERSISTENCE_ERROR:
                self.last = client_last_sequence_id(send_ids.sequence_id, len(content))
            receipts.append(receipt)
        return receipts


def test_producer_sequence_after_reconnect() -> None:
    """``testProducerSequenceAfterReconnect``: 10 sends, reconnect, ``last_sequence_id() == 9``."""
    topic = _Topic()
    producer = _PythonProducer(topic, "my-producer-name")
    assert producer.last == -1
    for i in range(10):
        producer.send()
        assert producer.last == i
    producer.close()
    producer = _PythonProducer(topic, "my-producer-name")
    assert producer.last == 9
    for i in range(10, 20):
        producer.send()
        assert producer.last == i
    assert topic.stored() == list(range(20))


def test_producer_sequence_after_restart() -> None:
    """``testProducerSequenceAfterRestart``: the same across a broker crash-restart."""
    topic = _Topic()
    producer = _PythonProducer(topic, "my-producer-name")
    for _ in range(10):
        producer.send()
    producer.close()
    topic.restart()
    producer = _PythonProducer(topic, "my-producer-name")
    assert producer.last == 9
    producer.send()
    assert producer.last == 10


def test_producer_deduplication() -> None:
    """``testProducerDeduplication``: ids 0,1,2 then 1,2 again -> 3 stored; same after a restart.

    With Python, ``sequence_id=0`` is ignored; the producer's counter assigns 0 to that first message anyway.
    """
    topic = _Topic()
    producer = _PythonProducer(topic, "my-producer-name")
    assert producer.send(0) == (0, 0)
    assert producer.send(1) == (0, 1)
    assert producer.send(2) == (0, 2)
    assert producer.send(1) == DUPLICATE_RECEIPT
    assert producer.send(2) == DUPLICATE_RECEIPT
    assert topic.stored() == [0, 1, 2]
    producer.close()
    topic.restart()
    producer = _PythonProducer(topic, "my-producer-name")
    assert producer.last == 2
    assert producer.send(1) == DUPLICATE_RECEIPT
    assert producer.send(2) == DUPLICATE_RECEIPT
    assert topic.stored() == [0, 1, 2]


def test_python_ignores_explicit_zero_after_other_ids() -> None:
    """``send(sequence_id=0)`` is dropped: the counter assigns the next id, here a fresh one."""
    topic = _Topic()
    producer = _PythonProducer(topic, "p")
    producer.send()  # 0
    producer.send()  # 1
    assert producer.send(0) == (0, 2)  # meant as a resend of 0; stored as 2
    assert topic.stored() == [0, 1, 2]


def test_discontinuous_sequence_ids() -> None:
    """``testProducerDeduplicationWithDiscontinuousSequenceId`` (non-batched): 2,3,5 then 2,4,6 -> 4 stored."""
    topic = _Topic()
    producer = _PythonProducer(topic, "p")
    for seq in (2, 3, 5):
        producer.send(seq)
    receipts = [producer.send(seq) for seq in (2, 4, 6)]
    assert receipts[:2] == [DUPLICATE_RECEIPT, DUPLICATE_RECEIPT]
    assert receipts[2] != DUPLICATE_RECEIPT
    assert topic.stored() == [2, 3, 5, 6]
    producer.close()
    topic.restart()
    assert _PythonProducer(topic, "p").last == 6


def test_discontinuous_ids_in_one_python_batch_drop_the_new_one() -> None:
    """#6273 batch granularity: the batch 2,4,6 is judged by 2 alone, so 6 is dropped with it."""
    topic = _Topic()
    producer = _PythonProducer(topic, "p")
    producer.send_batch([2, 3, 5])
    assert producer.send_batch([2, 4, 6]) == [DUPLICATE_RECEIPT] * 3
    assert topic.stored() == [2, 3, 5]


def test_batch_mixing_old_and_new_ids_is_dropped_whole() -> None:
    """#6273 / #5476: a batch holding an already-stored id and new ids is dropped as a unit."""
    topic = _Topic()
    producer = _PythonProducer(topic, "p")
    for _ in range(4):
        producer.send()  # 0..3, one per send
    assert producer.send_batch([3, 4, 5]) == [DUPLICATE_RECEIPT] * 3
    assert topic.stored() == [0, 1, 2, 3]
    # The Java client would carry highest=5, but the broker still judges by the lowest id.
    assert topic.publish("p", batch_send_ids([3, 4, 5], client="java"), (3, 4, 5)) == DUPLICATE_RECEIPT


def test_cpp_highest_sequence_id_gap() -> None:
    """After batch [10..19] (sent as 10, no highest), a lone re-send of 15 is accepted as new."""
    topic = _Topic()
    producer = _PythonProducer(topic, "p", initial_sequence_id=9)
    assert producer.generator == 10
    producer.send_batch([None] * 10)
    assert producer.last == 19
    assert topic.dedup.pushed() == {"p": 10}
    assert producer.send(15) not in (DUPLICATE_RECEIPT, PERSISTENCE_ERROR)
    assert topic.stored().count(15) == 2
    # A reconnect learns the first id of the last send, not 19.
    producer.close()
    assert _PythonProducer(topic, "p").last == 15


def test_java_batch_carries_highest_so_resend_is_dropped() -> None:
    """The Java client sends (10, 19): the same re-send of 15 is a duplicate there."""
    topic = _Topic()
    topic.publish("j", batch_send_ids(list(range(10, 20)), client="java"), tuple(range(10, 20)))
    assert topic.dedup.pushed() == {"j": 19}
    assert topic.publish("j", SendIds(15), (15,)) == DUPLICATE_RECEIPT


def test_key_based_batching_order_python_first_id_rule() -> None:
    """``testKeyBasedBatchingOrder`` as the Python client runs it: A(0,3,4) B(1,2).

    Batches go out sorted by first id, A (as 0) then B (as 1): both are accepted (the consumer sees
    0,3,4,1,2, not Java's 1,2,0,3,4). Re-sending the same five ids returns -1:-1 for both batches.
    """
    messages = [("A", 0), ("B", 1), ("B", 2), ("A", 3), ("A", 4)]
    assert key_based_batches(messages) == [(SendIds(0), (0, 3, 4)), (SendIds(1), (1, 2))]
    assert key_based_batches(messages, client="java") == [(SendIds(2, 2), (1, 2)), (SendIds(4, 4), (0, 3, 4))]
    topic = _Topic()
    producer = _PythonProducer(topic, "p")
    receipts = producer.send_key_based(messages)
    assert DUPLICATE_RECEIPT not in receipts
    assert topic.stored() == [0, 3, 4, 1, 2]
    assert producer.send_key_based(messages) == [DUPLICATE_RECEIPT, DUPLICATE_RECEIPT]
    assert topic.stored() == [0, 3, 4, 1, 2]
    # The hazard: the broker tracks 1 (B's first id) and the client computes 1 + 2 - 1 = 2, although 4 is stored.
    assert topic.dedup.producer_connected("p") == 1
    assert producer.last == 2
    assert producer.send(3) not in (DUPLICATE_RECEIPT, PERSISTENCE_ERROR)
    assert topic.stored().count(3) == 2


def test_key_based_batching_java_order_is_accepted() -> None:
    topic = _Topic()
    messages = [("A", 0), ("B", 1), ("B", 2), ("A", 3), ("A", 4)]
    for ids, content in key_based_batches(messages, client="java"):
        assert topic.publish("j", ids, content) not in (DUPLICATE_RECEIPT, PERSISTENCE_ERROR)
    assert topic.stored() == [1, 2, 0, 3, 4]
    assert topic.dedup.pushed() == {"j": 4}


def test_unsorted_key_batches_give_unknown() -> None:
    """Go #1252 / .NET #367 / Java before #15413: B(1,3) sent with highest 3, then A(0,2) -> lowest 0 <= pushed.

    While A's id is below a write still in flight the broker cannot judge it: PersistenceError.
    """
    topic = _Topic()
    assert topic.publish("g", SendIds(1, 3), (1, 3), persist=False) == (0, 0)
    assert topic.publish("g", SendIds(0, 2), (0, 2)) == PERSISTENCE_ERROR


def test_in_flight_duplicate_is_a_persistence_error() -> None:
    topic = _Topic()
    assert topic.publish("p", SendIds(7), (7,), persist=False) == (0, 0)
    assert topic.publish("p", SendIds(7), (7,)) == PERSISTENCE_ERROR
    topic.dedup.on_persisted("p", 7, -1, (0, 0))
    assert topic.publish("p", SendIds(7), (7,)) == DUPLICATE_RECEIPT


def test_key_based_groups_keyless_messages_together() -> None:
    assert key_based_batches([(None, 5), ("", 6), ("k", 4)]) == [(SendIds(4), (4,)), (SendIds(5), (5, 6))]


def test_client_helpers() -> None:
    assert batch_send_ids([3]) == SendIds(3, -1)
    assert batch_send_ids([3, 9, 4], client="cpp") == SendIds(3, -1)
    assert batch_send_ids([3, 9, 4], client="java") == SendIds(3, 4)
    assert python_explicit_sequence_id(None) is None
    assert python_explicit_sequence_id(0) is None
    assert python_explicit_sequence_id(7) == 7
    assert client_last_sequence_id(10, 10) == 19
    assert client_last_sequence_id(0, 3) == 2


@pytest.mark.parametrize(
    ("call", "fragment"),
    [
        (lambda: batch_send_ids([]), "empty"),
        (lambda: batch_send_ids([1, "2"]), "'2'"),
        (lambda: batch_send_ids([1], client="go"), "client='go'"),
        (lambda: batch_send_ids([1], client="jav"), "Did you mean 'java'?"),
        (lambda: key_based_batches([("A", 1, 2)]), "messages[0]"),
        (lambda: key_based_batches([("A", 1.5)]), "1.5"),
        (lambda: python_explicit_sequence_id("3"), "sequence_id='3'"),
        (lambda: client_last_sequence_id(3, 0), "messages_in_send=0"),
    ],
)
def test_invalid_client_arguments(call, fragment) -> None:
    with pytest.raises(InvalidArgument) as info:
        call()
    assert fragment in str(info.value)
