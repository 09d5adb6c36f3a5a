"""Known Key_Shared bugs of Apache Pulsar (research note §7) as scenarios: each shows the violation under the
affected version or implementation, and its absence under the fixed one.

Where a bug needs a race, the model forces the interleaving (``hold_reads`` / ``complete_pending_read`` for a read
in flight, ``interleave_replay_filter`` for an acknowledgement during replay filtering).
"""

from __future__ import annotations

import pytest
from model_helpers import App, keys_of_consumer

from reference_model.broker import BrokerConfig, KeySharedPolicy, ModelBroker, ModelMessageId
from reference_model.dedup import DedupConfig
from reference_model.selectors import ConsumerRef
from reference_model.storage.position import Position

TOPIC, SUB = "persistent://public/default/bugs", "sub"


def _probe_key(broker: ModelBroker, *, owner_now: str, owner_after: str, change) -> str:  # type: ignore[no-untyped-def]
    """A key the subscription's selector gives to ``owner_now`` now and to ``owner_after`` after ``change(probe)``."""
    sub = broker.subscription(TOPIC, SUB)
    assert sub is not None and sub.dispatcher is not None
    selector = sub.dispatcher.selector
    probe = selector.copy()
    change(probe)
    names_now = {ref.consumer_id: ref.name for ref in selector.consumers()}
    for i in range(200_000):
        key = f"key-{i}".encode()
        now, after = selector.select_key(key), probe.select_key(key)
        if now is not None and after is not None and now.name == owner_now and after.name == owner_after:
            return key.decode()
    raise AssertionError(f"no key moves from {owner_now} to {owner_after} ({names_now})")


# -- apache/pulsar#23307: the classic join rule lets a joiner overtake the previous owner -----------------------
@pytest.mark.parametrize(("implementation", "violates"), [("classic", True), ("pip379", False)])
def test_23307_classic_reorders_when_a_key_moves_to_a_joining_consumer(implementation: str, violates: bool) -> None:
    """K#0 is prefetched at c1 (queue of 1, not yet taken by the application) and K#1 waits in the replay queue
    (c1 has no permit left). c2 joins and takes K. Classic: K#1 lies below c2's join position, so c2 gets it at
    once; c1's application then processes K#0 while c2 holds K#1: two holders, and K#0 after K#1. PIP-379: K
    drains at c1 until K#0 is acknowledged; only then does K#1 reach c2."""
    broker = ModelBroker(pulsar_version="4.0", implementation=implementation)
    c0 = broker.subscribe(TOPIC, SUB, consumer_name="c0")
    c1 = broker.subscribe(TOPIC, SUB, consumer_name="c1", receiver_queue_size=1)
    key = _probe_key(
        broker, owner_now="c1", owner_after="c2", change=lambda p: p.add(ConsumerRef("c2", broker._next_consumer_id))
    )
    producer = broker.create_producer(TOPIC)
    app = App(broker)
    producer.send(b"0", partition_key=key)  # prefetched by c1
    producer.send(b"1", partition_key=key)  # c1 has no permit left: K#1 to the replay queue
    assert c1.num_prefetched() == 1
    c2 = broker.subscribe(TOPIC, SUB, consumer_name="c2")
    app.consume(c2, ack=False)  # classic: K#1 now
    app.consume(c1)  # c1's application processes K#0 and acknowledges it
    app.consume(c2, timeout_ms=20)  # PIP-379: K#1 only now
    assert {i for _, i in app.distinct()} == {0, 1}
    assert bool(app.overlap_violations) is violates
    assert bool(app.order_violations) is violates
    del c0


