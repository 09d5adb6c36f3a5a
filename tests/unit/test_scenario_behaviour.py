"""What a consumer does with each message (the agent shared by the threaded and the stepped loops), and
how a publish step expands into messages."""

from __future__ import annotations

import random

import pytest

from conformance.scenarios import Behaviour, InvalidScenario, KeySet, Publish
from pytest_keyshared.driver.agent import ConsumerAgent
from pytest_keyshared.driver.handles import Delivery, delivery_key

MS = 1_000_000


def d(n: int, redeliveries: int = 0) -> Delivery:
    return Delivery(key=f"k{n % 3}", msg_id=f"0:{n}:-1:-1", uid=f"p1:{n}", redelivery_count=redeliveries)


def ops(actions: list) -> list[tuple[str, str]]:
    return [(a.op, a.delivery.msg_id) for a in actions]


def test_ack_acknowledges_at_once() -> None:
    agent = ConsumerAgent("c1", Behaviour("ack"))
    assert ops(agent.on_receive(d(1), 0)) == [("ack", "0:1:-1:-1")]
    assert agent.held == () and agent.received == 1


def test_hold_keeps_messages_until_they_are_taken_oldest_first() -> None:
    agent = ConsumerAgent("c1", Behaviour("hold"))
    for n in range(4):
        assert agent.on_receive(d(n), 0) == []
    assert [x.msg_id for x in agent.held] == [f"0:{n}:-1:-1" for n in range(4)]
    assert ops(agent.take_held("ack", 2)) == [("ack", "0:0:-1:-1"), ("ack", "0:1:-1:-1")]
    assert ops(agent.take_held("nack")) == [("nack", "0:2:-1:-1"), ("nack", "0:3:-1:-1")]
    assert agent.held == ()


def test_ack_after_acknowledges_when_the_delay_has_passed() -> None:
    agent = ConsumerAgent("c1", Behaviour("ack_after", delay_ms=50))
    agent.on_receive(d(1), 0)
    agent.on_receive(d(2), 10 * MS)
    assert agent.next_due_ns() == 50 * MS
    assert agent.due(49 * MS) == []
    assert ops(agent.due(50 * MS)) == [("ack", "0:1:-1:-1")]
    assert [x.msg_id for x in agent.held] == ["0:2:-1:-1"]
    assert ops(agent.due(10**12)) == [("ack", "0:2:-1:-1")]
    assert agent.next_due_ns() is None and agent.held == ()


def test_a_held_ack_after_message_taken_early_is_not_acked_twice() -> None:
    agent = ConsumerAgent("c1", Behaviour("ack_after", delay_ms=50))
    agent.on_receive(d(1), 0)
    assert ops(agent.take_held("ack")) == [("ack", "0:1:-1:-1")]
    assert agent.due(10**12) == []


def test_messages_taken_early_leave_the_due_order_of_the_rest_unchanged() -> None:
    agent = ConsumerAgent("c1", Behaviour("ack_after", delay_ms=50))
    for n in range(5):
        agent.on_receive(d(n), n * MS)
    assert ops(agent.take_held("nack", 2)) == [("nack", "0:0:-1:-1"), ("nack", "0:1:-1:-1")]
    assert agent.next_due_ns() == 52 * MS  # the first still held
    agent.set_behaviour(Behaviour("hold"))
    agent.on_receive(d(5), 60 * MS)  # held, never due
    assert ops(agent.due(53 * MS)) == [("ack", "0:2:-1:-1"), ("ack", "0:3:-1:-1")]
    assert [x.msg_id for x in agent.held] == ["0:4:-1:-1", "0:5:-1:-1"]
    assert ops(agent.take_held("ack", 1)) == [("ack", "0:4:-1:-1")]
    assert agent.next_due_ns() is None and agent.due(10**12) == [] and len(agent.held) == 1


def test_nack_until_the_redelivery_count_reaches_nack_times() -> None:
    agent = ConsumerAgent("c1", Behaviour("nack", nack_times=2))
    assert ops(agent.on_receive(d(1, 0), 0)) == [("nack", "0:1:-1:-1")]
    assert ops(agent.on_receive(d(1, 1), 0)) == [("nack", "0:1:-1:-1")]
    assert ops(agent.on_receive(d(1, 2), 0)) == [("ack", "0:1:-1:-1")]


def test_a_behaviour_change_applies_to_later_messages_only() -> None:
    agent = ConsumerAgent("c1", Behaviour("hold"))
    agent.on_receive(d(1), 0)
    agent.set_behaviour(Behaviour("ack"))
    assert ops(agent.on_receive(d(2), 0)) == [("ack", "0:2:-1:-1")]
    assert [x.msg_id for x in agent.held] == ["0:1:-1:-1"]


def test_the_drain_resumes_acks_what_is_held_and_acks_everything_after() -> None:
    agent = ConsumerAgent("c1", Behaviour("nack"), paused=True)
    agent.set_behaviour(Behaviour("hold"))
    agent.on_receive(d(1), 0)
    assert ops(agent.start_drain()) == [("ack", "0:1:-1:-1")]
    assert not agent.paused
    assert ops(agent.on_receive(d(2), 0)) == [("ack", "0:2:-1:-1")]


def test_redeliver_forgets_what_is_held() -> None:
    agent = ConsumerAgent("c1", Behaviour("ack_after", delay_ms=5))
    agent.on_receive(d(1), 0)
    assert [x.msg_id for x in agent.drop_held()] == ["0:1:-1:-1"]
    assert agent.due(10**12) == [] and agent.held == ()


def test_behaviour_values_are_checked() -> None:
    with pytest.raises(InvalidScenario, match="Expected a behaviour in ack, ack_after, hold, nack"):
        Behaviour("sleep")
    with pytest.raises(InvalidScenario, match="nack_times >= 1"):
        Behaviour("nack", nack_times=0)


def test_publish_keys_cycle_or_shuffle_with_the_seed() -> None:
    step = Publish(count=7, keys=KeySet(count=3))
    assert step.message_keys(random.Random(1)) == ["key-00", "key-01", "key-02", "key-00", "key-01", "key-02", "key-00"]
    shuffled = Publish(count=30, keys=KeySet(count=3), order="shuffle")
    first = shuffled.message_keys(random.Random(5))
    assert first == shuffled.message_keys(random.Random(5))
    assert first != Publish(count=30, keys=KeySet(count=3)).message_keys(random.Random(5))
    assert sorted(first) == sorted(Publish(count=30, keys=KeySet(count=3)).message_keys(random.Random(0)))
    assert KeySet(count=120).keys()[-1] == "key-119"
    assert KeySet(names=("a", "b")).keys() == ("a", "b")


def test_the_sticky_key_of_a_delivery_follows_pulsar_4() -> None:
    props = {"ks-key": "p1-7", "ks-seq": "7"}
    assert delivery_key("ok", "pk", props, "p1") == "ok"  # ordering key wins
    assert delivery_key(None, "pk", props, "p1") == "pk"
    assert delivery_key(None, None, props, "p1") == "p1-7"  # producerName-sequenceId, apache/pulsar#23219
    assert delivery_key(None, None, {"ks-seq": "9"}, "other") == "other-9"
