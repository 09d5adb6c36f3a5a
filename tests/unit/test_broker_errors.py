"""Every invalid argument of the model broker's API, in one table: each names the value and what would work."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from reference_model.broker import BrokerConfig, KeySharedPolicy, ModelBroker
from reference_model.errors import InvalidArgument, UnknownVersion
from reference_model.keyshared import DispatcherSettings
from reference_model.storage.entry import MessageMetadata, SingleMessage


def _broker() -> ModelBroker:
    return ModelBroker()


CASES: list[tuple[str, Callable[[], Any], str]] = [
    ("ModelBroker(pulsar_version='5.9')", lambda: ModelBroker(pulsar_version="5.9"), "not a release line"),
    ("ModelBroker(implementation='pip-379')", lambda: ModelBroker(implementation="pip-379"), "Did you mean 'pip379'"),
    (
        "ModelBroker(pulsar_version='3.3', implementation='pip379')",
        lambda: ModelBroker(pulsar_version="3.3", implementation="pip379"),
        "needs Pulsar 4.0",
    ),
    ("ModelBroker(seed='1')", lambda: ModelBroker(seed="1"), "Expected an int for seed"),  # type: ignore[arg-type]
    ("ModelBroker(cluster='')", lambda: ModelBroker(cluster=""), "non-empty cluster"),
    ("ModelBroker(config={})", lambda: ModelBroker(config={}), "Expected a BrokerConfig"),  # type: ignore[arg-type]
    (
        "BrokerConfig(crash_detection_delay_ms=-1)",
        lambda: BrokerConfig(crash_detection_delay_ms=-1),
        "crash_detection_delay_ms must be",
    ),
    (
        "BrokerConfig(subscription_types_enabled=('KeyShared',))",
        lambda: BrokerConfig(subscription_types_enabled=("KeyShared",)),
        "Did you mean 'Key_Shared'",
    ),
    (
        "BrokerConfig.from_broker_conf({'keySharedLookahead': 1})",
        lambda: BrokerConfig.from_broker_conf({"keySharedLookahead": 1}),
        "Unknown broker setting 'keySharedLookahead'",
    ),
    ("DispatcherSettings(max_read_batch_size=0)", lambda: DispatcherSettings(max_read_batch_size=0), ">= 1"),
    (
        "DispatcherSettings(lookahead_per_consumer='10')",
        lambda: DispatcherSettings(lookahead_per_consumer="10"),  # type: ignore[arg-type]
        "Expected an int for lookahead_per_consumer",
    ),
    ("KeySharedPolicy(mode='sticky-ish')", lambda: KeySharedPolicy(mode="sticky-ish"), "Expected a Key_Shared mode"),
    ("KeySharedPolicy(mode='STICKY')", lambda: KeySharedPolicy(mode="STICKY"), "must also provide sticky_ranges"),
    (
        "KeySharedPolicy(mode='STICKY', sticky_ranges=[])",
        lambda: KeySharedPolicy(mode="STICKY", sticky_ranges=[]),
        "must not be empty",
    ),
    (
        "KeySharedPolicy(sticky_ranges=[(0, 70000)])",
        lambda: KeySharedPolicy(mode="STICKY", sticky_ranges=[(0, 70000)]),
        "Ranges must be \\[0, 65535\\]",
    ),
    (
        "KeySharedPolicy(sticky_ranges=[(0, 10), (5, 20)])",
        lambda: KeySharedPolicy(mode="STICKY", sticky_ranges=[(0, 10), (5, 20)]),
        "with overlap",
    ),
    ("create_producer(topic='')", lambda: _broker().create_producer(""), "Expected a topic name"),
    (
        "create_producer('kafka://public/default/t')",
        lambda: _broker().create_producer("kafka://public/default/t"),
        "or non-persistent://tenant/namespace/topic",
    ),
    ("create_producer(producer_name='')", lambda: _broker().create_producer("t", producer_name=""), "non-empty"),
    (
        "create_producer(batching_type='Keyed')",
        lambda: _broker().create_producer("t", batching_type="Keyed"),
        "Expected a batching type",
    ),
    (
        "create_producer(batching_max_messages=0)",
        lambda: _broker().create_producer("t", batching_max_messages=0),
        "batching_max_messages must be",
    ),
    (
        "create_producer(chunking_enabled=True)",
        lambda: _broker().create_producer("t", chunking_enabled=True),
        "not modelled",
    ),
    ("subscribe(consumer_type='Shared')", lambda: _broker().subscribe("t", "s", consumer_type="Shared"), "Key_Shared"),
    ("subscribe(subscription='')", lambda: _broker().subscribe("t", ""), "non-empty subscription"),
    ("subscribe(receiver_queue_size=-1)", lambda: _broker().subscribe("t", "s", receiver_queue_size=-1), ">= 0"),
    (
        "subscribe(initial_position='earliest')",
        lambda: _broker().subscribe("t", "s", initial_position="earliest"),
        "Did you mean 'Earliest'",
    ),
    (
        "subscribe(key_shared_policy='AUTO_SPLIT')",
        lambda: _broker().subscribe("t", "s", key_shared_policy="AUTO_SPLIT"),  # type: ignore[arg-type]
        "Expected a KeySharedPolicy",
    ),
    ("receive(timeout_millis=-5)", lambda: _broker().subscribe("t", "s").receive(-5), "timeout >= 0"),
    ("topic_stats('missing')", lambda: _broker().topic_stats("missing"), "does not exist"),
    ("send(content='text')", lambda: _broker().create_producer("t").send("text"), "Expected bytes"),  # type: ignore[arg-type]
    (
        "send(deliver_after=5)",
        lambda: _broker().create_producer("t").send(b"x", deliver_after=5),  # type: ignore[arg-type]
        "Expected a timedelta",
    ),
    (
        "send(replication_clusters=...)",
        lambda: _broker().create_producer("t").send(b"x", replication_clusters=["r2"]),
        "not modelled",
    ),
    ("write_marker(marker_type='12')", lambda: _broker().write_marker("t", "12", {}, None), "marker_type"),  # type: ignore[arg-type]
    (
        "append_replicated(sequence_id='7'), deduplication off",
        lambda: _broker().append_replicated(
            "t",
            MessageMetadata("p", "7", partition_key="k"),
            [SingleMessage(b"x", 7)],
            "r2",  # type: ignore[arg-type]
        ),
        "Expected an int for sequence_id",
    ),
    (
        "set_namespace_deduplication('yes')",
        lambda: _broker().set_namespace_deduplication("yes"),  # type: ignore[arg-type]
        "True, False or None",
    ),
]


@pytest.mark.parametrize(("call", "fn", "message"), CASES, ids=[c[0] for c in CASES])
def test_invalid_arguments_raise_invalid_argument_naming_the_problem(
    call: str, fn: Callable[[], Any], message: str
) -> None:
    with pytest.raises(InvalidArgument, match=message) as info:
        fn()
    assert info.value.exit_code == 2
    assert "\n" not in str(info.value)


def test_unknown_version_is_an_invalid_argument() -> None:
    with pytest.raises(UnknownVersion):
        ModelBroker(pulsar_version="banana")