# -- apache/pulsar#21199: classic stalls a restarted consumer behind one unacknowledged message -----------------
@pytest.mark.parametrize(("implementation", "stalls"), [("classic", True), ("pip379", False)])
def test_21199_classic_stalls_a_restarted_consumer_while_one_message_is_unacked(
    implementation: str, stalls: bool
) -> None:
    """c1 leaves one message unacknowledged; c2 restarts and becomes a recent joiner past it: under classic it
    receives nothing new until that message is acknowledged; PIP-379 delivers c2's new keys at once."""
    broker = ModelBroker(implementation=implementation)
    c1 = broker.subscribe(TOPIC, SUB, consumer_name="c1")
    c2 = broker.subscribe(TOPIC, SUB, consumer_name="c2")
    producer = broker.create_producer(TOPIC)
    app = App(broker)
    [poison] = keys_of_consumer(broker, TOPIC, SUB, c1, 1)
    producer.send(b"0", partition_key=poison)
    failed = app.take(c1)
    assert failed is not None  # c1's application fails it and never acknowledges
    for i in range(1, 20):
        producer.send(str(i).encode(), partition_key=f"key-{i}")
    app.drain([c1, c2])
    c2.close()
    c2 = broker.subscribe(TOPIC, SUB, consumer_name="c2")
    c2_keys = keys_of_consumer(broker, TOPIC, SUB, c2, 10)
    for i in range(20, 40):
        producer.send(str(i).encode(), partition_key=c2_keys[i % 10])
    got = app.consume(c2, timeout_ms=100)
    assert (got == 0) is stalls
    app.ack(c1, failed)
    broker.run_until_idle()
    app.consume(c2, timeout_ms=100)
    assert {i for _, i in app.distinct()} >= set(range(20, 40))


# -- apache/pulsar#23795 (+#23802): classic recently-joined map out of order -> stuck -----------------------------
@pytest.mark.parametrize(("version", "stuck"), [("4.0.1", True), ("4.0.2", False), ("3.0.8", True), ("3.0.9", False)])
def test_23795_unsorted_recently_joined_consumers_stall_the_subscription(version: str, stuck: bool) -> None:
    """All consumers leave while a read is in flight, so the cursor rewind waits for the read. c5 joins with the
    old read position, the rewind happens, the re-read moves a little, c6 joins with a lower position: the map is
    ``{c5: high, c6: low}``. Removal walks the map in order and stops at c5, so c6 can never take its keys above
    its position, the mark-delete position cannot pass them, and c5 never leaves the map either: stuck. Fixed
    releases sort the map and do not record a joiner while a rewind is pending."""
    broker = ModelBroker(pulsar_version=version, implementation="classic")
    producer = broker.create_producer(TOPIC)
    app = App(broker)
    c1 = broker.subscribe(TOPIC, SUB, consumer_name="c1")
    c2 = broker.subscribe(TOPIC, SUB, consumer_name="c2")
    c3 = broker.subscribe(TOPIC, SUB, consumer_name="c3")
    for i in range(300):
        producer.send(str(i).encode(), partition_key=f"key-{i % 50}")
    held = app.take(c3)  # c3 holds its first message: the mark-delete position stays below it
    assert held is not None
    app.drain([c1, c2])
    app.consume(c3, n=10)
    broker.hold_reads(TOPIC, SUB)
    producer.send(b"300", partition_key="key-0")  # a read is issued and stays in flight
    for c in (c1, c2, c3):
        c.close()
        app.forget(c)
    c4 = broker.subscribe(TOPIC, SUB, consumer_name="c4", receiver_queue_size=5)
    c5 = broker.subscribe(TOPIC, SUB, consumer_name="c5", receiver_queue_size=5)
    assert broker.complete_pending_read(TOPIC, SUB)  # the delayed rewind happens now
    assert broker.complete_pending_read(TOPIC, SUB)  # one re-read from the first unacknowledged entry
    c6 = broker.subscribe(TOPIC, SUB, consumer_name="c6", receiver_queue_size=5)
    joined = broker.topic_stats(TOPIC)["subscriptions"][SUB]["consumersAfterMarkDeletePosition"]
    if stuck:
        positions = [tuple(int(x) for x in p.split(":")) for p in joined.values()]
        assert list(joined) == ["c5", "c6"] and positions[0] > positions[1]  # decreasing: the symptom
    broker.release_reads(TOPIC, SUB)
    app.drain([c4, c5, c6], timeout_ms=50)
    delivered = {i for _, i in app.distinct()}
    assert (delivered >= set(range(301))) is not stuck


