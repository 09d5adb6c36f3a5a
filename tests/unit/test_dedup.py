"""MessageDeduplication against Apache Pulsar's ``MessageDuplicationTest`` (interval 10, max producers 10).

Each test names the Pulsar test it follows. The maps are read through ``pushed()`` / ``persisted()``, the
model's view of ``highestSequencedPushed`` / ``highestSequencedPersisted``.
"""

from __future__ import annotations

import pytest

from reference_model.dedup import (
    DedupConfig,
    DedupDecision,
    DedupSnapshot,
    MessageDeduplication,
)
from reference_model.errors import InvalidArgument

MINUTE_NS = 60 * 1_000_000_000
CONFIG = DedupConfig(entries_interval=10, max_producers=10)


def enabled(config: DedupConfig = CONFIG) -> MessageDeduplication:
    dedup = MessageDeduplication(config)
    dedup.set_enabled(True, now_ns=0)
    return dedup


def test_defaults_are_pulsars() -> None:
    config = DedupConfig()
    assert config.entries_interval == 1000
    assert config.max_producers == 10000
    assert config.producer_inactivity_timeout_ms == 360 * 60_000
    assert config.snapshot_frequency_ms == 120_000
    assert config.snapshot_interval_ms == 120_000
    assert config.broker_enabled is False
    assert config.purge_check_interval_ms == 120 * 60_000


def test_is_duplicate_sequence() -> None:
    """``testIsDuplicate``: NotDup / Unknown / Dup, and highest_sequence_id."""
    dedup = enabled()
    assert dedup.is_duplicate("producer1", 0) is DedupDecision.NOT_DUP
    assert dedup.pushed()["producer1"] == 0
    assert dedup.is_duplicate("producer2", 1) is DedupDecision.NOT_DUP
    assert dedup.pushed()["producer2"] == 1
    assert dedup.is_duplicate("producer1", 1) is DedupDecision.NOT_DUP
    assert dedup.pushed()["producer1"] == 1
    assert dedup.is_duplicate("producer1", 5) is DedupDecision.NOT_DUP
    assert dedup.pushed()["producer1"] == 5
    # Nothing persisted yet: an id at or below pushed cannot be judged.
    assert dedup.is_duplicate("producer1", 0) is DedupDecision.UNKNOWN
    assert dedup.pushed()["producer1"] == 5
    # Once 0 is persisted, 0 is a sure duplicate.
    dedup.on_persisted("producer1", 0, -1, (0, 1))
    assert dedup.is_duplicate("producer1", 0) is DedupDecision.DUP
    assert dedup.pushed()["producer1"] == 5


def test_is_duplicate_with_highest_sequence_id() -> None:
    """``testIsDuplicate`` second half: pushed = persisted = 0; (1, 5) NotDup -> pushed 5; (4, 8) Unknown."""
    dedup = enabled()
    dedup.is_duplicate("producer1", 0)
    dedup.on_persisted("producer1", 0, -1, (0, 1))
    assert dedup.pushed()["producer1"] == 0 and dedup.persisted()["producer1"] == 0
    assert dedup.is_duplicate("producer1", 1, 5) is DedupDecision.NOT_DUP
    assert dedup.pushed()["producer1"] == 5
    assert dedup.is_duplicate("producer1", 4, 8) is DedupDecision.UNKNOWN
    assert dedup.pushed()["producer1"] == 5


def test_highest_below_sequence_id_is_ignored() -> None:
    """``ServerCnx.handleSend`` uses ``highest_sequence_id`` only when it is >= ``sequence_id``."""
    dedup = enabled()
    assert dedup.is_duplicate("p", 7, 3) is DedupDecision.NOT_DUP
    assert dedup.pushed()["p"] == 7


