"""Trimming consumed entries (``BrokerConfig.trim_consumed_entries``): the log is bounded by what is outstanding,
and nothing a client sees changes (redelivery, replay after a restart, deduplication after a restart)."""

from __future__ import annotations

import pytest

from reference_model.broker import BrokerConfig, ModelBroker
from reference_model.errors import InvalidArgument, ModelStateError
from reference_model.storage import MessageMetadata, Position, SingleMessage, TopicLog

TRIM = BrokerConfig(trim_consumed_entries=True, crash_detection_delay_ms=0)
#: A smaller trim batch than the broker's (4096), so that a few hundred messages show trimming.
_TRIM_BATCH = 64


@pytest.fixture(autouse=True)
def _small_trim_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("reference_model.broker.topic._TRIM_BATCH", _TRIM_BATCH)


def _log(n: int, ledger: int = 3) -> TopicLog:
    log = TopicLog("t", ledger)
    for i in range(n):
        log.append(MessageMetadata("p", i), (SingleMessage(b"x", i),), b"k")
    return log


# -- the log -----------------------------------------------------------------------------------------------
def test_trim_drops_through_the_position_and_the_rest_reads_as_before() -> None:
    log = _log(10)
    assert log.trim_through(Position(3, 5)) == 6
    assert [e.position.entry_id for e in log] == [6, 7, 8, 9] and len(log) == 4
    assert log.earliest == Position(3, 5)  # a subscription created at Earliest starts after what is gone
    assert log.get(Position(3, 7)).metadata.sequence_id == 7
    with pytest.raises(ModelStateError, match="no entry at position 3:2"):
        log.get(Position(3, 2))
    assert Position(3, 2) not in log and Position(3, 6) in log
    assert log.next_valid_position(Position(3, 5)) == Position(3, 6)
    assert log.next_valid_position(Position(3, 1)) == Position(3, 6)
    assert log.count_after(Position(3, 5)) == 4 and log.count_between(Position(3, 5), Position(3, 8)) == 3
    assert log.read_from(Position(3, 8), 5)[0].position == Position(3, 8)
    assert log.last_position == log.latest == Position(3, 9)
    entry = log.append(MessageMetadata("p", 10), (SingleMessage(b"x", 10),), b"k")
    assert entry.position == Position(3, 10) and log.get(Position(3, 10)) is entry  # the index still works


def test_trim_waits_for_a_batch_and_for_as_many_to_drop_as_to_keep() -> None:
    log = _log(10)
    assert log.trim_through(Position(3, 2), min_batch=4) == 0  # 3 < 4
    assert log.trim_through(Position(3, 3), min_batch=4) == 0  # 4 to drop, 6 to keep
    assert log.trim_through(Position(3, 4), min_batch=4) == 5 and len(log) == 5
    assert log.trim_through(Position(3, 4)) == 0  # nothing at or below it any more
    assert log.trim_through(Position(3, 9)) == 5 and len(log) == 0
    assert log.next_valid_position(Position(3, 9)) == Position(3, 10) and log.earliest == Position(3, 9)


def test_trim_across_ledgers() -> None:
    log = _log(3)
    log.roll_ledger(7)
    log.append(MessageMetadata("p", 3), (SingleMessage(b"x", 3),), b"k")
    assert log.trim_through(Position(3, 2)) == 3 and [e.position for e in log] == [Position(7, 0)]
    assert log.next_valid_position(Position(3, 2)) == Position(7, 0)


# -- the broker --------------------------------------------------------------------------------------------
def _drain(consumer, ack: bool = True) -> list:  # type: ignore[no-untyped-def]
    got = []
    while (m := consumer.receive(0)) is not None:
        got.append(m)
        if ack:
            consumer.acknowledge(m)
    return got


def test_the_log_stays_bounded_over_many_acknowledged_messages() -> None:
    broker = ModelBroker(config=TRIM)
    producer = broker.create_producer("t")
    consumer = broker.subscribe("t", "s", consumer_name="c1", receiver_queue_size=100)
    log = broker.topic_log("t")
    n = 50 * _TRIM_BATCH
    longest = 0
    for i in range(n):
        producer.send(b"v", partition_key=f"k{i % 16}")
        if i % 16 == 15:
            assert len(_drain(consumer)) == 16
        longest = max(longest, len(log))
    assert longest <= 2 * _TRIM_BATCH + 16  # a batch waiting to go, as many kept, what is outstanding
    assert len(log) < _TRIM_BATCH * 2 and log.earliest > Position(0, 0)
    assert broker.topic_internal_stats("t")["cursors"]["s"]["markDeletePosition"] == f"0:{n - 1}"


def test_off_by_default_every_entry_stays() -> None:
    broker = ModelBroker(config=BrokerConfig(crash_detection_delay_ms=0))
    producer = broker.create_producer("t")
    consumer = broker.subscribe("t", "s", consumer_name="c1")
    for i in range(2 * _TRIM_BATCH):
        producer.send(b"v", partition_key=f"k{i % 7}")
        _drain(consumer)
    assert len(broker.topic_log("t")) == 2 * _TRIM_BATCH