# -- apache/pulsar#23870 (fixed by #23874 in 4.0.3): ack during replay filtering -> out of order ---------------
@pytest.mark.parametrize(("version", "out_of_order"), [("4.0.2", True), ("4.0.3", False)])
def test_23870_ack_during_replay_filtering_lets_a_later_message_overtake(version: str, out_of_order: bool) -> None:
    """K drains at c1 (K#0 unacked) while K#1 and K#2 wait in the replay queue for c2. The replay filter skips
    K#1 (still draining), then c1's ack of K#0 lands, then the filter judges K#2: before 4.0.3 it passes and
    reaches c2 before K#1."""
    broker = ModelBroker(pulsar_version=version)
    c1 = broker.subscribe(TOPIC, SUB, consumer_name="c1")
    key = _probe_key(
        broker, owner_now="c1", owner_after="c2", change=lambda p: p.add(ConsumerRef("c2", broker._next_consumer_id))
    )
    producer = broker.create_producer(TOPIC)
    app = App(broker)
    producer.send(b"0", partition_key=key)
    first = app.take(c1)
    assert first is not None
    c2 = broker.subscribe(TOPIC, SUB, consumer_name="c2", receiver_queue_size=0)
    producer.send(b"1", partition_key=key)
    producer.send(b"2", partition_key=key)
    k1 = ModelMessageId(first.message_id().ledger_id(), first.message_id().entry_id() + 1).position
    broker.interleave_replay_filter(TOPIC, SUB, lambda: app.ack(c1, first), after=k1)
    got = [app.take(c2, timeout_ms=50), app.take(c2, timeout_ms=50)]
    assert [int(m.data()) for m in got if m] == ([2, 1] if out_of_order else [1, 2])
    assert bool(app.order_violations) is out_of_order


# -- apache/pulsar#24730: STICKY selector delivered hashes in the gaps between one consumer's ranges ------------
@pytest.mark.parametrize(
    ("version", "gap_delivered"), [("4.0.6", True), ("4.0.7", False), ("3.0.13", True), ("3.0.14", False)]
)
def test_24730_sticky_gap_hashes_delivered_before_the_fix(version: str, gap_delivered: bool) -> None:
    """One STICKY consumer with [0,9999] [20000,29999] [40000,49999]: hashes 10000-19999 are nobody's."""
    broker = ModelBroker(pulsar_version=version)
    policy = KeySharedPolicy(mode="STICKY", sticky_ranges=[(0, 9999), (20000, 29999), (40000, 49999)])
    consumer = broker.subscribe(TOPIC, SUB, consumer_name="c1", key_shared_policy=policy)
    sub = broker.subscription(TOPIC, SUB)
    assert sub is not None and sub.dispatcher is not None
    slot_of = sub.dispatcher.selector.slot_of
    gap_keys = [k for k in (f"key-{i}" for i in range(3000)) if 10000 <= slot_of(k.encode()) % 65536 <= 19999][:5]
    assert gap_keys
    producer = broker.create_producer(TOPIC)
    for i, key in enumerate(gap_keys):
        producer.send(str(i).encode(), partition_key=key)
    assert (consumer.num_prefetched() == len(gap_keys)) is gap_delivered
    stats = broker.topic_stats(TOPIC)["subscriptions"][SUB]
    assert stats["msgInReplay"] == (0 if gap_delivered else len(gap_keys))  # parked, not dropped


# -- apache/pulsar#23327: same-name consumers -> keys move between *other* consumers without draining -----------
@pytest.mark.parametrize(("version", "violates"), [("3.0.6", True), ("3.0.7", False)])
def test_23327_same_name_consumers_move_keys_of_others(version: str, violates: bool) -> None:
    """Three consumers named "same". Before 3.0.7 their ring points collide and a point's consumer is
    ``list[hash % size]``: when one leaves, keys move between the two that stay, with nothing protecting the
    key's pending message, so two consumers hold it and order breaks. 3.0.7 gives same-name consumers distinct
    points (name index): only the leaving consumer's keys move."""
    broker = ModelBroker(pulsar_version=version)
    c1 = broker.subscribe(TOPIC, SUB, consumer_name="same", receiver_queue_size=1)
    c2 = broker.subscribe(TOPIC, SUB, consumer_name="same")
    c3 = broker.subscribe(TOPIC, SUB, consumer_name="same")
    sub = broker.subscription(TOPIC, SUB)
    assert sub is not None and sub.dispatcher is not None
    selector = sub.dispatcher.selector
    probe = selector.copy()
    probe.remove(ConsumerRef("same", c3.consumer_id))
    candidates = [
        f"key-{i}"
        for i in range(5000)
        if selector.select_key(f"key-{i}".encode()) == ConsumerRef("same", c1.consumer_id)
    ]
    moving = [k for k in candidates if probe.select_key(k.encode()) == ConsumerRef("same", c2.consumer_id)]
    assert bool(moving) is violates  # 3.0.7: removing c3 moves none of c1's keys
    key = (moving or candidates)[0]
    producer = broker.create_producer(TOPIC)
    app = App(broker)
    producer.send(b"0", partition_key=key)
    assert app.take(c1) is not None  # c1 holds K#0
    c3.close()
    producer.send(b"1", partition_key=key)
    app.consume(c2, ack=False)
    c1.close()
    app.forget(c1)
    app.consume(c2, timeout_ms=20)
    assert bool(app.overlap_violations) is violates
    assert bool(app.regressions) is violates