def test_inactive_producer_remove() -> None:
    """``testInactiveProducerRemove`` with the inactivity timeout at 1 minute."""
    dedup = enabled(DedupConfig(entries_interval=10, max_producers=10, producer_inactivity_timeout_ms=60_000))
    for name in ("test1", "test2", "test3"):
        assert dedup.is_duplicate(name, 1, 2) is DedupDecision.NOT_DUP
    start = 10 * MINUTE_NS
    for name in ("test1", "test2", "test3"):
        dedup.producer_disconnected(name, now_ns=start - 1)
    # Just closed: nobody is past the timeout yet.
    dedup.purge_inactive(now_ns=start)
    assert set(dedup.inactive_producers()) == {"test1", "test2", "test3"}
    dedup.producer_disconnected("test1", now_ns=start)
    dedup.producer_disconnected("test2", now_ns=start - 80 * 1_000_000_000)
    dedup.producer_disconnected("test3", now_ns=start - 70 * 1_000_000_000)
    # test1 left just now; test2 80 s ago, test3 70 s ago: both past the 60 s timeout.
    dedup.purge_inactive(now_ns=start)
    assert set(dedup.inactive_producers()) == {"test1"}
    assert dedup.pushed() == {"test1": 2}
    # A purge a minute later (and a bit) forgets test1 too.
    dedup.purge_inactive(now_ns=start + MINUTE_NS + 1)
    assert dedup.inactive_producers() == {} and dedup.pushed() == {}


def test_inactive_producer_kept_at_exact_timeout() -> None:
    """The purge removes producers inactive since strictly before ``now - timeout``."""
    dedup = enabled(DedupConfig(producer_inactivity_timeout_ms=60_000))
    dedup.is_duplicate("p", 1)
    dedup.producer_disconnected("p", now_ns=0)
    dedup.purge_inactive(now_ns=MINUTE_NS)
    assert dedup.pushed() == {"p": 1}
    dedup.purge_inactive(now_ns=MINUTE_NS + 1)
    assert dedup.pushed() == {}


def test_reconnect_removes_inactivity_mark() -> None:
    dedup = enabled(DedupConfig(producer_inactivity_timeout_ms=60_000))
    dedup.is_duplicate("p", 4)
    dedup.on_persisted("p", 4, -1, (0, 0))
    dedup.producer_disconnected("p", now_ns=0)
    assert dedup.producer_connected("p") == 4
    dedup.purge_inactive(now_ns=10 * MINUTE_NS)
    assert dedup.pushed() == {"p": 4}


def test_purge_takes_snapshot_without_forgotten_producers() -> None:
    """``purgeInactiveProducers`` snapshots at the cursor's mark-delete position once it forgot someone."""
    dedup = enabled(DedupConfig(entries_interval=2, producer_inactivity_timeout_ms=60_000))
    for seq, name in enumerate(("a", "b")):
        dedup.is_duplicate(name, seq)
        dedup.on_persisted(name, seq, -1, (0, seq))
    assert dedup.snapshot() == DedupSnapshot((0, 1), {"a": 0, "b": 1})
    dedup.producer_disconnected("a", now_ns=0)
    dedup.purge_inactive(now_ns=2 * MINUTE_NS)
    assert dedup.snapshot() == DedupSnapshot((0, 1), {"b": 1})


