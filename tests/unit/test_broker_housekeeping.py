"""The broker's periodic deduplication tasks on the simulated clock: inactive-producer purge, timed snapshots.

``BrokerService`` runs ``checkMessageDeduplicationInfo`` every inactivity-timeout / 3 and
``checkDeduplicationSnapshot`` every ``brokerDeduplicationSnapshotFrequencyInSeconds``, from broker start, at a
fixed rate. They are background work: ``run_until_idle`` never waits for them.
"""

from __future__ import annotations

import pytest

from reference_model.broker import BrokerConfig, ModelBroker, SimClock
from reference_model.dedup import DedupConfig
from reference_model.errors import InvalidArgument

TOPIC = "t"


def _broker(clock: SimClock | None = None, **dedup: int) -> ModelBroker:
    return ModelBroker(config=BrokerConfig(dedup=DedupConfig(broker_enabled=True, **dedup)), clock=clock)


def _published(broker: ModelBroker, name: str, count: int) -> None:
    producer = broker.create_producer(TOPIC, producer_name=name)
    for i in range(count):
        producer.send(f"{name}-{i}".encode())
    producer.close()


# -- inactive-producer purge ---------------------------------------------------------------------------------


def test_a_producer_inactive_past_the_timeout_is_forgotten_at_the_next_purge() -> None:
    """Timeout 60 s -> purge every 20 s (at 20, 40, 60, 80 s). Closed at 1 s, the producer is still inactive
    for less than 60 s at the 60 s purge, and forgotten at the 80 s one: then it reconnects with -1."""
    broker = _broker(producer_inactivity_timeout_ms=60_000)
    broker.advance(1_000)
    _published(broker, "p1", 5)  # sequence ids 0..4, closed at 1 s

    broker.advance(78_000)  # t = 79 s: purges ran at 20, 40, 60 s
    assert broker.housekeeping.purges == 3
    again = broker.create_producer(TOPIC, producer_name="p1")
    assert again.last_sequence_id() == 4  # remembered: inactive for 59 s only when the 60 s purge ran
    assert again.send(b"dup", sequence_id=3).ledger_id() == -1  # still a duplicate
    again.close()  # inactive again from 79 s

    broker.advance(2_000 + 60_000)  # t = 141 s: purges at 80 .. 140 s; 140 - 60 = 80 > 79: forgotten
    assert "p1" not in broker.dedup_stats(TOPIC)["highestSequencedPersisted"]
    back = broker.create_producer(TOPIC, producer_name="p1")
    assert back.last_sequence_id() == -1
    assert back.send(b"old id accepted again", sequence_id=3).ledger_id() >= 0


def test_the_purge_runs_at_a_fixed_rate_from_broker_start_and_keeps_active_producers() -> None:
    broker = _broker(producer_inactivity_timeout_ms=3_000)  # purge every 1 s
    connected = broker.create_producer(TOPIC, producer_name="stays")
    connected.send(b"x")
    _published(broker, "leaves", 2)
    broker.advance(10_500)
    assert broker.housekeeping.purges == 10
    persisted = broker.dedup_stats(TOPIC)["highestSequencedPersisted"]
    assert persisted == {"stays": 0}  # a connected producer is never inactive
    assert connected.last_sequence_id() == 0


def test_without_time_passing_nothing_is_purged() -> None:
    """The purge is a timer, not a side effect of publishing: a burst at one instant keeps every producer."""
    broker = _broker(producer_inactivity_timeout_ms=3)
    for name in ("a", "b", "c"):
        _published(broker, name, 1)
    assert broker.housekeeping.purges == 0
    assert set(broker.dedup_stats(TOPIC)["highestSequencedPersisted"]) == {"a", "b", "c"}


# -- time-based snapshots ------------------------------------------------------------------------------------


def _restart_replay(snapshot_frequency_ms: int) -> tuple[int, str, int]:
    """(entries replayed at recovery, dedup cursor position before restart, last id after restart)."""
    broker = _broker(entries_interval=1_000, snapshot_frequency_ms=snapshot_frequency_ms, snapshot_interval_ms=5_000)
    producer = broker.create_producer(TOPIC, producer_name="p")
    for i in range(40):
        producer.send(f"{i}".encode())
    broker.advance(10_000)  # the snapshot check runs at 5 s and 10 s: a snapshot at the 40th entry
    for i in range(3):
        producer.send(f"late {i}".encode())
    position = broker.topic_internal_stats(TOPIC)["cursors"]["pulsar.dedup"]["markDeletePosition"]
    broker.restart()
    replayed = broker.dedup_stats(TOPIC)["snapshotCounter"]  # entries replayed since the snapshot
    return replayed, position, producer.last_sequence_id()