# -- apache/pulsar#23271: classic applies the joining rule to STICKY consumers -----------------------------------
@pytest.mark.parametrize(("implementation", "blocked"), [("classic", True), ("pip379", False)])
def test_23271_sticky_consumers_blocked_by_the_joining_rule_in_classic(implementation: str, blocked: bool) -> None:
    broker = ModelBroker(implementation=implementation)
    c1 = broker.subscribe(
        TOPIC, SUB, consumer_name="c1", key_shared_policy=KeySharedPolicy(mode="STICKY", sticky_ranges=[(0, 32767)])
    )
    producer = broker.create_producer(TOPIC)
    for i in range(20):
        producer.send(str(i).encode(), partition_key=f"key-{i}")  # c1's share in flight, unacknowledged
    c2 = broker.subscribe(
        TOPIC, SUB, consumer_name="c2", key_shared_policy=KeySharedPolicy(mode="STICKY", sticky_ranges=[(32768, 65535)])
    )
    sub = broker.subscription(TOPIC, SUB)
    assert sub is not None and sub.dispatcher is not None
    upper = [k for k in (f"new-{i}" for i in range(200)) if sub.dispatcher.selector.slot_of(k.encode()) > 32767][:5]
    for i, key in enumerate(upper):
        producer.send(str(100 + i).encode(), partition_key=key)
    app = App(broker)
    app.consume(c2, timeout_ms=50)
    new = [i for _, i in app.received.get("c2", []) if i >= 100]
    assert (new == []) is blocked  # classic: c2 joined with c1's messages in flight
    assert app.consume(c1) >= 1  # c1 acknowledges what it holds ...
    app.consume(c2, timeout_ms=50)
    assert sorted(i for _, i in app.received["c2"] if i >= 100) == list(range(100, 100 + len(upper)))


# -- issue #6273 behaviour (retained): a batch is accepted or dropped as a whole by its first id ----------------
def test_6273_a_batch_with_an_old_first_id_is_dropped_whole_even_with_new_ids() -> None:
    broker = ModelBroker(config=BrokerConfig(dedup=DedupConfig(broker_enabled=True)))
    producer = broker.create_producer(TOPIC, producer_name="p", batching_enabled=True)
    producer.send(b"x", sequence_id=2)
    for seq in (1, 2, 3):  # 3 is new, but the batch is judged by its first id, 1 <= 2
        producer.send_async(b"y", lambda r, m: None, sequence_id=seq)
    producer.flush()
    assert [m.sequence_id for e in broker.topic_log(TOPIC) for m in e.messages] == [2]


# -- apache/pulsar#23845 (fixed by #24736): a hash that came back and moved again never stops draining ---------
@pytest.mark.parametrize(("version", "stuck"), [("4.0.6", True), ("4.0.7", False)])
def test_23845_draining_reference_count_inflates_when_a_hash_returns_and_moves_again(version: str, stuck: bool) -> None:
    """c1 holds two messages of K. c2 joins and takes K (K drains at c1, 2 references); c2 leaves, K is c1's
    again, and nothing of K is dispatched meanwhile, so the entry is not cleared lazily. c3 joins and takes K:
    the same two pending messages are counted again (4 references). c1 acknowledges both: 2 references remain
    and K stays blocked for c3 for good. With #24736 the return to c1 releases c1's references at once."""
    broker = ModelBroker(pulsar_version=version)
    c1 = broker.subscribe(TOPIC, SUB, consumer_name="c1")
    next_id = broker._next_consumer_id
    with_c2 = _selector_probe(broker, [("add", "c2", next_id)])
    with_c3 = _selector_probe(broker, [("add", "c3", next_id + 1)])
    sub = broker.subscription(TOPIC, SUB)
    assert sub is not None and sub.dispatcher is not None
    key = next(
        k for k in (f"key-{i}" for i in range(100_000)) if _owner(with_c2, k) == "c2" and _owner(with_c3, k) == "c3"
    )
    producer = broker.create_producer(TOPIC)
    app = App(broker)
    producer.send(b"0", partition_key=key)
    producer.send(b"1", partition_key=key)
    held = [app.take(c1), app.take(c1)]
    c2 = broker.subscribe(TOPIC, SUB, consumer_name="c2")
    c2.close()
    c3 = broker.subscribe(TOPIC, SUB, consumer_name="c3")
    for m in held:
        assert m is not None
        app.ack(c1, m)
    producer.send(b"2", partition_key=key)
    broker.run_until_idle()
    got = app.consume(c3, timeout_ms=100)
    assert (got == 0) is stuck
    stats = broker.topic_stats(TOPIC)["subscriptions"][SUB]
    assert (stats["drainingHashesUnackedMessages"] == 2) is stuck  # references of messages already acknowledged


