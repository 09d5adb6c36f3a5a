"""Deduplication rules that changed between Pulsar releases."""

from __future__ import annotations

import pytest

from reference_model.broker import BrokerConfig, ModelBroker
from reference_model.dedup import (
    DedupConfig,
    DedupDecision,
    DedupSnapshot,
    MessageDeduplication,
    effective_deduplication,
)
from reference_model.storage.entry import MessageMetadata, SingleMessage
from reference_model.storage.position import Position

MS = 1_000_000


@pytest.mark.parametrize(
    ("version", "recorded"), [("2.10", True), ("3.0.2", True), ("3.0.3", False), ("3.1.0", True), ("3.1.1", False),
                              ("3.3", False), ("4.0", False)],
)  # fmt: skip
def test_disconnects_are_recorded_as_inactive_only_while_enabled_from_21193(version: str, recorded: bool) -> None:
    """apache/pulsar#21193 (3.0.3 / 3.1.1): ``producerRemoved`` records an inactive producer only while
    deduplication is on; before, short-lived producers filled the map with deduplication off (#21192)."""
    dedup = MessageDeduplication(DedupConfig(), version)
    dedup.set_enabled(False, now_ns=0)
    dedup.producer_disconnected("p1", now_ns=5)
    assert dedup.inactive_producers() == ({"p1": 5} if recorded else {})
    assert dedup.stats()["inactiveProducers"] == ({"p1": 5} if recorded else {})
    dedup.producer_connected("p1")
    assert dedup.inactive_producers() == {}


def test_enabled_deduplication_records_disconnects_on_every_release() -> None:
    for version in ("2.10", "3.0.2", "4.0"):
        dedup = MessageDeduplication(DedupConfig(), version)
        dedup.set_enabled(True, now_ns=0)
        dedup.producer_disconnected("p1", now_ns=5)
        assert dedup.inactive_producers() == {"p1": 5}


# -- apache/pulsar#21193: what the recovery and a purge while off do with inactivity marks ---------------------------


@pytest.mark.parametrize(("version", "marked"), [("2.10.6", True), ("3.0.2", True), ("3.0.3", False), ("3.1.0", True),
                                                 ("3.1.1", False), ("4.0", False)])  # fmt: skip
def test_recovery_marks_recovered_producers_inactive_only_before_21193(version: str, marked: bool) -> None:
    """Before #21193 the recovery's ``producerRemoved`` calls (apache/pulsar#12493) marked every producer it
    recovered, from the snapshot and from the replayed entries, inactive at the recovery time; from it they see the
    status ``Recovering`` and do nothing."""
    dedup = MessageDeduplication(DedupConfig(entries_interval=10), version)
    dedup.recover(DedupSnapshot((0, 4), {"p1": 4}), [((0, 5), "p2", 0, -1)], now_ns=7)
    assert dedup.inactive_producers() == ({"p1": 7, "p2": 7} if marked else {})
    assert dedup.pushed() == {"p1": 4, "p2": 0}


def test_before_21193_a_producer_that_never_comes_back_after_a_restart_is_forgotten() -> None:
    """Client-visible through ``last_sequence_id``: after a restart and the inactivity timeout, a producer that did
    not reconnect meanwhile is forgotten on 3.0.2 (a reconnect gets -1, its old ids are accepted again) and kept on
    3.0.3 (it was never marked: it gets its last id back)."""
    got = {}
    for version in ("3.0.2", "3.0.3"):
        broker = ModelBroker(pulsar_version=version, config=BrokerConfig(dedup=DedupConfig(broker_enabled=True)))
        producer = broker.create_producer("t", producer_name="p1")
        for i in range(3):
            producer.send(f"{i}".encode())
        producer.close()
        broker.advance(60_000)  # closed long before the restart: its own mark would expire on both
        broker.restart()
        broker.advance(broker.config.dedup.producer_inactivity_timeout_ms + broker.config.dedup.purge_check_interval_ms)
        got[version] = broker.create_producer("t", producer_name="p1").last_sequence_id()
    assert got == {"3.0.2": -1, "3.0.3": 2}


@pytest.mark.parametrize(("version", "left"), [("3.0.2", {"fresh": 30_000 * MS}), ("3.0.3", {})])
def test_a_purge_while_off_clears_every_mark_from_21193(version: str, left: dict[str, int]) -> None:
    """``testMessageDeduplication`` (from #21193): disabled, the purge clears the marks; before, it dropped only the
    expired ones, so a fresh mark stayed."""
    config = DedupConfig(producer_inactivity_timeout_ms=60_000)
    dedup = MessageDeduplication(config, version)
    dedup.set_enabled(True, now_ns=0)
    dedup.producer_disconnected("old", now_ns=0)
    dedup.producer_disconnected("fresh", now_ns=30_000 * MS)
    dedup.set_enabled(False, now_ns=30_000 * MS)
    dedup.purge_inactive(now_ns=70_000 * MS)  # "old" expired (70 s > 60 s), "fresh" not (40 s)
    assert dedup.inactive_producers() == left


