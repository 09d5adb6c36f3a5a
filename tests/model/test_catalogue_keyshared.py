"""Pulsar's own Key_Shared tests (``KeySharedSubscriptionTest``, research note §6), replayed on the model.

Each test follows the Pulsar test of the same name and asserts what it asserts. Pulsar runs most of them for
both implementations (PIP379 and CLASSIC); so do these. Cases the model cannot express (TTL, delayed delivery,
compression, encryption, partitioned topics, non-persistent topics, dispatcher back-off timing) are listed with
the reason in ``docs/model.md``.
"""

from __future__ import annotations

import pytest
from model_helpers import App, keys_moving_to, keys_of_consumer

from reference_model.broker import (
    BrokerConfig,
    ConsumerBusy,
    CumulativeAcknowledgementNotAllowedError,
    KeySharedPolicy,
    ModelBroker,
    NotAllowedError,
)
from reference_model.errors import ConsumerAssignError
from reference_model.hashing import sticky_key_hash
from reference_model.keyshared import DispatcherSettings

BOTH = pytest.mark.parametrize("implementation", ["pip379", "classic"])
TOPIC, SUB = "persistent://public/default/key-shared", "sub"


def _broker(implementation: str, **settings: int) -> ModelBroker:
    config = BrokerConfig(key_shared=DispatcherSettings(**settings)) if settings else None  # type: ignore[arg-type]
    return ModelBroker(pulsar_version="4.0", implementation=implementation, config=config)


def _producer(broker: ModelBroker, batching: bool = False):  # type: ignore[no-untyped-def]
    if batching:
        return broker.create_producer(TOPIC, batching_enabled=True, batching_type="KeyBased")
    return broker.create_producer(TOPIC)


def _send(producer, index: int, key: str) -> None:  # type: ignore[no-untyped-def]
    producer.send_async(str(index).encode(), lambda r, m: None, partition_key=key)


@BOTH
@pytest.mark.parametrize("batching", [False, True], ids=["no-batch", "key-based-batch"])
def test_send_and_receive_with_hash_range_auto_split(implementation: str, batching: bool) -> None:
    """3 consumers, 1000 messages over 300 keys: each key at one consumer, counts within 40% of even."""
    broker = _broker(implementation)
    consumers = [broker.subscribe(TOPIC, SUB, consumer_name=f"c{i}") for i in range(3)]
    producer = _producer(broker, batching)
    for i in range(1000):
        _send(producer, i, f"key-{i % 300}")
    producer.flush()
    app = App(broker)
    app.drain(consumers)
    assert len(app.distinct()) == 1000
    owners = [app.keys_of(c.consumer_name()) for c in consumers]
    assert sum(len(o) for o in owners) == 300  # no key at two consumers
    counts = [len(app.received[c.consumer_name()]) for c in consumers]
    assert all(abs(n - 1000 / 3) < 0.4 * 1000 / 3 for n in counts), counts
    assert app.order_violations == [] and app.overlap_violations == []


@BOTH
def test_send_and_receive_with_batching(implementation: str) -> None:
    """The same key twice per iteration: 2000 messages, same checks."""
    broker = _broker(implementation)
    consumers = [broker.subscribe(TOPIC, SUB, consumer_name=f"c{i}") for i in range(3)]
    producer = _producer(broker, batching=True)
    for i in range(1000):
        _send(producer, 2 * i, f"key-{i % 300}")
        _send(producer, 2 * i + 1, f"key-{i % 300}")
    producer.flush()
    app = App(broker)
    app.drain(consumers)
    assert len(app.distinct()) == 2000
    assert sum(len(app.keys_of(c.consumer_name())) for c in consumers) == 300
    assert app.order_violations == []