def test_is_duplicate_with_failure() -> None:
    """``testIsDuplicateWithFailure``: the publish path of ``PersistentTopic`` around dedup."""
    dedup = enabled()
    written: list[tuple[str, int]] = []

    def publish(name: str, seq: int, position: tuple[int, int] | None) -> DedupDecision:
        decision = dedup.is_duplicate(name, seq)
        if decision is DedupDecision.NOT_DUP:
            written.append((name, seq))
            if position is not None:
                dedup.on_persisted(name, seq, -1, position)
        return decision

    publish("producer1", 0, (0, 1))
    assert dedup.pushed()["producer1"] == 0 and dedup.persisted()["producer1"] == 0
    publish("producer2", 1, (0, 2))
    assert dedup.pushed()["producer2"] == 1 and dedup.persisted()["producer2"] == 1
    publish("producer1", 1, (0, 3))
    publish("producer1", 5, (0, 4))
    assert dedup.pushed()["producer1"] == 5 and dedup.persisted()["producer1"] == 5
    assert len(written) == 4
    # A duplicate is answered -1:-1 and not written.
    assert publish("producer1", 0, None) is DedupDecision.DUP
    assert len(written) == 4
    # Seq 6 is written but its write does not complete yet.
    assert publish("producer1", 6, None) is DedupDecision.NOT_DUP
    assert dedup.pushed()["producer1"] == 6 and dedup.persisted()["producer1"] == 5
    # The same message again: in flight, so unknown (PersistenceError), not written.
    assert publish("producer1", 6, None) is DedupDecision.UNKNOWN
    assert len(written) == 5
    dedup.on_persisted("producer1", 6, -1, (0, 5))
    # Seq 7 is written, then the write fails: pushed is reset to persisted.
    assert publish("producer1", 7, None) is DedupDecision.NOT_DUP
    dedup.on_write_failed()
    assert dedup.pushed() == {"producer1": 6, "producer2": 1}
    assert dedup.persisted() == {"producer1": 6, "producer2": 1}
    # 6 is now a sure duplicate; 8 goes through.
    assert publish("producer1", 6, None) is DedupDecision.DUP
    assert publish("producer1", 8, (0, 5)) is DedupDecision.NOT_DUP
    assert dedup.pushed()["producer1"] == 8 and dedup.persisted()["producer1"] == 8


def test_resend_after_failure_is_accepted() -> None:
    """The id whose write failed is accepted again, so the client's resend is stored exactly once."""
    dedup = enabled()
    dedup.is_duplicate("p", 1)
    dedup.on_persisted("p", 1, -1, (0, 0))
    assert dedup.is_duplicate("p", 2) is DedupDecision.NOT_DUP
    dedup.on_write_failed()
    assert dedup.is_duplicate("p", 2) is DedupDecision.NOT_DUP


def test_disable_via_policy_then_purge_clears() -> None:
    """``testMessageDeduplication``: a closed producer becomes inactive; disable, then purge clears the marks."""
    dedup = enabled()
    assert dedup.producer_connected("test-producer") == -1
    assert "test-producer" not in dedup.inactive_producers()
    dedup.producer_disconnected("test-producer", now_ns=5)
    assert "test-producer" in dedup.inactive_producers()
    dedup.set_enabled(False, now_ns=10)
    assert dedup.status == "Disabled" and not dedup.enabled
    assert "test-producer" in dedup.inactive_producers()
    dedup.purge_inactive(now_ns=20)
    assert dedup.inactive_producers() == {}


def test_disabled_accepts_everything_and_forgets() -> None:
    dedup = enabled()
    dedup.is_duplicate("p", 3)
    dedup.on_persisted("p", 3, -1, (0, 0))
    dedup.set_enabled(False, now_ns=0)
    assert dedup.pushed() == {} and dedup.persisted() == {}
    assert dedup.producer_connected("p") == -1
    assert dedup.is_duplicate("p", 3) is DedupDecision.NOT_DUP
    assert dedup.is_duplicate("p", 3) is DedupDecision.NOT_DUP
    assert dedup.snapshot() == DedupSnapshot(None, {})
    # Enabled again: a new cursor, empty maps, so id 3 is new once more.
    dedup.set_enabled(True, now_ns=0, cursor_position=(0, 9))
    assert dedup.is_duplicate("p", 3) is DedupDecision.NOT_DUP
    assert dedup.is_duplicate("p", 3) is DedupDecision.UNKNOWN
    assert dedup.snapshot() == DedupSnapshot((0, 9), {})


def test_status_names_follow_pulsar() -> None:
    dedup = MessageDeduplication()
    assert dedup.status == "Initialized" and not dedup.enabled
    assert dedup.is_duplicate("p", 1) is DedupDecision.NOT_DUP
    assert dedup.pushed() == {}
    dedup.set_enabled(False, now_ns=0)
    assert dedup.status == "Disabled"
    dedup.set_enabled(True, now_ns=0)
    assert dedup.status == "Enabled" and dedup.enabled
    dedup.set_enabled(True, now_ns=0)
    assert dedup.status == "Enabled"
    assert dedup.stats()["deduplicationStatus"] == "Enabled"


