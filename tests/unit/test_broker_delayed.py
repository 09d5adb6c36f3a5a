"""The model's delayed-delivery tracker (PIP-26's ``InMemoryDelayedDeliveryTracker``) on Key_Shared."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from conformance.scenarios import InvalidScenario, Publish, dump_scenario, load_scenario, parse_scenario
from reference_model.broker import ModelBroker
from reference_model.errors import InvalidArgument


def _data(consumer: object) -> list[bytes]:
    out = []
    while (msg := consumer.receive(0)) is not None:  # type: ignore[attr-defined]
        out.append(msg.data())
        consumer.acknowledge(msg)  # type: ignore[attr-defined]
    return out


@pytest.mark.parametrize("implementation", ["pip379", "classic"])
def test_a_delayed_message_waits_for_its_time_less_a_tick_and_the_others_go_on(implementation: str) -> None:
    broker = ModelBroker(implementation=implementation)
    consumer = broker.subscribe("t", "s")
    producer = broker.create_producer("t")
    producer.send(b"d", partition_key="k", deliver_after=timedelta(seconds=5))
    producer.send(b"n", partition_key="k")
    assert _data(consumer) == [b"n"]  # the later message of k is not held behind the delayed one
    broker.clock.advance(3_999)
    assert _data(consumer) == []
    broker.clock.advance(1)  # 5 s less the 1 s tick (delayedDeliveryTickTimeMillis, non-strict)
    assert _data(consumer) == [b"d"]


def test_deliver_at_is_on_the_brokers_clock_and_a_past_time_is_now() -> None:
    broker = ModelBroker()
    consumer = broker.subscribe("t", "s")
    producer = broker.create_producer("t")
    producer.send(b"past", deliver_at=0)
    producer.send(b"later", deliver_at=3_000)
    assert _data(consumer) == [b"past"]
    broker.clock.advance(2_000)
    assert _data(consumer) == [b"later"]


def test_a_delayed_message_is_not_batched() -> None:
    broker = ModelBroker()
    consumer = broker.subscribe("t", "s")
    producer = broker.create_producer("t", batching_enabled=True)
    producer.send_async(b"a", lambda *_: None, partition_key="k")
    producer.send_async(b"d", lambda *_: None, partition_key="k", deliver_after=timedelta(seconds=2))
    producer.flush()
    first = consumer.receive(0)
    assert first is not None and first.data() == b"a"
    assert consumer.receive(0) is None


def test_a_bad_delivery_time_is_one_error() -> None:
    producer = ModelBroker().create_producer("t")
    with pytest.raises(InvalidArgument, match="timedelta"):
        producer.send(b"x", deliver_after=5)  # type: ignore[arg-type]


def test_the_publish_step_carries_the_delay_and_needs_the_capability(tmp_path: object) -> None:
    data = {"name": "d", "steps": [{"do": "open", "consumer": "c1"}, {"do": "publish", "count": 2,
                                                                       "deliver_after_ms": 1500}]}  # fmt: skip
    scenario = parse_scenario(data)
    (publish,) = [s for s in scenario.steps if isinstance(s, Publish)]
    assert publish.deliver_after_ms == 1500
    assert scenario.uses_delayed_delivery()
    assert scenario.required_capabilities() == {"delayed_delivery": "step 2 (publish with deliver_after_ms)"}
    path = tmp_path / "d.toml"  # type: ignore[operator]
    dump_scenario(scenario, path)
    assert load_scenario(path) == scenario
    data["steps"][1]["deliver_after_ms"] = -1  # type: ignore[index]
    with pytest.raises(InvalidScenario, match="deliver_after_ms: expected an integer >= 0"):
        parse_scenario(data)


def test_the_real_client_is_asked_for_the_delay() -> None:
    from pytest_keyshared.driver.handles import OutgoingMessage
    from pytest_keyshared.driver.pulsar_client import PulsarProducer

    message = OutgoingMessage(
        key="k", seq=1, uid="p1:1", payload=b"x", partition_key="k", ordering_key=None, properties={},
        deliver_after_ms=1500,
    )  # fmt: skip
    kwargs = PulsarProducer._send_kwargs(message)
    assert kwargs["deliver_after"] == timedelta(milliseconds=1500)
    assert "deliver_after" not in PulsarProducer._send_kwargs(replace(message, deliver_after_ms=0))