@BOTH
def test_send_and_receive_with_hash_range_exclusive(implementation: str) -> None:
    """STICKY [0,20000] [20001,40000] [40001,65535]: routing by ``makeStickyKeyHash``; every other message left
    unacknowledged is redelivered, exactly those, in key order; no key at two consumers."""
    broker = _broker(implementation)
    ranges = [(0, 20000), (20001, 40000), (40001, 65535)]
    consumers = [
        broker.subscribe(
            TOPIC, SUB, consumer_name=f"c{i}", key_shared_policy=KeySharedPolicy(mode="STICKY", sticky_ranges=[r])
        )
        for i, r in enumerate(ranges)
    ]
    producer = _producer(broker)
    for i in range(1000):
        _send(producer, i, f"key-{i % 300}")
    expected = [0, 0, 0]
    for i in range(1000):
        slot = sticky_key_hash(f"key-{i % 300}".encode(), "sticky", "4.0")
        expected[next(n for n, (s, e) in enumerate(ranges) if s <= slot <= e)] += 1
    app = App(broker)
    unacked: dict[str, list[int]] = {}
    for c in consumers:
        while (msg := app.take(c)) is not None:
            if int(msg.data()) % 2 == 0:
                app.ack(c, msg)
            else:
                unacked.setdefault(c.consumer_name(), []).append(int(msg.data()))
    assert [len(app.received[c.consumer_name()]) for c in consumers] == expected
    for c in consumers:
        c.redeliver_unacknowledged_messages()  # Pulsar's test uses the ack timeout, which does the same
    for c in consumers:
        again = []
        while (msg := c.receive(0)) is not None:
            again.append(int(msg.data()))
            c.acknowledge(msg)
        assert again == unacked.get(c.consumer_name(), [])
    assert app.overlap_violations == []


@BOTH
def test_consumer_crash_send_and_receive_with_hash_range_auto_split(implementation: str) -> None:
    """Close 2 of 3 consumers: the next 10 messages all go to the survivor."""
    broker = _broker(implementation)
    consumers = [broker.subscribe(TOPIC, SUB, consumer_name=f"c{i}") for i in range(3)]
    producer = _producer(broker)
    for i in range(1000):
        _send(producer, i, f"key-{i % 300}")
    app = App(broker)
    app.drain(consumers)
    consumers[0].close()
    consumers[1].close()
    for i in range(1000, 1010):
        _send(producer, i, f"key-{i % 300}")
    assert app.consume(consumers[2]) == 10


@pytest.mark.parametrize(("version", "spread"), [("4.0", True), ("3.3", False)])
def test_no_key_send_and_receive_with_hash_range_auto_split(version: str, spread: bool) -> None:
    """100 key-less messages spread over 3 consumers in 4.0 (``producerName-sequenceId``); one consumer gets
    them all before 4.0 (``NONE_KEY``, #23212)."""
    broker = ModelBroker(pulsar_version=version)
    consumers = [broker.subscribe(TOPIC, SUB, consumer_name=f"c{i}") for i in range(3)]
    producer = _producer(broker)
    for i in range(100):
        producer.send(str(i).encode())
    counts = [c.num_prefetched() for c in consumers]
    assert sum(counts) == 100
    assert (sum(1 for n in counts if n > 0) == 3) is spread


def test_no_key_send_and_receive_with_hash_range_exclusive() -> None:
    """STICKY: each key-less message goes where ``producerName + "-" + sequenceId`` hashes."""
    broker = ModelBroker()
    ranges = [(0, 20000), (20001, 40000), (40001, 65535)]
    consumers = [
        broker.subscribe(
            TOPIC, SUB, consumer_name=f"c{i}", key_shared_policy=KeySharedPolicy(mode="STICKY", sticky_ranges=[r])
        )
        for i, r in enumerate(ranges)
    ]
    producer = _producer(broker)
    for i in range(100):
        producer.send(str(i).encode())
        slot = sticky_key_hash(f"{producer.producer_name()}-{producer.last_sequence_id()}".encode(), "sticky", "4.0")
        owner = next(n for n, (s, e) in enumerate(ranges) if s <= slot <= e)
        assert consumers[owner].prefetched()[-1].data() == str(i).encode()


@pytest.mark.parametrize("mode", ["AUTO_SPLIT", "STICKY"])
def test_ordering_key_with_hash_range(mode: str) -> None:
    """``key("any key")`` plus an ordering key: routed by the ordering key."""
    broker = ModelBroker()
    policy = KeySharedPolicy(mode="STICKY", sticky_ranges=[(0, 65535)]) if mode == "STICKY" else KeySharedPolicy()
    broker.subscribe(TOPIC, SUB, consumer_name="c0", key_shared_policy=policy)
    second = KeySharedPolicy(mode="STICKY", sticky_ranges=[(0, 1)]) if mode == "STICKY" else policy
    if mode == "STICKY":
        broker.subscription(TOPIC, SUB).dispatcher.consumers.clear()  # type: ignore[union-attr]
    producer = _producer(broker)
    for i in range(20):
        producer.send(str(i).encode(), partition_key="any key", ordering_key=f"ok-{i % 4}")
    entries = list(broker.topic_log(TOPIC))
    assert [e.sticky_key for e in entries] == [f"ok-{i % 4}".encode() for i in range(20)]
    del second


