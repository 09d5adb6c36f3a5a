"""apache/pulsar#26236 and #26268 pinned per release: look-ahead at the end of the topic, out-of-order replay.

#26236's test (``testLookAheadNotEngagedWhenCursorHasNoMoreEntries``) expects that a replay read fully discarded
at the end of the topic does not engage the look-ahead, so a replayed message for a consumer with permits is still
dispatched; before, the look-ahead skipped the next replay and the read waited at the end of the topic. #26268's
own test (``PersistentStickyKeyDispatcherMultipleConsumersTest.
testOutOfOrderReplayFilterDoesNotSpendReadBudgetOnConsumerWithoutPermits``) expects that, with
``allowOutOfOrderDelivery``, a consumer with permits gets its replayed message although an older replay position
belongs to a consumer without permits. Before the fix the older position spent the read budget, dispatch re-queued
it, the look-ahead skipped the next replay and, at the end of the topic, nothing more was read: the message starved.
Reached here through the client surface: each consumer holds one message (receiver queue 1), both ask for
redelivery, the permit-less consumer's position is the older one. Redelivered positions carry no hash
(``redeliverUnacknowledgedMessages``), so the replay filter lets the permit-less consumer's position through: it is
read and discarded at the end of the topic (#26236's state, with ordered delivery too); from #26268 a discarded
out-of-order position is re-queued with its hash and the filter skips it.
"""

from __future__ import annotations

import pytest

from reference_model.broker import ModelBroker
from reference_model.keyshared.policy import KeySharedPolicy
from reference_model.versions import LOOKAHEAD_ONLY_WITH_MORE_ENTRIES, OUT_OF_ORDER_REPLAY_FILTERED, parse_version

TOPIC, SUB = "persistent://public/default/lookahead", "sub"


def _keys_by_owner(version: str, policy: KeySharedPolicy) -> tuple[str, str]:
    """A key c1 owns and a key c2 owns (consumer names fix the AUTO_SPLIT assignment)."""
    broker = ModelBroker(pulsar_version=version)
    producer = broker.create_producer(TOPIC)
    consumers = {
        name: broker.subscribe(TOPIC, SUB, consumer_name=name, key_shared_policy=policy) for name in ("c1", "c2")
    }
    for i in range(20):
        producer.send(b"probe", partition_key=f"k{i}")
    owner: dict[str, str] = {}
    for name, consumer in consumers.items():
        while (message := consumer.receive(timeout_millis=0)) is not None:
            owner[message.partition_key()] = name
    return (
        min(k for k, v in owner.items() if v == "c1"),
        min(k for k, v in owner.items() if v == "c2"),
    )


def _replayed_message_reaches_its_consumer(version: str, *, out_of_order: bool) -> bool:
    policy = KeySharedPolicy(mode="AUTO_SPLIT", allow_out_of_order_delivery=out_of_order)
    key1, key2 = _keys_by_owner(version, policy)
    broker = ModelBroker(pulsar_version=version)
    producer = broker.create_producer(TOPIC)
    c1 = broker.subscribe(TOPIC, SUB, consumer_name="c1", key_shared_policy=policy, receiver_queue_size=1)
    c2 = broker.subscribe(TOPIC, SUB, consumer_name="c2", key_shared_policy=policy, receiver_queue_size=1)
    producer.send(b"b0", partition_key=key2)
    held2 = c2.receive(timeout_millis=0)
    assert held2 is not None and held2.data() == b"b0"
    producer.send(b"b1", partition_key=key2)  # fills c2's receiver queue: c2 has no permits from here on
    producer.send(b"a0", partition_key=key1)
    held1 = c1.receive(timeout_millis=0)
    assert held1 is not None and held1.data() == b"a0"
    c2.redeliver_unacknowledged_messages()  # b0 (the older position) to the replay queue; c2 keeps its full queue
    c1.redeliver_unacknowledged_messages()  # a0 to the replay queue; c1 has one permit
    again = c1.receive(timeout_millis=0)
    return again is not None and again.data() == b"a0"


