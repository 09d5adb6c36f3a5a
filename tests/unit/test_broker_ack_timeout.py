"""The model client's ack timeout (``unacked_messages_timeout_ms``, the C++ ``UnAckedMessageTrackerEnabled``)."""

from __future__ import annotations

import pytest

from reference_model.broker import ModelBroker, ModelConsumer
from reference_model.errors import InvalidArgument


def _setup(timeout_ms: int = 10_000, count: int = 6) -> tuple[ModelBroker, ModelConsumer]:
    broker = ModelBroker()
    consumer = broker.subscribe("t", "s", unacked_messages_timeout_ms=timeout_ms)
    producer = broker.create_producer("t")
    for i in range(count):
        producer.send(f"{i}".encode(), partition_key=f"k{i % 2}")
    return broker, consumer


def _receive_all(consumer: ModelConsumer) -> list[bytes]:
    out = []
    while (msg := consumer.receive(0)) is not None:
        out.append(msg.data())
        if msg.redelivery_count() > 0:
            consumer.acknowledge(msg)
    return out


def test_unacknowledged_messages_come_back_after_the_timeout_in_order_and_nothing_acknowledged_does() -> None:
    broker, consumer = _setup()
    first = []
    for i in range(6):
        msg = consumer.receive(0)
        assert msg is not None
        first.append(msg.data())
        if i % 2 == 0:
            consumer.acknowledge(msg)  # every other one, as Pulsar's receiveAndCheck
    assert first == [b"0", b"1", b"2", b"3", b"4", b"5"]
    broker.clock.advance(9_999)
    assert consumer.receive(0) is None  # not before the timeout
    broker.clock.advance(2_000)  # the timeout plus one tick of the tracker
    assert _receive_all(consumer) == [b"1", b"3", b"5"]
    broker.clock.advance(30_000)
    assert consumer.receive(0) is None  # redeliveries were acknowledged: nothing more


def test_a_nack_or_a_redeliver_request_takes_the_message_out_of_the_tracker() -> None:
    broker, consumer = _setup(count=2)
    m0, m1 = consumer.receive(0), consumer.receive(0)
    assert m0 is not None and m1 is not None
    consumer.negative_acknowledge(m0)
    broker.clock.advance(11_000)  # the tracker sends back m1 only
    assert _receive_all(consumer) == [b"1"]
    broker.clock.advance(50_000)  # the default nack delay (60 s) brings m0 back, once
    assert _receive_all(consumer) == [b"0"]
    broker.clock.advance(30_000)
    assert consumer.receive(0) is None
    consumer.redeliver_unacknowledged_messages()  # nothing held any more
    m2 = broker.create_producer("t").send(b"2", partition_key="k")
    assert m2 is not None
    held = consumer.receive(0)
    assert held is not None and held.data() == b"2"
    consumer.redeliver_unacknowledged_messages()  # clears the tracker: back once now, not again at the timeout
    assert _receive_all(consumer) == [b"2"]
    broker.clock.advance(30_000)
    assert consumer.receive(0) is None


def test_without_a_timeout_held_messages_stay_held() -> None:
    broker = ModelBroker()
    consumer = broker.subscribe("t", "s")
    broker.create_producer("t").send(b"x", partition_key="k")
    assert consumer.receive(0) is not None
    broker.clock.advance(120_000)
    assert consumer.receive(0) is None


@pytest.mark.parametrize("bad", [1, 9_999, -1, True, "10000"])
def test_a_timeout_below_the_clients_minimum_is_refused(bad: object) -> None:
    with pytest.raises(InvalidArgument, match="unacked_messages_timeout_ms"):
        ModelBroker().subscribe("t", "s", unacked_messages_timeout_ms=bad)  # type: ignore[arg-type]


def test_the_tracker_does_not_keep_the_clock_busy_once_empty() -> None:
    broker, consumer = _setup(count=1)
    msg = consumer.receive(0)
    assert msg is not None
    consumer.acknowledge(msg)
    broker.clock.advance(5_000)
    assert consumer.receive(None) is None  # nothing scheduled: returns instead of ticking forever