def test_disable_key_shared_subscription() -> None:
    broker = ModelBroker(config=BrokerConfig(subscription_types_enabled=("Exclusive", "Shared", "Failover")))
    with pytest.raises(NotAllowedError):
        broker.subscribe(TOPIC, SUB)


def test_cannot_use_acknowledge_cumulative() -> None:
    broker = ModelBroker()
    consumer = broker.subscribe(TOPIC, SUB)
    _producer(broker).send(b"0", partition_key="k")
    msg = consumer.receive(0)
    assert msg is not None
    with pytest.raises(CumulativeAcknowledgementNotAllowedError):
        consumer.acknowledge_cumulative(msg)


@BOTH
def test_making_progress_with_slower_consumer(implementation: str) -> None:
    """10 consumers; the application owning one key takes its first message and then stalls (Pulsar's listener
    sleeps): every message of the other keys is still delivered."""
    broker = _broker(implementation)
    consumers = [broker.subscribe(TOPIC, SUB, consumer_name=f"c{i}") for i in range(10)]
    slow = consumers[0]
    [slow_key] = keys_of_consumer(broker, TOPIC, SUB, slow, 1)
    producer = _producer(broker)
    for i in range(1000):
        _send(producer, i, slow_key if i % 100 == 0 else f"key-{i}")
    app = App(broker)
    stuck = app.take(slow)
    assert stuck is not None and stuck.partition_key() == slow_key
    app.drain(consumers[1:])
    others = {i for i in range(1000) if i % 100 != 0}
    slow_prefetched = {int(m.data()) for m in slow.prefetched()}
    assert {i for _, i in app.distinct()} | slow_prefetched >= others
    assert app.overlap_violations == []


@BOTH
def test_ordering_when_adding_consumers(implementation: str) -> None:
    """c1 prefetches 10 (keys 0..9) unacked; c2 joins; 10 more: c2 gets nothing within 100 ms; close c1: c2
    receives all 20 in order."""
    broker = _broker(implementation)
    c1 = broker.subscribe(TOPIC, SUB, consumer_name="c1", receiver_queue_size=10)
    producer = _producer(broker)
    for i in range(10):
        producer.send(str(i).encode(), partition_key=str(i))
    c2 = broker.subscribe(TOPIC, SUB, consumer_name="c2", receiver_queue_size=10)
    for i in range(10, 20):
        producer.send(str(i).encode(), partition_key=str(i % 10))
    assert c2.receive(100) is None
    c1.close()
    app = App(broker)
    app.consume(c2, timeout_ms=10)
    assert [i for _, i in app.received["c2"]] == list(range(20))


@BOTH
def test_remove_first_consumer(implementation: str) -> None:
    """Keys ``i % 10``, receiver queues 10: c2 gets nothing for 1 s, then all 20 in order after c1 closes."""
    broker = _broker(implementation)
    c1 = broker.subscribe(TOPIC, SUB, consumer_name="c1", receiver_queue_size=10)
    producer = _producer(broker)
    for i in range(10):
        producer.send(str(i).encode(), partition_key=str(i % 10))
    assert c1.num_prefetched() == 10
    c2 = broker.subscribe(TOPIC, SUB, consumer_name="c2", receiver_queue_size=10)
    for i in range(10, 20):
        producer.send(str(i).encode(), partition_key=str(i % 10))
    assert c2.receive(1000) is None
    c1.close()
    app = App(broker)
    app.consume(c2, timeout_ms=10)
    assert [i for _, i in app.received["c2"]] == list(range(20))


def test_read_ahead_with_configured_look_ahead_limit() -> None:
    """PerSubscription=50, random keys over 300: c1 prefetches 10, c2 joins, 990 more: the read position stays
    below entry 100 (no unbounded look-ahead)."""
    broker = _broker("pip379", lookahead_per_subscription=50)
    c1 = broker.subscribe(TOPIC, SUB, consumer_name="c1", receiver_queue_size=10)
    producer = _producer(broker)
    for i in range(10):
        producer.send(str(i).encode(), partition_key=f"key-{i * 7919 % 300}")
    broker.subscribe(TOPIC, SUB, consumer_name="c2", receiver_queue_size=10)
    for i in range(10, 1000):
        _send(producer, i, f"key-{i * 7919 % 300}")
    read = broker.subscription(TOPIC, SUB).read_position  # type: ignore[union-attr]
    assert read.entry_id < 100
    del c1


