"""The classic dispatcher's gates, per release: #23795 (sort), #23802 (no joiner while a rewind is pending), #24634
(the sort check compares the last two), #22245 (replay filter, normal-read condition), and the replay read a
removal leaves in flight.

Pulsar's own expectations come from ``pulsar_vectors.RECENTLY_JOINED_SORT``; the rest is what the release source
does, read at the releases named in each test (``reference_model/versions.py`` has the sources).
"""

from __future__ import annotations

import pytest
from pulsar_vectors import RECENTLY_JOINED_SORT, RecentlyJoinedSortVector
from test_dispatch_classic import Harness, future_keys

from reference_model.broker import ModelBroker, ModelConsumer
from reference_model.keyshared.classic import REMOVAL_REPLAY_READ_MS, record_joiner
from reference_model.storage import Position
from reference_model.versions import parse_version

TOPIC, SUB = "persistent://public/default/classic-gates", "sub"


def _joins(version: str, joins: tuple[tuple[str, tuple[int, int]], ...]) -> tuple[list[tuple[str, Position]], int]:
    joined: dict[str, Position] = {}
    sorts = sum(record_joiner(joined, name, Position(*at), parse_version(version)) for name, at in joins)
    return list(joined.items()), sorts


@pytest.mark.parametrize(
    ("vector", "version"),
    [(v, release) for v in RECENTLY_JOINED_SORT for release in v.read_at],
    ids=lambda x: x if isinstance(x, str) else x.test.split(".")[-1],
)
def test_pulsars_recently_joined_sort_expectations(vector: RecentlyJoinedSortVector, version: str) -> None:
    joined, sorts = _joins(version, vector.joins)
    assert joined == [(name, Position(*at)) for name, at in vector.expected]
    if vector.sorts is not None:
        assert sorts == vector.sorts


# apache/pulsar#24634's description: with joiners at 1, 2, 3 the check as shipped in 3.0.9-3.0.13, 3.3.4-3.3.8 and
# 4.0.2-4.0.6 (and 4.1.0) compares the third with the second the wrong way round and sorts an ordered map.
@pytest.mark.parametrize(
    ("version", "sorts"),
    [("3.0.8", 0), ("3.0.9", 1), ("3.0.13", 1), ("3.0.14", 0), ("3.3.8", 1), ("3.3.9", 0), ("4.0.6", 1), ("4.0.7", 0),
     ("4.1.0", 1), ("4.1.1", 0)],
)  # fmt: skip
def test_the_first_sort_check_sorted_three_ordered_joiners(version: str, sorts: int) -> None:
    joined, done = _joins(version, (("a", (1, 1)), ("b", (1, 2)), ("c", (1, 3))))
    assert done == sorts
    assert [name for name, _ in joined] == ["a", "b", "c"]


# Same loop: with two joiners it never compares, with three it misses a third joiner below the second.
@pytest.mark.parametrize(
    ("version", "two", "three"),
    [("3.0.8", ["hi", "lo"], ["a", "hi", "lo"]), ("3.0.9", ["hi", "lo"], ["a", "hi", "lo"]),
     ("4.0.6", ["hi", "lo"], ["a", "hi", "lo"]), ("3.0.14", ["lo", "hi"], ["a", "lo", "hi"]),
     ("4.0.7", ["lo", "hi"], ["a", "lo", "hi"]), ("4.2.1", ["lo", "hi"], ["a", "lo", "hi"])],
)  # fmt: skip
def test_a_joiner_below_the_previous_one_is_sorted_only_by_the_fixed_check(
    version: str, two: list[str], three: list[str]
) -> None:
    assert [n for n, _ in _joins(version, (("hi", (1, 9)), ("lo", (1, 2))))[0]] == two
    assert [n for n, _ in _joins(version, (("a", (1, 1)), ("hi", (1, 9)), ("lo", (1, 2))))[0]] == three