# -- apache/pulsar#20948: chunked messages ---------------------------------------------------------------------------


@pytest.mark.parametrize(("version", "fixed"), [("2.10.5", False), ("2.10.6", True), ("2.11.2", False),
                                                ("2.11.3", True), ("3.0.1", False), ("3.0.2", True), ("3.1.0", False),
                                                ("3.1.1", True), ("4.0", True)])  # fmt: skip
def test_a_chunked_message_is_judged_at_its_last_chunk_from_20948(version: str, fixed: bool) -> None:
    """The chunks of one message carry its sequence id. Before #20948 each chunk was judged as a message, so the
    second chunk of message 1 (``m1-chunk-2, seqid=1`` in the PR's review) came back a duplicate and was dropped:
    the consumer could never assemble the message. From it the leading chunks are NOT_DUP and record nothing."""
    dedup = MessageDeduplication(DedupConfig(), version)
    dedup.set_enabled(True, now_ns=0)
    assert dedup.is_duplicate("p", 1, last_chunk=False) is DedupDecision.NOT_DUP
    dedup.on_persisted("p", 1, -1, (0, 0), last_chunk=False)
    assert dedup.persisted() == ({} if fixed else {"p": 1})
    second = dedup.is_duplicate("p", 1, last_chunk=True)
    assert second is (DedupDecision.NOT_DUP if fixed else DedupDecision.DUP)
    if fixed:
        dedup.on_persisted("p", 1, -1, (0, 1))
    # the whole message sent again: its last chunk is a duplicate on every release
    assert dedup.is_duplicate("p", 1, last_chunk=True) is DedupDecision.DUP


# -- apache/pulsar#22479: snapshots after a replay, and the snapshot monitor -----------------------------------------


@pytest.mark.parametrize(("version", "fixed"), [("3.0.4", False), ("3.0.5", True), ("3.1.3", False),
                                                ("3.2.2", False), ("3.2.3", True), ("3.3.0", True),
                                                ("4.0", True)])  # fmt: skip
def test_a_recovery_counts_what_it_replayed_from_22479(version: str, fixed: bool) -> None:
    """The PR's issue 2: 999 entries, an unload, 999 more... never reached the interval of 1000, because the
    recovery started the count again at 0 and took no snapshot; from #22479 it counts and snapshots."""
    dedup = MessageDeduplication(DedupConfig(entries_interval=10), version)
    dedup.recover(DedupSnapshot((0, -1), {}), [((0, i), "p", i, -1) for i in range(12)])
    stats = dedup.stats()
    assert (stats["snapshotsTaken"], stats["snapshotCounter"]) == ((1, 0) if fixed else (0, 0))
    assert dedup.snapshot().position == ((0, 11) if fixed else (0, -1))
    short = MessageDeduplication(DedupConfig(entries_interval=10), version)
    short.recover(None, [((0, i), "p", i, -1) for i in range(7)])
    assert short.stats()["snapshotCounter"] == (7 if fixed else 0)


@pytest.mark.parametrize(("version", "fixed"), [("3.0.4", False), ("3.0.5", True), ("3.2.3", True), ("4.0", True)])
def test_the_snapshot_monitor_runs_without_the_broker_setting_from_22479(version: str, fixed: bool) -> None:
    """The PR's issue 1: with deduplication on by namespace policy only, the time-based snapshot task was never
    scheduled (``interval > 0 && isBrokerDeduplicationEnabled()``), so the ``pulsar.dedup`` cursor never moved."""
    broker = ModelBroker(pulsar_version=version)
    broker.set_namespace_deduplication(True)
    producer = broker.create_producer("t", producer_name="p")
    for i in range(3):
        producer.send(f"{i}".encode())
    broker.advance(2 * broker.config.dedup.snapshot_frequency_ms)
    moved = broker.dedup_stats("t")["cursor"]["markDeletePosition"] == "0:2"
    assert moved is fixed
    assert (broker.housekeeping.snapshot_checks > 0) is fixed


# -- apache/pulsar#22582: system topics -----------------------------------------------------------------------------


@pytest.mark.parametrize(("version", "excluded"), [("2.10.6", False), ("3.0.4", False), ("3.0.5", True),
                                                   ("3.1.3", False), ("3.2.2", False), ("3.2.3", True),
                                                   ("3.3.0", True), ("4.0", True)])  # fmt: skip