def test_hash_range_conflict() -> None:
    """[0,99]+[400,65535] ok, [100,399] ok; [0,65535] and [1,1] refused; after c1 closes: [0,65535], [50,100],
    [399,500] refused; [400,600] and [50,99] accepted."""
    broker = ModelBroker()

    def sticky(*ranges: tuple[int, int]):  # type: ignore[no-untyped-def]
        return broker.subscribe(
            TOPIC, SUB, key_shared_policy=KeySharedPolicy(mode="STICKY", sticky_ranges=list(ranges))
        )

    c1 = sticky((0, 99), (400, 65535))
    sticky((100, 399))
    for ranges in ([(0, 65535)], [(1, 1)]):
        with pytest.raises(ConsumerAssignError):
            sticky(*ranges)
    c1.close()
    for ranges in ([(0, 65535)], [(50, 100)], [(399, 500)]):
        with pytest.raises(ConsumerAssignError):
            sticky(*ranges)
    sticky((400, 600))
    sticky((50, 99))
    assert len(broker.topic_stats(TOPIC)["subscriptions"][SUB]["consumers"]) == 3


@BOTH
def test_attach_key_to_message_metadata(implementation: str) -> None:
    """Default (not key-based) batching: a batch goes where its first message's key says; all delivered."""
    broker = _broker(implementation)
    consumers = [broker.subscribe(TOPIC, SUB, consumer_name=f"c{i}") for i in range(3)]
    producer = broker.create_producer(TOPIC, batching_enabled=True, batching_max_messages=10)
    for i in range(1000):
        _send(producer, i, f"key-{i % 300}")
    producer.flush()
    app = App(broker)
    app.drain(consumers)
    assert len(app.distinct()) == 1000
    for entry in broker.topic_log(TOPIC):
        assert entry.sticky_key == (entry.messages[0].partition_key or "").encode()


@BOTH
def test_ordering_with_consumer_listener(implementation: str) -> None:
    """Per key, increasing values at each consumer (listener threads are the application's round-robin here)."""
    broker = _broker(implementation)
    consumers = [broker.subscribe(TOPIC, SUB, consumer_name=f"c{i}", receiver_queue_size=50) for i in range(3)]
    producer = _producer(broker)
    app = App(broker)
    for i in range(1000):
        _send(producer, i, f"key-{i % 10}")
        if i % 7 == 0:
            app.consume(consumers[i % 3], n=5)
    app.drain(consumers)
    assert app.order_violations == [] and len(app.distinct()) == 1000


@pytest.mark.parametrize("change", ["mode", "allow_out_of_order"])
def test_policy_changes_only_after_all_consumers_disconnected(change: str) -> None:
    """``SelectorChangedAfterAllConsumerDisconnected`` / ``AllowOutOfOrderDeliveryChangedAfterAll...``."""
    broker = ModelBroker()
    new = (
        KeySharedPolicy(mode="STICKY", sticky_ranges=[(0, 65535)])
        if change == "mode"
        else KeySharedPolicy(allow_out_of_order_delivery=True)
    )
    c1 = broker.subscribe(TOPIC, SUB)
    with pytest.raises(ConsumerBusy):
        broker.subscribe(TOPIC, SUB, key_shared_policy=new)
    c1.close()
    broker.subscribe(TOPIC, SUB, key_shared_policy=new)
    stats = broker.topic_stats(TOPIC)["subscriptions"][SUB]
    assert (stats["keySharedMode"], stats["allowOutOfOrderDelivery"]) == ((new.mode, new.allow_out_of_order_delivery))


@BOTH
def test_check_consumers_with_same_name(implementation: str) -> None:
    """3 consumers named "name"; c1 takes 5 unacknowledged and closes: c2 and c3 get all 100."""
    broker = _broker(implementation)
    c1 = broker.subscribe(TOPIC, SUB, consumer_name="name", receiver_queue_size=5)
    c2 = broker.subscribe(TOPIC, SUB, consumer_name="name")
    c3 = broker.subscribe(TOPIC, SUB, consumer_name="name")
    producer = _producer(broker)
    for i in range(100):
        _send(producer, i, f"key-{i}")
    app = App(broker)
    for _ in range(5):
        app.take(c1, timeout_ms=10)
    c1.close()
    app.forget(c1)
    app.drain([c2, c3])
    assert {i for _, i in app.distinct()} == set(range(100))