def _everyone_leaves_while_a_replay_read_is_in_flight(version: str) -> tuple[ModelBroker, dict[str, str]]:
    """Three consumers hold their messages and close in one instant: c1's close issues a replay read that is still
    in flight when c3, the last, leaves; c4 then joins with the rewind pending, and c5 after it."""
    broker = ModelBroker(pulsar_version=version, implementation="classic")
    producer = broker.create_producer(TOPIC)
    holders = [broker.subscribe(TOPIC, SUB, consumer_name=f"c{i}", consumer_type="Key_Shared") for i in (1, 2, 3)]
    for i in range(30):
        producer.send(str(i).encode(), partition_key=f"key-{i % 6}")
    for consumer in holders:
        while consumer.receive(0) is not None:
            pass
    for consumer in holders:
        consumer.close()
    dispatcher = broker._dispatcher(TOPIC, SUB)
    assert dispatcher.has_pending_read  # c1's replay read
    broker.subscribe(TOPIC, SUB, consumer_name="c4", consumer_type="Key_Shared", receiver_queue_size=5)
    assert dispatcher.should_rewind  # the rewind waits for the read (every release)
    broker.subscribe(TOPIC, SUB, consumer_name="c5", consumer_type="Key_Shared", receiver_queue_size=5)
    joined = broker.topic_stats(TOPIC)["subscriptions"][SUB]["consumersAfterMarkDeletePosition"]
    return broker, joined


@pytest.mark.parametrize(
    ("version", "recorded"),
    [("2.10.6", True), ("3.0.8", True), ("3.0.9", False), ("3.3.3", True), ("3.3.4", False), ("4.0.1", True),
     ("4.0.2", False), ("4.2.1", False)],
)  # fmt: skip
def test_a_joiner_is_recorded_while_a_rewind_is_pending_only_before_23802(version: str, recorded: bool) -> None:
    _broker, joined = _everyone_leaves_while_a_replay_read_is_in_flight(version)
    assert joined == ({"c5": "0:30"} if recorded else {})


def test_the_replay_read_a_removal_issues_completes_when_the_clock_moves() -> None:
    broker = ModelBroker(pulsar_version="3.0", implementation="classic")
    producer = broker.create_producer(TOPIC)
    c1 = broker.subscribe(TOPIC, SUB, consumer_name="c1", consumer_type="Key_Shared")
    c2 = broker.subscribe(TOPIC, SUB, consumer_name="c2", consumer_type="Key_Shared")
    for i in range(20):
        producer.send(str(i).encode(), partition_key=f"key-{i % 5}")
    held = 0
    while c1.receive(0) is not None:
        held += 1
    assert held > 0
    while (msg := c2.receive(0)) is not None:
        c2.acknowledge(msg)
    c1.close()
    dispatcher = broker._dispatcher(TOPIC, SUB)
    assert dispatcher.has_pending_read and c2.receive(0) is None  # in flight: nothing yet
    broker.advance(REMOVAL_REPLAY_READ_MS)
    assert not dispatcher.has_pending_read
    got = 0
    while c2.receive(0) is not None:
        got += 1
    assert got == held  # c1's messages, replayed to c2


# apache/pulsar#22245 (3.0.5, 3.3.0; never in 2.10, 2.11, 3.1, 3.2): the replay filter and the normal-read condition.
REPLAY_FILTER = [("2.10.6", False), ("2.11.4", False), ("3.0.4", False), ("3.0.5", True), ("3.2.4", False),
                 ("3.3.0", True), ("4.0.14", True)]  # fmt: skip


@pytest.mark.parametrize(("version", "filtered"), REPLAY_FILTER)
def test_replay_positions_a_joiner_cannot_take_are_read_again_only_before_22245(version: str, filtered: bool) -> None:
    h = Harness(version)
    c1 = h.consumer("c1")
    [k] = future_keys(h, "c2", 1)
    h.publish(b"x0", b"x1")  # held at c1: c2 will be a recent joiner
    h.consumer("c2")
    [p] = h.publish(k)  # at or above c2's join position: it waits in the replay queue
    assert p in h.dispatcher.replay and h.sent["c2"] == []
    before = h.dispatcher.entries_replayed
    h.dispatcher.read_more_entries()
    assert h.dispatcher.entries_replayed - before == (0 if filtered else 1)  # read and discarded again
    assert h.sent["c2"] == [] and c1.permits > 0


@pytest.mark.parametrize(("version", "filtered"), REPLAY_FILTER)
def test_a_normal_read_needs_a_consumer_that_is_not_a_recent_joiner_from_22245(version: str, filtered: bool) -> None:
    h = Harness(version)
    c1 = h.consumer("c1", permits=2)
    h.publish(b"x0", b"x1")  # c1 holds both and has no permits left
    c2 = h.consumer("c2")
    assert c2 in (h.dispatcher.recently_joined or {}) and c1.permits == 0
    read_from = h.cursor.read_position
    h.publish(b"y")
    assert (h.cursor.read_position == read_from) is filtered


