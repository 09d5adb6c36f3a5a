"""The model's client groups negative acknowledgements as the C++ client does (``NegativeAcksTracker``).

Nacks that fall due together go to the broker in one redelivery request naming each entry once. The model
used to send one request per ``negative_acknowledge`` call: an application that nacked two copies of one
entry (a duplicate delivery, e.g. apache/pulsar#10662 / #23803) made the broker redeliver the copy the first
request had just resent, and a consumer that acknowledged that copy then received it again
(``redelivered_after_ack``; generated program 368 on ``model:classic``).
"""

from __future__ import annotations

import pytest

from reference_model.broker import ModelBroker

TOPIC, SUB = "persistent://public/default/nacks", "sub"


@pytest.mark.parametrize("implementation", ["classic", "pip379"])
def test_two_nacks_of_one_entry_in_one_instant_are_one_redelivery(implementation: str) -> None:
    broker = ModelBroker(implementation=implementation)
    consumer = broker.subscribe(TOPIC, SUB, consumer_name="c1", negative_ack_redelivery_delay_ms=100)
    broker.create_producer(TOPIC).send(b"0", partition_key="k")
    first = consumer.receive(0)
    assert first is not None and first.redelivery_count() == 0
    consumer.negative_acknowledge(first)
    consumer.negative_acknowledge(first)  # the same entry again, as for a second copy of it
    again = consumer.receive(1_000)
    assert again is not None and again.redelivery_count() == 1
    consumer.acknowledge(again)
    assert consumer.receive(1_000) is None  # one request: the acknowledged copy is not sent a third time


def test_nacks_due_at_different_times_stay_separate_requests() -> None:
    """Grouping is per instant: a nack 50 ms later is its own request, due 50 ms later."""
    broker = ModelBroker(implementation="classic")
    consumer = broker.subscribe(TOPIC, SUB, consumer_name="c1", negative_ack_redelivery_delay_ms=100)
    producer = broker.create_producer(TOPIC)
    producer.send(b"0", partition_key="a")
    producer.send(b"1", partition_key="b")
    m0, m1 = consumer.receive(0), consumer.receive(0)
    assert m0 is not None and m1 is not None
    consumer.negative_acknowledge(m0)
    broker.advance(50)
    consumer.negative_acknowledge(m1)
    broker.advance(50)  # m0's request is due now
    got = consumer.receive(0)
    assert got is not None and got.data() == b"0" and consumer.receive(0) is None
    broker.advance(50)
    got = consumer.receive(0)
    assert got is not None and got.data() == b"1"