def test_an_unacknowledged_message_holds_the_log_and_is_redelivered_after_a_restart() -> None:
    broker = ModelBroker(config=TRIM)
    producer = broker.create_producer("t")
    consumer = broker.subscribe("t", "s", consumer_name="c1", receiver_queue_size=1000)
    producer.send(b"held", partition_key="h")
    held = consumer.receive(0)
    assert held is not None and held.data() == b"held"
    for i in range(3 * _TRIM_BATCH):
        producer.send(b"v", partition_key=f"k{i % 9}")
        _drain(consumer)
    log = broker.topic_log("t")
    assert len(log) == 3 * _TRIM_BATCH + 1  # nothing below the mark-delete position, which the held one holds
    broker.restart()
    again = _drain(consumer)
    assert [(m.data(), m.redelivery_count()) for m in again] == [(b"held", 0)]  # prefetch lost: sent again
    for i in range(_TRIM_BATCH):
        producer.send(b"w", partition_key=f"k{i % 9}")
        _drain(consumer)
    assert len(log) < 2 * _TRIM_BATCH  # the hole closed: what was behind it went in one batch
    c2 = broker.subscribe("t", "s", consumer_name="c2")  # a joiner sees nothing old
    assert _drain(c2) == [] and _drain(consumer) == []


def test_deduplication_keeps_what_its_reload_replays() -> None:
    conf = BrokerConfig.from_broker_conf({"brokerDeduplicationEnabled": True, "brokerDeduplicationEntriesInterval": 50})
    broker = ModelBroker(config=conf)
    broker.set_trim_consumed_entries(True)
    producer = broker.create_producer("t", producer_name="p")
    consumer = broker.subscribe("t", "s", consumer_name="c1")
    n = 4 * _TRIM_BATCH  # the last snapshot is 6 entries before the end, where a trim would fall
    for i in range(n):
        producer.send(b"v", partition_key=f"k{i % 5}")
        _drain(consumer)
    log = broker.topic_log("t")
    snapshot = broker._topic("t").dedup.snapshot()
    assert snapshot.position is not None and log.earliest <= snapshot.position  # what a reload replays is kept
    assert len(log) < n
    producer.close()
    broker.restart()
    # the sequence ids were recovered from the snapshot and the entries after it: an old one is a duplicate
    again = broker.create_producer("t", producer_name="p")
    assert again.last_sequence_id() == n - 1
    assert again.send(b"dup", partition_key="k0", sequence_id=n - 1).entry_id() == -1


def test_without_a_subscription_nothing_is_trimmed() -> None:
    broker = ModelBroker(config=TRIM)
    producer = broker.create_producer("t")
    for _ in range(2 * _TRIM_BATCH):
        producer.send(b"v")
    assert len(broker.topic_log("t")) == 2 * _TRIM_BATCH
    consumer = broker.subscribe("t", "s", consumer_name="c1", initial_position="Earliest")
    assert len(_drain(consumer)) == 2 * _TRIM_BATCH


def test_bad_setting_and_replication_are_refused() -> None:
    with pytest.raises(InvalidArgument, match="trim_consumed_entries must be True or False"):
        BrokerConfig(trim_consumed_entries=1)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="Expected True or False"):
        ModelBroker().set_trim_consumed_entries("yes")  # type: ignore[arg-type]
    from reference_model.broker import SimClock
    from reference_model.replication import ReplicatedClusters

    clock = SimClock()
    brokers = [ModelBroker(cluster="r1", clock=clock, config=TRIM), ModelBroker(cluster="r2", clock=clock)]
    with pytest.raises(InvalidArgument, match="trims consumed entries"):
        ReplicatedClusters(brokers)


def test_ledgers_of_n_entries_trim_in_batches_of_n() -> None:
    """``[broker] managedLedgerMaxEntriesPerLedger = 2`` (what the generator draws): trimming on, in batches of 2
    (a consumed ledger is deleted whole), so a handful of acknowledged messages is forgotten."""
    config = BrokerConfig.from_broker_conf({"managedLedgerMaxEntriesPerLedger": 2})
    assert config.trim_consumed_entries and config.trim_batch == 2
    assert BrokerConfig().with_broker_conf({"managedLedgerMaxEntriesPerLedger": 5}).trim_batch == 5
    assert not BrokerConfig().with_broker_conf({"maxUnackedMessagesPerConsumer": 3}).trim_consumed_entries
    broker = ModelBroker(config=config.with_broker_conf({}))
    producer = broker.create_producer("t")
    consumer = broker.subscribe("t", "s", consumer_name="c1", receiver_queue_size=100)
    for i in range(6):
        producer.send(b"v", partition_key=f"k{i}")
    assert len(_drain(consumer)) == 6
    log = broker.topic_log("t")
    assert len(log) < 6 and log.earliest > Position(0, 0)
    for value in (0, True, "2"):
        with pytest.raises(InvalidArgument, match="managedLedgerMaxEntriesPerLedger"):
            BrokerConfig.from_broker_conf({"managedLedgerMaxEntriesPerLedger": value})
    with pytest.raises(InvalidArgument, match="trim_batch must be"):
        BrokerConfig(trim_batch=-1)