@pytest.mark.parametrize(("version", "bounded"), [(v, f) for v, f in REPLAY_FILTER if v != "2.11.4"])
def test_pulsars_no_repeated_read_and_discard_holds_only_from_22245(version: str, bounded: bool) -> None:
    """``KeySharedSubscriptionTest.testNoRepeatedReadAndDiscard`` came with #22245: c1 (queue 10) gets 100 messages
    over 10 keys, c2 (queue 10) joins, 100 more; everything is delivered and the replay reads stay within twice
    the messages. Before #22245 the classic dispatcher reads the joiner's replay entries again and again."""
    broker = ModelBroker(pulsar_version=version, implementation="classic")
    c1 = broker.subscribe(TOPIC, SUB, consumer_name="c1", receiver_queue_size=10)
    producer = broker.create_producer(TOPIC)
    for i in range(100):
        producer.send(str(i).encode(), partition_key=f"key-{i % 10}")
    c2 = broker.subscribe(TOPIC, SUB, consumer_name="c2", receiver_queue_size=10)
    for i in range(100, 200):
        producer.send(str(i).encode(), partition_key=f"key-{i % 10}")
    got: set[int] = set()
    for _ in range(10_000):
        progress = False
        for consumer in (c1, c2):
            while (msg := consumer.receive(0)) is not None:
                got.add(int(msg.data()))
                consumer.acknowledge(msg)
                progress = True
        if not progress:
            if broker.clock.next_due_ns() is None:
                break
            broker.advance(10)
    dispatcher = broker._dispatcher(TOPIC, SUB)
    assert got == set(range(200))
    assert (dispatcher.entries_replayed <= 2 * 200) is bounded


@pytest.mark.parametrize("version", ["3.0.9", "3.0.17", "3.3.4", "3.3.9", "4.0.2", "4.0.14", "4.2.1"])
def test_pulsars_recent_join_queue_is_in_order_after_rewind(version: str) -> None:
    """``NonEntryCacheKeySharedSubscriptionV30Test.testRecentJoinQueueIsInOrderAfterRewind`` (came with #23802; read
    in the 4.x copy, classic implementation): 300 messages with distinct keys, c1 and c2 acknowledge, c3 holds; c3
    closes (its replay read is held), c1 and c2 close, 40 consumers join while messages keep coming (300 more at
    the 11th, whose messages the first joiner keeps acknowledging); the held read is released once a joiner is
    recorded behind a read position past the first unacknowledged entry. Pulsar expects the recently joined map
    in order at the end. With #23802 nobody is recorded while the rewind waits, so the read is never released."""
    broker = ModelBroker(pulsar_version=version, implementation="classic")
    producer = broker.create_producer(TOPIC)
    sent = 0

    def publish(count: int = 1) -> None:
        nonlocal sent
        for _ in range(count):
            producer.send(str(sent).encode(), partition_key=str(sent))
            sent += 1

    def ack_all(consumer: ModelConsumer) -> None:
        while (msg := consumer.receive(0)) is not None:
            consumer.acknowledge(msg)

    first = [
        broker.subscribe(TOPIC, SUB, consumer_name=f"c{i}", receiver_queue_size=100, initial_position="Earliest")
        for i in (1, 2, 3)
    ]
    publish(300)
    ack_all(first[0])
    ack_all(first[1])
    dispatcher = broker._dispatcher(TOPIC, SUB)
    first_waiting = dispatcher.log.next_valid_position(dispatcher.cursor.mark_delete_position)
    first[2].close()
    assert dispatcher.has_pending_read
    first[0].close()
    first[1].close()
    joiners: list[ModelConsumer] = []
    released = False
    for i in range(40):
        joiners.append(broker.subscribe(TOPIC, SUB))
        publish()
        if i == 10:
            publish(300)
        if i >= 10:
            ack_all(joiners[0])
        if not released and dispatcher.recently_joined and dispatcher.cursor.read_position > first_waiting:
            released = broker.complete_pending_read(TOPIC, SUB)
    positions = list(dispatcher.recently_joined.values())
    assert positions == sorted(positions)
    assert not released and dispatcher.recently_joined_sorts == 0