def test_system_topics_follow_the_policies_before_22582(version: str, excluded: bool) -> None:
    for topic in ("persistent://tenant/ns/__change_events", "persistent://tenant/ns/__change_events-partition-0",
                  "persistent://pulsar/system/transaction_coordinator_assign-partition-0"):  # fmt: skip
        assert effective_deduplication(topic_policy=True, topic=topic, version=version) is not excluded, topic
    # non-persistent topics have no deduplication on any release
    assert effective_deduplication(topic_policy=True, topic="non-persistent://t/n/x", version=version) is False


# -- apache/pulsar#23697: replicated messages -----------------------------------------------------------------------

_CLUSTER_DEDUP = BrokerConfig(dedup=DedupConfig(broker_enabled=True))


@pytest.mark.parametrize(("version", "by_position"), [("3.0.10", False), ("3.0.11", True), ("3.3.4", False),
                                                      ("3.3.5", True), ("4.0.2", False), ("4.0.3", True),
                                                      ("4.1", True)])  # fmt: skip
def test_replicated_messages_are_judged_by_their_source_position_from_23697(version: str, by_position: bool) -> None:
    """A local producer ``p`` in r2 and a producer of the same name in r1 both send ids 0..4. Before #23697 the
    message replicated from r1 is judged by its original name and id, at or below what the local ``p`` pushed, and
    dropped: geo-replication lost it. From it the replicator's source position decides, per replicator."""
    broker = ModelBroker(pulsar_version=version, cluster="r2", config=_CLUSTER_DEDUP)
    local = broker.create_producer("t", producer_name="p")
    for i in range(5):
        local.send(f"local-{i}".encode())
    md = MessageMetadata("p", 2)
    msgs = (SingleMessage(b"remote-2", 2),)
    first = broker.append_replicated("t", md, msgs, replicated_from="r1", source_position=(9, 2))
    again = broker.append_replicated("t", md, msgs, replicated_from="r1", source_position=(9, 2))
    later = broker.append_replicated(
        "t", MessageMetadata("p", 3), (SingleMessage(b"remote-3", 3),), replicated_from="r1", source_position=(9, 3)
    )
    if by_position:
        assert (first, again, later) == (Position(0, 5), Position(-1, -1), Position(0, 6))
        pushed = broker.dedup_stats("t")["highestSequencedPushed"]
        assert (pushed["pulsar.repl.r1-->r2_LID"], pushed["pulsar.repl.r1-->r2_EID"], pushed["p"]) == (9, 3, 4)
    else:
        assert (first, again, later) == (Position(-1, -1), Position(-1, -1), Position(-1, -1))


def test_without_a_source_position_replicated_messages_are_judged_by_their_producer() -> None:
    """The V1 path stays for a sender that gives no source position (an older remote broker)."""
    broker = ModelBroker(pulsar_version="4.0", cluster="r2", config=_CLUSTER_DEDUP)
    md = MessageMetadata("p1", 7)
    msgs = (SingleMessage(b"v", 7),)
    assert broker.append_replicated("t", md, msgs, replicated_from="r1") == Position(0, 0)
    assert broker.append_replicated("t", md, msgs, replicated_from="r1") == Position(-1, -1)


# -- apache/pulsar#15206: what a purge does with the marks it does not expire ----------------------------------------


@pytest.mark.parametrize(("version", "fixed"), [("2.10.0", False), ("2.10.1", True), ("2.10.6", True), ("4.0", True)])
def test_a_purge_keeps_the_marks_it_does_not_expire_from_15206(version: str, fixed: bool) -> None:
    """``MessageDuplicationTest.testInactiveProducerRemove`` (timeout 1 minute): three producers pushed 2, all
    three disconnect; the first purge expires nobody and must keep the 3 marks (from #15206); 70 s later the purge
    forgets test2 and test3 and snapshots. On 2.10.0 the first purge dropped all three marks, so test2 and test3
    were never forgotten (``last_sequence_id`` stays 2 forever) and no snapshot was taken."""
    config = DedupConfig(entries_interval=10, max_producers=10, producer_inactivity_timeout_ms=60_000)
    dedup = MessageDeduplication(config, version)
    dedup.set_enabled(True, now_ns=0)
    for name in ("test1", "test2", "test3"):
        assert dedup.is_duplicate(name, 1, 2) is DedupDecision.NOT_DUP
    dedup.producer_disconnected("test1", now_ns=60_000 * MS)
    dedup.producer_disconnected("test2", now_ns=0)
    dedup.producer_disconnected("test3", now_ns=0)
    dedup.purge_inactive(now_ns=10_000 * MS)
    assert len(dedup.inactive_producers()) == (3 if fixed else 0)
    dedup.purge_inactive(now_ns=70_000 * MS)
    assert ("test2" in dedup.pushed(), "test3" in dedup.pushed()) == ((False, False) if fixed else (True, True))
    assert dedup.pushed()["test1"] == 2
    assert dedup.stats()["snapshotsTaken"] == (1 if fixed else 0)
