"""What every driver trace promises the checkers, on the model (the same checks run on pulsar-lite in
``tests/broker/test_driver_facts.py``): message events carry ``topic`` and four-part message ids; nobody
subscribes with an ack timeout; the driver's self-check catches a trace that breaks either."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pulsar

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
    WaitQuiet,
)
from pytest_keyshared.driver import run_scenario
from pytest_keyshared.driver.handles import ConsumerSpec
from pytest_keyshared.driver.pulsar_client import consumer_options
from pytest_keyshared.driver.selfcheck import discipline_problems
from pytest_keyshared.targets import open_target

MSG_ID = re.compile(r"^-?\d+:-?\d+:-?\d+:-?\d+$")

EVERYTHING = Scenario(
    name="driver-facts",
    steps=(
        Open(consumer="c1", behaviour=Behaviour("hold")),
        Open(consumer="c2", behaviour=Behaviour("nack")),
        Open(consumer="c3"),
        Publish(count=30, keys=KeySet(count=6)),
        Publish(count=10, keys=KeySet(count=4), key_field="ordering_key", batching="key_based"),
        WaitQuiet(),
        NackHeld(consumer="c1", count=2),
        AckHeld(consumer="c1", count=2),
        Redeliver(consumer="c1"),
        Crash(consumer="c3"),
        WaitQuiet(),
    ),
)


def test_model_traces_carry_topic_and_four_part_ids_on_every_message_event(tmp_path: Path) -> None:
    with open_target("model", artifacts_dir=tmp_path / "target") as target:
        result = run_scenario(target, EVERYTHING, seed=2, out_dir=tmp_path / "run")
    trace = [json.loads(line) for line in result.trace_path.read_text().splitlines()[1:]]
    messages = [e for e in trace if e["op"] in ("receive", "ack", "nack")]
    assert {e["op"] for e in messages} == {"receive", "ack", "nack"}
    assert all(e["topic"] == result.topic for e in messages)
    assert all(MSG_ID.match(e["msg_id"]) for e in messages)
    assert discipline_problems(trace) == []


def test_the_self_check_refuses_message_events_without_topic_or_with_short_ids() -> None:
    trace = [
        {"i": 0, "t": 0, "op": "open", "consumer": "c1", "result": "ok"},
        {"i": 1, "t": 1, "op": "receive", "consumer": "c1", "msg_id": "0:1:-1:-1"},
        {"i": 2, "t": 2, "op": "receive", "topic": "t", "consumer": "c1", "msg_id": "0:2"},
        {"i": 3, "t": 3, "op": "nack", "topic": "t", "consumer": "c1", "msg_id": "0:2"},
        {"i": 4, "t": 4, "op": "redeliver", "topic": "t", "consumer": "c1"},
        {"i": 5, "t": 5, "op": "end", "drained": True},
    ]
    assert discipline_problems(trace) == [
        "event 1 (receive): no topic",
        "event 2 (receive): msg_id '0:2' is not ledger:entry:partition:batch_index",
        "event 3 (nack): msg_id '0:2' is not ledger:entry:partition:batch_index",
    ]


def test_consumers_are_subscribed_without_an_ack_timeout() -> None:
    spec = ConsumerSpec(
        topic="persistent://public/default/t",
        subscription="s",
        name="c1",
        mode="STICKY",
        allow_out_of_order_delivery=False,
        ranges=((0, 65535),),
        receiver_queue=10,
        nack_delay_ms=200,
    )
    options = consumer_options(spec)
    assert "unacked_messages_timeout_ms" not in options
    assert options["consumer_type"] == pulsar.ConsumerType.KeyShared
    assert options["initial_position"] == pulsar.InitialPosition.Earliest
    assert (options["receiver_queue_size"], options["negative_ack_redelivery_delay_ms"]) == (10, 200)
    assert options["key_shared_policy"].key_shared_mode == pulsar.KeySharedMode.Sticky