def test_sticky_key_ranges_restart_consumers() -> None:
    """Two sticky consumers restarted while producing: all 100 keys are eventually received."""
    broker = ModelBroker()
    policies = [KeySharedPolicy(mode="STICKY", sticky_ranges=[r]) for r in ((0, 32767), (32768, 65535))]
    consumers = [
        broker.subscribe(TOPIC, SUB, key_shared_policy=p, consumer_name=f"c{i}") for i, p in enumerate(policies)
    ]
    producer = _producer(broker)
    app = App(broker)
    for i in range(100):
        _send(producer, i, f"key-{i}")
        if i == 30:
            consumers[0].close()
            consumers[0] = broker.subscribe(TOPIC, SUB, key_shared_policy=policies[0], consumer_name="c0")
        if i == 60:
            consumers[1].close()
            consumers[1] = broker.subscribe(TOPIC, SUB, key_shared_policy=policies[1], consumer_name="c1")
    app.drain(consumers)
    assert {i for _, i in app.distinct()} == set(range(100))


@BOTH
def test_no_repeated_read_and_discard(implementation: str) -> None:
    """``testNoRepeatedReadAndDiscard``: entries are not read from the replay queue over and over: the replay
    reads stay within twice the number of messages."""
    broker = _broker(implementation)
    c1 = broker.subscribe(TOPIC, SUB, consumer_name="c1", receiver_queue_size=10)
    producer = _producer(broker)
    for i in range(100):
        _send(producer, i, f"key-{i % 10}")
    c2 = broker.subscribe(TOPIC, SUB, consumer_name="c2", receiver_queue_size=10)
    for i in range(100, 200):
        _send(producer, i, f"key-{i % 10}")
    app = App(broker)
    app.drain([c1, c2])
    sub = broker.subscription(TOPIC, SUB)
    assert sub is not None and sub.dispatcher is not None
    assert {i for _, i in app.distinct()} == set(range(200))
    assert sub.dispatcher.entries_replayed <= 2 * 200


@BOTH
def test_recent_joined_pos_will_not_stuck_other_consumer(implementation: str) -> None:
    """An always-acking consumer keeps receiving while another holds messages; all 200 eventually arrive."""
    broker = _broker(implementation)
    slow = broker.subscribe(TOPIC, SUB, consumer_name="slow", receiver_queue_size=5)
    producer = _producer(broker)
    app = App(broker)
    for i in range(100):
        _send(producer, i, f"key-{i % 20}")
    fast = broker.subscribe(TOPIC, SUB, consumer_name="fast", receiver_queue_size=5)
    for i in range(100, 200):
        _send(producer, i, f"key-{i % 20}")
        app.consume(fast)
    app.drain([slow, fast])
    assert {i for _, i in app.distinct()} == set(range(200))


def test_read_ahead_limit() -> None:
    """PIP-379 only: PerSubscription=20; c1 and c3 do not receive, c2 has a queue of 500; 1000 messages for c2's
    keys and 1000 random: the replay queue never exceeds 20, and all 2000 arrive once c1 and c3 resume."""
    broker = _broker("pip379", lookahead_per_subscription=20)
    c1 = broker.subscribe(TOPIC, SUB, consumer_name="c1", receiver_queue_size=10)
    c2 = broker.subscribe(TOPIC, SUB, consumer_name="c2", receiver_queue_size=500)
    c3 = broker.subscribe(TOPIC, SUB, consumer_name="c3", receiver_queue_size=10)
    c2_keys = keys_of_consumer(broker, TOPIC, SUB, c2, 10)
    producer = _producer(broker)
    sub = broker.subscription(TOPIC, SUB)
    assert sub is not None and sub.dispatcher is not None
    dispatcher = sub.dispatcher
    app = App(broker)
    sizes = []
    for i in range(2000):
        _send(producer, i, c2_keys[i % 10] if i < 1000 else f"random-{i}")
        sizes.append(len(dispatcher.replay))
        if i % 50 == 0:
            app.consume(c2)
    assert max(sizes) <= 20
    app.drain([c1, c2, c3])
    assert len(app.distinct()) == 2000 and app.order_violations == []