@pytest.mark.parametrize(
    ("version", "expected"),
    [("4.0.0", False), ("4.0.12", False), ("4.0.13", False), ("4.0.14", True), ("4.0", True),
     ("4.1.3", False), ("4.2.1", False), ("4.2.4", False), ("4.2.5", True), ("4.2", True), ("5.0.0", True)],
)  # fmt: skip
def test_out_of_order_replay_starves_at_the_end_of_the_topic_before_26268(version: str, expected: bool) -> None:
    assert parse_version(version).has(OUT_OF_ORDER_REPLAY_FILTERED) is expected
    assert _replayed_message_reaches_its_consumer(version, out_of_order=True) is expected


@pytest.mark.parametrize(
    ("version", "expected"),
    [("4.0.0", False), ("4.0.12", False), ("4.0.13", True), ("4.0.14", True), ("4.1.3", False), ("4.2.3", False),
     ("4.2.4", True), ("4.2.5", True), ("5.0.0", True), ("5.0", True)],
)  # fmt: skip
def test_ordered_replay_stalls_at_the_end_of_the_topic_before_26236(version: str, expected: bool) -> None:
    assert parse_version(version).has(LOOKAHEAD_ONLY_WITH_MORE_ENTRIES) is expected
    assert _replayed_message_reaches_its_consumer(version, out_of_order=False) is expected


@pytest.mark.parametrize(
    ("version", "expected"),
    [("4.0.12", False), ("4.0.13", True), ("4.0", True), ("4.1.3", False), ("4.2.3", False), ("4.2.4", True),
     ("3.0.17", False), ("3.3.9", False)],
)  # fmt: skip
def test_lookahead_at_the_end_of_the_topic_releases(version: str, expected: bool) -> None:
    """apache/pulsar#26236: ``Release 4.0.13`` and ``Release 4.2.4`` contain it; 4.1 and 3.x never got it."""
    assert parse_version(version).has(LOOKAHEAD_ONLY_WITH_MORE_ENTRIES) is expected


@pytest.mark.parametrize(
    ("version", "out_of_order", "engages"),
    [("4.0.12", False, True), ("4.0.13", False, False), ("4.0.13", True, True), ("4.0.14", True, False),
     ("4.2.4", True, True), ("4.2.5", False, False)],
)  # fmt: skip
def test_a_triggered_lookahead_at_the_end_of_the_topic_engages_per_release(
    version: str, out_of_order: bool, engages: bool
) -> None:
    """The condition both PRs changed, asked of a dispatcher whose cursor is at the end of the topic."""
    policy = KeySharedPolicy(mode="AUTO_SPLIT", allow_out_of_order_delivery=out_of_order)
    broker = ModelBroker(pulsar_version=version)
    producer = broker.create_producer(TOPIC)
    consumer = broker.subscribe(TOPIC, SUB, consumer_name="c1", key_shared_policy=policy)
    producer.send(b"m", partition_key="k")
    assert consumer.receive(timeout_millis=0) is not None
    dispatcher = broker._topics[TOPIC].subscriptions[SUB].dispatcher
    assert dispatcher is not None
    assert dispatcher._lookahead_may_engage() is engages  # type: ignore[attr-defined]


def test_an_out_of_order_replay_queue_records_hashes_without_blocking_them() -> None:
    """#26268's ``MessageRedeliveryController`` under out-of-order delivery: ``positionToStickyKeyHash`` without
    ``hashesRefCount``: the filter can read a position's hash, nothing blocks a normal read of that hash."""
    from reference_model.keyshared.replay_queue import ReplayQueue
    from reference_model.storage.position import Position

    queue = ReplayQueue(track_hashes=True, count_hashes=False)
    assert queue.add(Position(1, 1), 7) and queue.add(Position(1, 2), 7) and queue.add(Position(1, 3))
    assert queue.slot_of(Position(1, 1)) == 7 and queue.slot_of(Position(1, 3)) is None
    assert not queue.contains_slot(7) and queue.slot_counts == {}
    assert not queue.add(Position(1, 3), 9) and queue.slot_of(Position(1, 3)) == 9  # a hash learnt at dispatch
    assert queue.remove(Position(1, 1)) and queue.remove_all_up_to(Position(1, 3)) == 2 and not queue