def test_a_timed_snapshot_shortens_recovery_replay_after_restart() -> None:
    replayed, position, last_id = _restart_replay(snapshot_frequency_ms=5_000)
    assert position == "0:39"  # the 40th entry, taken by the timer (no entry-count snapshot: interval 1000)
    assert replayed == 3  # only the entries written after the timed snapshot
    assert last_id == 42


def test_without_the_snapshot_timer_recovery_replays_every_entry() -> None:
    replayed, position, last_id = _restart_replay(snapshot_frequency_ms=0)
    assert position == "-1:-1"  # the cursor opened on an empty topic never moved
    assert replayed == 43
    assert last_id == 42  # the same state either way: the snapshot only saves work


def test_a_timed_snapshot_waits_for_the_policy_interval_and_for_new_entries() -> None:
    broker = _broker(entries_interval=1_000, snapshot_frequency_ms=1_000, snapshot_interval_ms=3_000)
    producer = broker.create_producer(TOPIC, producer_name="p")
    producer.send(b"a")
    broker.advance(2_000)  # checks at 1 s and 2 s: the policy interval (3 s) has not passed yet
    assert broker.dedup_stats(TOPIC)["snapshotsTaken"] == 0
    broker.advance(1_000)  # 3 s: snapshot at 0:0
    assert broker.dedup_stats(TOPIC)["snapshotsTaken"] == 1
    broker.advance(10_000)  # no new entry: nothing to snapshot however long we wait
    assert broker.dedup_stats(TOPIC)["snapshotsTaken"] == 1
    assert broker.housekeeping.snapshot_checks == 13


# -- background timers ---------------------------------------------------------------------------------------


def test_housekeeping_never_keeps_run_until_idle_or_a_blocking_call_going() -> None:
    broker = _broker(producer_inactivity_timeout_ms=3, snapshot_frequency_ms=1)  # timers every 1 ms
    consumer = broker.subscribe(TOPIC, "s")
    broker.run_until_idle()  # returns although a timer is always due 1 ms from now
    assert broker.clock.now_ns() == 0
    assert consumer.receive(None) is None  # nothing can arrive: an unbounded receive returns, it does not spin
    assert broker.clock.now_ns() == 0
    assert consumer.receive(5) is None  # a bounded wait lets them run
    assert broker.housekeeping.purges == 5 and broker.clock.now_ms() == 5


def test_a_restart_starts_the_tasks_afresh_without_doubling_them() -> None:
    broker = _broker(producer_inactivity_timeout_ms=3_000, snapshot_frequency_ms=1_000)
    broker.advance(1_500)
    assert (broker.housekeeping.purges, broker.housekeeping.snapshot_checks) == (1, 1)
    broker.restart()  # at 1.5 s: the next runs are at 2.5 s, 3.5 s, ...
    broker.advance(900)
    assert (broker.housekeeping.purges, broker.housekeeping.snapshot_checks) == (1, 1)
    broker.advance(2_100)  # 4.5 s: runs at 2.5, 3.5, 4.5
    assert (broker.housekeeping.purges, broker.housekeeping.snapshot_checks) == (4, 4)


def test_brokers_sharing_a_clock_each_run_their_own_tasks() -> None:
    clock = SimClock()
    first = _broker(clock, producer_inactivity_timeout_ms=3_000)
    clock.advance(500)
    second = _broker(clock, producer_inactivity_timeout_ms=3_000)  # starts half a period later
    clock.advance(999)
    assert (first.housekeeping.purges, second.housekeeping.purges) == (1, 0)
    clock.advance(1)  # 1.5 s: the second broker's first run
    assert (first.housekeeping.purges, second.housekeeping.purges) == (1, 1)


def test_a_zero_interval_disables_a_task() -> None:
    broker = _broker(producer_inactivity_timeout_ms=0, snapshot_frequency_ms=0)
    broker.advance(1_000_000)
    assert (broker.housekeeping.purges, broker.housekeeping.snapshot_checks) == (0, 0)


def test_broker_conf_names_set_the_periods_in_pulsar_units() -> None:
    config = BrokerConfig.from_broker_conf(
        {
            "brokerDeduplicationEnabled": True,
            "brokerDeduplicationProducerInactivityTimeoutMinutes": 3,
            "brokerDeduplicationSnapshotFrequencyInSeconds": 10,
            "brokerDeduplicationSnapshotIntervalSeconds": 20,
        }
    )
    assert config.dedup.purge_check_interval_ms == 60_000  # a third of 3 minutes
    assert (config.dedup.snapshot_frequency_ms, config.dedup.snapshot_interval_ms) == (10_000, 20_000)
    broker = ModelBroker(config=config)
    broker.advance(60_000)
    assert (broker.housekeeping.purges, broker.housekeeping.snapshot_checks) == (1, 6)
    with pytest.raises(InvalidArgument, match="brokerDeduplicationSnapshotFrequencyInSeconds"):
        BrokerConfig.from_broker_conf({"brokerDeduplicationSnapshotFrequencyInSeconds": 1.5})
