"""Producers of the model broker: sequence ids, the Python client's falsy-value rules, batching."""

from __future__ import annotations

import pytest

from reference_model.broker import ModelBroker, ModelMessageId, ProducerBusy


def _drain(broker: ModelBroker, topic: str = "t") -> list[tuple[int, int, int, bytes]]:
    log = broker.topic_log(topic)
    return [(e.position.entry_id, i, m.sequence_id, e.sticky_key) for e in log for i, m in enumerate(e.messages)]


def test_sequence_ids_start_at_zero_or_after_the_initial_id() -> None:
    broker = ModelBroker()
    p = broker.create_producer("t")
    p.send(b"a")
    p.send(b"b")
    assert p.last_sequence_id() == 1
    q = broker.create_producer("t", initial_sequence_id=9)
    q.send(b"c")
    assert q.last_sequence_id() == 10
    assert [e.metadata.sequence_id for e in broker.topic_log("t")] == [0, 1, 10]


def test_python_ignores_falsy_sequence_id_initial_id_and_keys() -> None:
    broker = ModelBroker()
    p = broker.create_producer("t", initial_sequence_id=0)
    p.send(b"a", sequence_id=0, partition_key="", ordering_key="")
    entry = next(iter(broker.topic_log("t")))
    assert entry.metadata.sequence_id == 0 and entry.metadata.partition_key is None
    assert entry.metadata.ordering_key is None
    # 4.0: a key-less message routes by producerName-sequenceId
    assert entry.sticky_key == f"{p.producer_name()}-0".encode()


def test_key_less_messages_route_by_none_key_before_4_0() -> None:
    broker = ModelBroker(pulsar_version="3.3")
    broker.create_producer("t").send(b"a")
    assert next(iter(broker.topic_log("t"))).sticky_key == b"NONE_KEY"


def test_ordering_key_wins_over_partition_key() -> None:
    broker = ModelBroker()
    broker.create_producer("t").send(b"a", partition_key="any key", ordering_key="ok")
    assert next(iter(broker.topic_log("t"))).sticky_key == b"ok"


def test_generated_producer_names_and_producer_busy() -> None:
    broker = ModelBroker(cluster="east")
    p0 = broker.create_producer("t")
    assert p0.producer_name() == "east-0-0"
    broker.create_producer("t", producer_name="x")
    with pytest.raises(ProducerBusy, match="already connected"):
        broker.create_producer("t", producer_name="x")
    broker.create_producer("other", producer_name="x")  # names are unique per topic only


def test_default_batching_is_one_entry_routed_by_the_first_key() -> None:
    broker = ModelBroker()
    p = broker.create_producer("t", batching_enabled=True, batching_max_messages=3)
    ids = []
    for i, key in enumerate(["a", "b", "c", "d"]):
        p.send_async(f"{i}".encode(), lambda r, m: ids.append((r, m)), partition_key=key)
    p.flush()
    entries = list(broker.topic_log("t"))
    assert [e.batch_size for e in entries] == [3, 1]
    assert [e.sticky_key for e in entries] == [b"a", b"d"]
    assert ids[0] == ("Ok", ModelMessageId(0, 0, -1, 0)) and ids[2] == ("Ok", ModelMessageId(0, 0, -1, 2))
    assert entries[0].metadata.sequence_id == 0 and entries[0].metadata.num_messages_in_batch == 3


def test_key_based_batching_groups_by_key_and_sends_groups_by_first_sequence_id() -> None:
    broker = ModelBroker()
    p = broker.create_producer("t", batching_enabled=True, batching_type="KeyBased", batching_max_messages=100)
    for i, key in enumerate(["B", "A", "B", "C", "A"]):
        p.send_async(f"{i}".encode(), lambda r, m: None, partition_key=key)
    p.flush()
    entries = list(broker.topic_log("t"))
    assert [(e.sticky_key, [m.sequence_id for m in e.messages]) for e in entries] == [
        (b"B", [0, 2]),
        (b"A", [1, 4]),
        (b"C", [3]),
    ]


def test_sync_send_with_batching_waits_for_the_publish_delay() -> None:
    broker = ModelBroker()
    p = broker.create_producer("t", batching_enabled=True, batching_max_publish_delay_ms=10)
    msg_id = p.send(b"x")
    assert broker.clock.now_ms() == 10
    assert msg_id == ModelMessageId(0, 0, -1, 0)


def test_batch_flushes_before_exceeding_max_bytes() -> None:
    broker = ModelBroker()
    p = broker.create_producer("t", batching_enabled=True, batching_max_allowed_size_in_bytes=10)
    for _ in range(3):
        p.send_async(b"12345", lambda r, m: None)
    p.flush()
    assert [e.batch_size for e in broker.topic_log("t")] == [2, 1]


def test_close_flushes_pending_messages() -> None:
    broker = ModelBroker()
    p = broker.create_producer("t", batching_enabled=True)
    p.send_async(b"x", lambda r, m: None)
    p.close()
    assert len(broker.topic_log("t")) == 1
    assert not p.is_connected()