def test_markers_and_leading_chunks_are_not_judged() -> None:
    dedup = enabled()
    assert dedup.is_duplicate("pulsar.marker", 0, marker=True) is DedupDecision.NOT_DUP
    assert dedup.is_duplicate("p", 4, last_chunk=False) is DedupDecision.NOT_DUP
    assert dedup.pushed() == {}
    dedup.on_persisted("pulsar.marker", 0, -1, (0, 0), marker=True)
    dedup.on_persisted("p", 4, -1, (0, 1), last_chunk=False)
    assert dedup.persisted() == {}
    assert dedup.stats()["snapshotCounter"] == 1  # the chunk counts as an entry, the marker does not


def test_snapshot_every_entries_interval() -> None:
    dedup = enabled()
    for i in range(9):
        dedup.is_duplicate("p", i)
        dedup.on_persisted("p", i, -1, (3, i))
    assert dedup.snapshot().position == (-1, -1)
    dedup.is_duplicate("p", 9)
    dedup.on_persisted("p", 9, -1, (3, 9))
    assert dedup.snapshot() == DedupSnapshot((3, 9), {"p": 9})
    assert dedup.stats()["snapshotCounter"] == 0


def test_snapshot_holds_at_most_max_producers() -> None:
    dedup = enabled(DedupConfig(entries_interval=12, max_producers=10))
    for i in range(12):
        name = f"p{i:02d}"
        dedup.is_duplicate(name, 1)
        dedup.on_persisted(name, 1, -1, (0, i))
    snap = dedup.snapshot()
    assert len(snap.sequence_ids) == 10
    assert list(snap.sequence_ids) == sorted(snap.sequence_ids)


def test_timed_snapshot() -> None:
    """``takeSnapshot()``: interval passed and the topic moved past the cursor."""
    second = 1_000_000_000
    dedup = enabled(DedupConfig(snapshot_interval_ms=120_000))
    assert not dedup.take_timed_snapshot(now_ns=200 * second, last_position=None)
    dedup.is_duplicate("p", 1)
    dedup.on_persisted("p", 1, -1, (0, 0))
    assert dedup.take_timed_snapshot(now_ns=200 * second, last_position=(0, 0))
    assert dedup.snapshot() == DedupSnapshot((0, 0), {"p": 1})
    dedup.is_duplicate("p", 2)
    dedup.on_persisted("p", 2, -1, (0, 1))
    assert not dedup.take_timed_snapshot(now_ns=300 * second, last_position=(0, 1))  # only 100 s later
    assert dedup.take_timed_snapshot(now_ns=320 * second, last_position=(0, 1))
    assert not dedup.take_timed_snapshot(now_ns=500 * second, last_position=(0, 1))  # nothing new
    off = enabled(DedupConfig(snapshot_interval_ms=0))
    off.is_duplicate("p", 1)
    off.on_persisted("p", 1, -1, (0, 0))
    assert not off.take_timed_snapshot(now_ns=10**15, last_position=(0, 0))


def test_recovery_replays_after_snapshot_last_entry_wins() -> None:
    """``replayCursor``: properties into both maps, then every later entry; the last entry of a producer wins."""
    dedup = MessageDeduplication(CONFIG)
    dedup.recover(
        DedupSnapshot((0, 4), {"a": 10, "b": 3}),
        [((0, 5), "a", 12, -1), ((0, 6), "c", 1, 4), ((0, 7), "a", 11, -1)],
    )
    assert dedup.status == "Enabled"
    assert dedup.pushed() == {"a": 11, "b": 3, "c": 4}
    assert dedup.persisted() == dedup.pushed()
    assert dedup.producer_connected("c") == 4
    assert dedup.is_duplicate("a", 11) is DedupDecision.DUP
    assert dedup.is_duplicate("a", 12) is DedupDecision.NOT_DUP
    # Recovered producers are not marked inactive (producerRemoved is a no-op while Recovering).
    assert dedup.inactive_producers() == {}
    assert dedup.stats()["snapshotCounter"] == 3