def _selector_probe(broker: ModelBroker, changes: list[tuple[str, str, int]]):  # type: ignore[no-untyped-def]
    sub = broker.subscription(TOPIC, SUB)
    assert sub is not None and sub.dispatcher is not None
    probe = sub.dispatcher.selector.copy()
    for _op, name, consumer_id in changes:
        probe.add(ConsumerRef(name, consumer_id))
    return probe


def _owner(selector, key: str) -> str | None:  # type: ignore[no-untyped-def]
    ref = selector.select_key(key.encode())
    return None if ref is None else ref.name


# -- apache/pulsar#12885 (fixed by #12890 in 2.8.3 / 2.9.1): a read completing after a close -------------------
@pytest.mark.parametrize(("version", "redone"), [("2.8.2", False), ("2.8.3", True), ("2.9.0", False), ("2.9.1", True)])
def test_12885_a_read_in_flight_when_a_consumer_closes_is_redone_after_the_replay(version: str, redone: bool) -> None:
    """The #12890 rule for a normal read in flight: it was issued while 0:5 was the oldest position queued for
    replay, and completes after a close queued 0:0. From 2.8.3 / 2.9.1 its entry (0:1, another key) goes to the
    replay queue and reading starts again, so the older message goes first; before, it went straight to the
    consumer. (The classic dispatcher's per-hash blocking keeps every key in order either way; the issue's race,
    a replay read in flight, is the case's and ``ClassicDispatcher._replay_read_overtaken``'s.)"""
    broker = ModelBroker(pulsar_version=version, implementation="classic")
    c1 = broker.subscribe(TOPIC, SUB, consumer_name="c1")
    producer = broker.create_producer(TOPIC)
    producer.send(b"0", partition_key="a")  # 0:0, at c1
    broker.hold_reads(TOPIC, SUB)
    producer.send(b"1", partition_key="b")  # 0:1: the normal read that reads it stays in flight
    sub = broker.subscription(TOPIC, SUB)
    assert sub is not None and sub.dispatcher is not None
    dispatcher = sub.dispatcher
    assert dispatcher.has_pending_read
    dispatcher._pending_read = None  # complete it by hand, with the minimum it recorded at issue
    dispatcher.replay.add(Position(0, 0), dispatcher.selector.slot_of(b"a"))  # queued while it was in flight
    dispatcher._normal_read(10, Position(0, 5))
    assert (Position(0, 1) in dispatcher.replay.positions) is redone
    assert c1.num_prefetched() == (1 if redone else 2)


@pytest.mark.parametrize(("version", "dropped"), [("2.8.2", False), ("2.8.3", True), ("2.9.0", False), ("2.9.1", True)])
def test_12885_a_replay_read_overtaken_by_an_older_replay_is_dropped_from_the_fix(version: str, dropped: bool) -> None:
    """The #12890 rule for a replay read in flight: it read 0:10 and 0:11, then a close queued 0:3 for replay. From
    2.8.3 / 2.9.1 its entries are dropped and reading starts again; before, they were dispatched. A position
    queued later but newer than the read's never drops it."""
    broker = ModelBroker(pulsar_version=version, implementation="classic")
    broker.subscribe(TOPIC, SUB, consumer_name="c1")
    sub = broker.subscription(TOPIC, SUB)
    assert sub is not None and sub.dispatcher is not None
    dispatcher = sub.dispatcher
    read = [Position(0, 10), Position(0, 11)]
    for position in read:
        dispatcher.replay.add(position, 1)
    assert not dispatcher._replay_read_overtaken(read)
    dispatcher.replay.add(Position(0, 12), 1)
    assert not dispatcher._replay_read_overtaken(read)
    dispatcher.replay.add(Position(0, 3), 1)
    assert dispatcher._replay_read_overtaken(read) is dropped