def test_ordering_after_reconnects() -> None:
    """PIP-379 only (#23307 on 3.x): 1000 messages to c2's keys, close c2, resume c1/c3, reconnect c2, close and
    reconnect c1 then c3, 1000 more with random keys: no per-key regression, everything received."""
    broker = _broker("pip379")
    c1 = broker.subscribe(TOPIC, SUB, consumer_name="c1", receiver_queue_size=10)
    c2 = broker.subscribe(TOPIC, SUB, consumer_name="c2", receiver_queue_size=500)
    c3 = broker.subscribe(TOPIC, SUB, consumer_name="c3", receiver_queue_size=10)
    c2_keys = keys_of_consumer(broker, TOPIC, SUB, c2, 20)
    producer = _producer(broker)
    app = App(broker)
    for i in range(1000):
        _send(producer, i, c2_keys[i % 20])
    app.consume(c2, n=300)
    c2.close()
    app.forget(c2)
    app.consume(c1, n=200)
    app.consume(c3, n=200)
    c2 = broker.subscribe(TOPIC, SUB, consumer_name="c2", receiver_queue_size=500)
    for name in ("c1", "c3"):
        old = c1 if name == "c1" else c3
        app.consume(old, n=50, ack=True)
        old.close()
        app.forget(old)
        new = broker.subscribe(TOPIC, SUB, consumer_name=name, receiver_queue_size=10)
        if name == "c1":
            c1 = new
        else:
            c3 = new
    for i in range(1000, 2000):
        _send(producer, i, f"random-{i * 7919 % 1000}")
        if i % 10 == 0:
            app.consume(c2, n=5)
    app.drain([c1, c2, c3])
    assert app.order_violations == []
    assert len(app.distinct()) == 2000


def test_message_order_in_single_consumer_reconnect() -> None:
    """``KeySharedSubscriptionDisabledBrokerCacheTest``: unblocking interval 0; c2's keys known, close c2, 1000
    messages, c2 reconnects without receiving, 100 more on c2's keys, held messages acked, c2 resumes: all
    1100 received, nothing out of order."""
    broker = _broker("pip379", unblocking_interval_ms=0)
    c1 = broker.subscribe(TOPIC, SUB, consumer_name="c1", receiver_queue_size=100)
    c2 = broker.subscribe(TOPIC, SUB, consumer_name="c2", receiver_queue_size=100)
    c3 = broker.subscribe(TOPIC, SUB, consumer_name="c3", receiver_queue_size=100)
    c2_keys = keys_of_consumer(broker, TOPIC, SUB, c2, 10)
    c2.close()
    producer = _producer(broker)
    app = App(broker)
    for i in range(1000):
        _send(producer, i, f"key-{i % 100}")
    held1 = [app.take(c1) for _ in range(20)]
    held3 = [app.take(c3) for _ in range(20)]
    c2 = broker.subscribe(TOPIC, SUB, consumer_name="c2", receiver_queue_size=100)
    for i in range(1000, 1100):
        _send(producer, i, c2_keys[i % 10])
    for m in held1:
        if m is not None:
            app.ack(c1, m)
    for m in held3:
        if m is not None:
            app.ack(c3, m)
    app.drain([c1, c2, c3])
    assert len(app.distinct()) == 1100
    assert app.order_violations == [] and app.overlap_violations == []


def test_reconnecting_consumer_keeps_its_keys_when_names_repeat() -> None:
    """``ConsumersReconnect`` through the broker: leave and rejoin under the same names -> the same ranges."""
    broker = ModelBroker()
    consumers = [broker.subscribe(TOPIC, SUB, consumer_name=f"c{i}") for i in range(4)]
    before = {
        c["consumerName"]: c["keyHashRangeArrays"] for c in broker.topic_stats(TOPIC)["subscriptions"][SUB]["consumers"]
    }
    for c in (consumers[2], consumers[0], consumers[3], consumers[1]):
        c.close()
    for i in range(4):
        broker.subscribe(TOPIC, SUB, consumer_name=f"c{i}")
    after = {
        c["consumerName"]: c["keyHashRangeArrays"] for c in broker.topic_stats(TOPIC)["subscriptions"][SUB]["consumers"]
    }
    assert before == after


def test_keys_moving_to_helper_agrees_with_the_broker() -> None:
    broker = ModelBroker()
    c1 = broker.subscribe(TOPIC, SUB, consumer_name="c1")
    keys = keys_moving_to(broker, TOPIC, SUB, "c2", 3, owner=c1)
    c2 = broker.subscribe(TOPIC, SUB, consumer_name="c2")
    assert set(keys) <= set(keys_of_consumer(broker, TOPIC, SUB, c2, 500))