def test_recovery_snapshots_after_long_replay() -> None:
    dedup = MessageDeduplication(CONFIG)
    dedup.recover(None, [((1, i), "p", i, -1) for i in range(10)])
    assert dedup.snapshot() == DedupSnapshot((1, 9), {"p": 9})


def test_restart_round_trip() -> None:
    """What a broker restart does: keep the snapshot, rebuild, replay what came after it."""
    log: list[tuple[tuple[int, int], str, int, int]] = []
    before = enabled()
    for i in range(13):
        assert before.is_duplicate("p", i) is DedupDecision.NOT_DUP
        before.on_persisted("p", i, -1, (0, i))
        log.append(((0, i), "p", i, -1))
    saved = before.snapshot()
    assert saved.position == (0, 9)
    after = MessageDeduplication(CONFIG)
    after.recover(saved, [e for e in log if saved.position is not None and e[0] > saved.position])
    assert after.pushed() == before.pushed() == {"p": 12}
    assert after.producer_connected("p") == 12
    assert after.is_duplicate("p", 5) is DedupDecision.DUP


def test_stats_are_json_safe_and_sorted() -> None:
    import json

    dedup = enabled()
    dedup.is_duplicate("b", 1)
    dedup.is_duplicate("a", 2)
    stats = dedup.stats()
    assert list(stats["highestSequencedPushed"]) == ["a", "b"]
    assert stats["cursor"] == {"name": "pulsar.dedup", "markDeletePosition": "-1:-1", "properties": {}}
    json.dumps(stats)
    assert "pushed={'a': 2, 'b': 1}" in repr(dedup)


@pytest.mark.parametrize(
    ("call", "fragment"),
    [
        (lambda d: d.is_duplicate("p", "1"), "sequence_id='1'"),
        (lambda d: d.is_duplicate("p", 1, 2.0), "highest_sequence_id=2.0"),
        (lambda d: d.on_persisted("p", 1, -1, (0,)), "position=(0,)"),
        (lambda d: d.on_persisted("p", 1, -1, [0, 1]), "position=[0, 1]"),
        (lambda d: d.set_enabled("yes", now_ns=0), "enabled='yes'"),
        (lambda d: d.set_enabled(True, now_ns=0.5), "now_ns=0.5"),
        (lambda d: d.set_enabled(True, now_ns=0, cursor_position=(0, True)), "cursor_position=(0, True)"),
        (lambda d: d.producer_disconnected("p", now_ns=None), "now_ns=None"),
        (lambda d: d.recover({"p": 1}, []), "snapshot={'p': 1}"),
        (lambda d: d.recover(None, [((0, 0), "p", 1)]), "entry 0"),
        (lambda d: d.recover(None, [((0, 0), "p", 1, "x")]), "entries[0].highest_sequence_id='x'"),
        (lambda d: d.take_timed_snapshot(now_ns=10**15, last_position="0:1"), "last_position='0:1'"),
    ],
)
def test_invalid_arguments_name_the_value(call, fragment) -> None:
    dedup = enabled()
    with pytest.raises(InvalidArgument) as info:
        call(dedup)
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"entries_interval": "10"}, "entries_interval='10'"),
        ({"max_producers": -1}, "max_producers=-1"),
        ({"snapshot_interval_ms": True}, "snapshot_interval_ms=True"),
        ({"broker_enabled": 1}, "broker_enabled=1"),
    ],
)
def test_invalid_config(kwargs, fragment) -> None:
    with pytest.raises(InvalidArgument) as info:
        DedupConfig(**kwargs)
    assert fragment in str(info.value)


def test_config_must_be_a_dedup_config() -> None:
    with pytest.raises(InvalidArgument, match="Expected a DedupConfig"):
        MessageDeduplication({"entries_interval": 10})  # type: ignore[arg-type]
