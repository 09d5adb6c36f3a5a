"""Deduplication through the broker's publish path: policies, receipts, restart, markers excluded."""

from __future__ import annotations

from reference_model.broker import BrokerConfig, ModelBroker, ModelMessageId
from reference_model.dedup import DedupConfig


def _broker(enabled: bool = True) -> ModelBroker:
    return ModelBroker(config=BrokerConfig(dedup=DedupConfig(broker_enabled=enabled)))


def test_a_resent_sequence_id_is_dropped_and_answered_with_minus_one() -> None:
    """``testProducerDeduplication``: ids 0,1,2 then 1,2 again -> 3 messages stored, resends answered -1:-1."""
    broker = _broker()
    p = broker.create_producer("t", producer_name="p1")
    for seq in (1, 2, 3):
        p.send(b"x", sequence_id=seq)
    assert p.send(b"x", sequence_id=2) == ModelMessageId(-1, -1)
    assert p.send(b"x", sequence_id=3) == ModelMessageId(-1, -1)
    assert len(broker.topic_log("t")) == 3
    assert broker.topic_stats("t")["deduplicationStatus"] == "Enabled"


def test_effective_flag_topic_policy_then_namespace_then_broker() -> None:
    broker = _broker(enabled=False)
    p = broker.create_producer("t", producer_name="p1")
    p.send(b"x", sequence_id=5)
    p.send(b"x", sequence_id=5)
    assert len(broker.topic_log("t")) == 2  # off by default
    broker.set_namespace_deduplication(True)
    assert broker.topic_stats("t")["deduplicationStatus"] == "Enabled"
    p.send(b"x", sequence_id=6)
    p.send(b"x", sequence_id=6)
    assert len(broker.topic_log("t")) == 3
    broker.set_topic_deduplication("t", False)
    assert broker.topic_stats("t")["deduplicationStatus"] == "Disabled"
    broker.set_topic_deduplication("t", None)
    assert broker.topic_stats("t")["deduplicationStatus"] == "Enabled"


def test_a_reconnecting_producer_continues_after_the_last_persisted_id() -> None:
    """``testProducerSequenceAfterReconnect``: 10 sends, close, new producer of that name -> last id 9."""
    broker = _broker()
    p = broker.create_producer("t", producer_name="p1")
    for i in range(10):
        p.send(f"{i}".encode())
    p.close()
    again = broker.create_producer("t", producer_name="p1")
    assert again.last_sequence_id() == 9
    again.send(b"next")
    assert [e.metadata.sequence_id for e in broker.topic_log("t")][-1] == 10


def test_restart_recovers_dedup_state_from_the_log() -> None:
    """``testProducerDeduplication`` after a restart: re-sends below the last id are still dropped."""
    broker = _broker()
    p = broker.create_producer("t", producer_name="p1")
    for seq in (2, 3, 5):
        p.send(b"x", sequence_id=seq)
    broker.restart()
    assert p.is_connected()
    for seq in (2, 4):
        assert p.send(b"x", sequence_id=seq) == ModelMessageId(-1, -1)
    p.send(b"x", sequence_id=6)
    assert [e.metadata.sequence_id for e in broker.topic_log("t")] == [2, 3, 5, 6]
    fresh = broker.create_producer("t", producer_name="p2")
    assert fresh.last_sequence_id() == -1


def test_markers_are_not_deduplicated() -> None:
    broker = _broker()
    p = broker.create_producer("t", producer_name="p1")
    p.send(b"x", sequence_id=1)
    broker.write_marker("t", 10, {"snapshot_id": "a"}, None)
    broker.write_marker("t", 10, {"snapshot_id": "b"}, None)
    assert len(broker.topic_log("t")) == 3
    assert p.send(b"x", sequence_id=1) == ModelMessageId(-1, -1)


def test_a_batch_is_judged_by_its_first_sequence_id() -> None:
    """C++/Python send a batch with its first id only: after batch [10..12], a lone 11 is accepted again."""
    broker = _broker()
    p = broker.create_producer("t", producer_name="p1", batching_enabled=True)
    for seq in (10, 11, 12):
        p.send_async(b"x", lambda r, m: None, sequence_id=seq)
    p.flush()
    assert p.send(b"x", sequence_id=10) == ModelMessageId(-1, -1, -1, 0)
    accepted = p.send(b"x", sequence_id=11)
    assert accepted.ledger_id() >= 0
    assert [e.batch_size for e in broker.topic_log("t")] == [3, 1]
