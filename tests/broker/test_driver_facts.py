"""What every driver trace on a real broker promises the checkers, checked on a run that does a bit of everything.

* ``receive``, ``ack`` and ``nack`` carry ``topic`` (the run's topic) and a ``msg_id`` of four integers,
  ``ledger:entry:partition:batch_index``;
* no consumer is subscribed with an ack timeout (``unacked_messages_timeout_ms``): the client would then ask
  for redeliveries on its own, which no trace event would show.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pulsar
import pytest

from conformance.scenarios import (
    AckHeld,
    Behaviour,
    Crash,
    KeySet,
    NackHeld,
    Open,
    Publish,
    Redeliver,
    Scenario,
    Settings,
    WaitQuiet,
)
from pytest_keyshared.driver import run_scenario
from pytest_keyshared.driver.selfcheck import discipline_problems
from pytest_keyshared.targets.pulsar_lite import PulsarLiteTarget

pytestmark = pytest.mark.broker

MSG_ID = re.compile(r"^-?\d+:-?\d+:-?\d+:-?\d+$")

EVERYTHING = Scenario(
    name="driver-facts",
    steps=(
        Open(consumer="c1", behaviour=Behaviour("hold")),
        Open(consumer="c2", behaviour=Behaviour("nack")),
        Open(consumer="c3"),
        Publish(count=30, keys=KeySet(count=6)),
        Publish(count=10, keys=KeySet(count=4), key_field="ordering_key"),
        WaitQuiet(),
        NackHeld(consumer="c1", count=2),
        AckHeld(consumer="c1", count=2),
        Redeliver(consumer="c1"),
        Crash(consumer="c3"),
        WaitQuiet(),
    ),
    settings=Settings(quiet_ms=300, drain_quiet_ms=1500, drain_timeout_ms=6000, step_timeout_ms=5000),
)


@pytest.fixture
def subscribe_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, dict[str, Any]]]]:
    """Every ``pulsar.Client.subscribe`` the driver makes in this process, with its keyword arguments."""
    calls: list[tuple[str, dict[str, Any]]] = []
    real = pulsar.Client.subscribe

    def spy(self: pulsar.Client, topic: Any, subscription_name: str, *args: Any, **kwargs: Any) -> Any:
        calls.append((str(topic), dict(kwargs)))
        return real(self, topic, subscription_name, *args, **kwargs)

    monkeypatch.setattr(pulsar.Client, "subscribe", spy)
    yield calls


def test_message_events_carry_topic_and_full_ids_and_nobody_has_an_ack_timeout(
    lite: PulsarLiteTarget,
    tmp_path: Path,
    events: Callable[[Path], list[dict[str, Any]]],
    subscribe_calls: list[tuple[str, dict[str, Any]]],
) -> None:
    result = run_scenario(lite, EVERYTHING, seed=0, out_dir=tmp_path)
    trace = events(result.trace_path)
    ops = {e["op"] for e in trace}
    assert {"receive", "ack", "nack", "redeliver", "crash"} <= ops
    assert discipline_problems(trace) == []  # the driver's own rule: topic and four-part ids on message events
    assert all(e["topic"] == result.topic for e in trace if e["op"] in ("receive", "ack", "nack"))
    assert any(e["op"] == "publish" and MSG_ID.match(e["msg_id"]) for e in trace)
    on_topic = [kwargs for topic, kwargs in subscribe_calls if topic == result.topic]
    assert len(on_topic) == 2  # c1 and c2 in this process; c3 (crashable) subscribes in its own, same function
    for kwargs in on_topic:
        assert kwargs.get("unacked_messages_timeout_ms") is None
        assert kwargs["consumer_type"] == pulsar.ConsumerType.KeyShared
