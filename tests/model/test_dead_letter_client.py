"""The model's client with a dead-letter policy (``ModelConsumer.dead_letter``): a message nacked every time is
handed to the application ``max_redeliver_count + 1`` times (counts 0 .. max, the model broker's), then
published to the dead-letter topic with ``REAL_TOPIC`` / ``ORIGIN_MESSAGE_ID`` and its original acknowledged;
nothing is lost and nothing stays in both.  A policy the client would refuse is refused in one line."""

from __future__ import annotations

import pytest

from reference_model.broker import ModelBroker
from reference_model.errors import InvalidArgument


def test_a_message_nacked_every_time_ends_in_the_dead_letter_topic_once() -> None:
    broker = ModelBroker()
    consumer = broker.subscribe(
        "t", "s", consumer_name="c1", initial_position="Earliest", negative_ack_redelivery_delay_ms=10,
        dead_letter=(2, "t-s-DLQ"),
    )  # fmt: skip
    reader = broker.subscribe("t-s-DLQ", "dlq-reader", consumer_name="r", initial_position="Earliest")
    producer = broker.create_producer("t")
    bad = producer.send(b"x", partition_key="bad")
    producer.send(b"y", partition_key="good")
    seen = []
    while (m := consumer.receive(500)) is not None:
        seen.append((m.partition_key(), m.redelivery_count()))
        (consumer.negative_acknowledge if m.partition_key() == "bad" else consumer.acknowledge)(m)
    assert seen == [("bad", 0), ("good", 0), ("bad", 1), ("bad", 2)]
    dead = reader.receive(500)
    assert dead is not None and dead.partition_key() == "bad"
    assert dead.properties()["ORIGIN_MESSAGE_ID"] == str(bad)
    assert dead.properties()["REAL_TOPIC"] == "persistent://public/default/t"
    assert reader.receive(200) is None  # once
    assert broker.topic_stats("t")["subscriptions"]["s"]["msgBacklog"] == 0  # the original was acknowledged


@pytest.mark.parametrize("policy", [(0, "d"), (2, ""), ("2", "d"), (True, "d"), [2, "d"]])
def test_a_policy_the_client_refuses_is_refused(policy: object) -> None:
    with pytest.raises(InvalidArgument, match="dead_letter must be"):
        ModelBroker().subscribe("t", "s", dead_letter=policy)
