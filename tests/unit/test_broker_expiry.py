"""The model's message expiry (``expireMessages``, what a TTL check runs) on Key_Shared."""

from __future__ import annotations

import pytest

from conformance.scenarios import ExpireMessages, InvalidScenario, parse_scenario
from reference_model.broker import ModelBroker
from reference_model.errors import InvalidArgument


@pytest.mark.parametrize("implementation", ["pip379", "classic"])
def test_expiry_frees_the_keys_a_holder_blocked_and_keeps_the_young_messages(implementation: str) -> None:
    broker = ModelBroker(implementation=implementation)
    c1 = broker.subscribe("t", "s", consumer_name="c1")
    producer = broker.create_producer("t")
    for i in range(20):
        producer.send(f"old-{i}".encode(), partition_key=f"k{i % 5}")
    held = [c1.receive(0) for _ in range(20)]
    assert all(m is not None for m in held)
    c2 = broker.subscribe("t", "s", consumer_name="c2")
    broker.clock.advance(3_000)
    producer.send(b"young", partition_key="k0")  # 0 s old at the expiry: stays
    assert broker.expire_messages("t", "s", 2)
    stats = broker.topic_stats("t")["subscriptions"]["s"]
    assert stats["msgBacklog"] == 1  # only the young message is left unacknowledged
    for i in range(50):
        producer.send(f"new-{i}".encode(), partition_key=f"k{i % 5}")
    got2 = []
    while (m := c2.receive(0)) is not None:
        got2.append(m.data())
        c2.acknowledge(m)
    assert got2, "the joiner gets the keys c1's expired messages held"
    assert not broker.expire_messages("t", "s", 60)  # nothing that old is left


def test_bad_expiry_input_is_one_error() -> None:
    broker = ModelBroker()
    broker.subscribe("t", "s")
    with pytest.raises(InvalidArgument, match="seconds >= 0"):
        broker.expire_messages("t", "s", -1)
    with pytest.raises(InvalidArgument, match="does not exist"):
        broker.expire_messages("t", "nope", 1)


def test_the_step_loads_and_needs_the_capability() -> None:
    data = {"name": "e", "steps": [{"do": "open", "consumer": "c1"}, {"do": "expire_messages", "seconds": 3}]}
    scenario = parse_scenario(data)
    assert scenario.steps[1] == ExpireMessages(seconds=3)
    assert scenario.required_capabilities() == {"message_expiry": "step 2 (expire_messages)"}
    with pytest.raises(InvalidScenario, match="seconds"):
        parse_scenario({"name": "e", "steps": [{"do": "expire_messages"}]})


def test_expiry_releases_a_consumer_blocked_at_its_max_unacked_limit() -> None:
    from reference_model.broker import BrokerConfig

    broker = ModelBroker(config=BrokerConfig.from_broker_conf({"maxUnackedMessagesPerConsumer": 4}))
    c1 = broker.subscribe("t", "s", consumer_name="c1")
    producer = broker.create_producer("t")
    for i in range(4):
        producer.send(f"old-{i}".encode(), partition_key="k")
    assert all(c1.receive(0) is not None for _ in range(4))  # held: c1 is at its limit
    broker.clock.advance(2_000)
    producer.send(b"blocked", partition_key="k")  # young: it does not expire
    assert c1.receive(0) is None
    assert broker.expire_messages("t", "s", 1)
    msg = c1.receive(0)  # the broker acknowledged the four itself: c1 is below half its limit again
    assert msg is not None and msg.data() == b"blocked"
