"""The effective deduplication flag: topic policy -> namespace policy -> broker setting; never system topics."""

from __future__ import annotations

import pytest

from reference_model.dedup import effective_deduplication, is_system_topic
from reference_model.errors import InvalidArgument


@pytest.mark.parametrize(
    ("topic_policy", "namespace_policy", "broker_enabled", "expected"),
    [
        (None, None, False, False),
        (None, None, True, True),
        (None, True, False, True),
        (None, False, True, False),
        (True, False, False, True),
        (False, True, True, False),
    ],
)
def test_first_set_policy_wins(topic_policy, namespace_policy, broker_enabled, expected) -> None:
    assert (
        effective_deduplication(
            topic_policy=topic_policy, namespace_policy=namespace_policy, broker_enabled=broker_enabled
        )
        is expected
    )


@pytest.mark.parametrize(
    "topic",
    [
        "persistent://tenant/ns-abc/__change_events",
        "persistent://tenant/ns-abc/__change_events-partition-3",
        "persistent://tenant/ns/__transaction_buffer_snapshot",
        "persistent://pulsar/system/transaction_coordinator_assign-partition-0",
        "persistent://pulsar/system/__transaction_log_0",
        "persistent://tenant/ns/my-topic-my-sub__transaction_pending_ack",
    ],
)
def test_never_for_system_topics(topic) -> None:
    """``testMessageDeduplicationShouldNotWorkForSystemTopic``: broker, namespace and topic level all on."""
    assert is_system_topic(topic)
    assert not effective_deduplication(topic_policy=True, namespace_policy=True, broker_enabled=True, topic=topic)


@pytest.mark.parametrize(
    "topic",
    ["persistent://public/default/orders", "persistent://public/default/change_events", "my-topic-partition-2"],
)
def test_ordinary_topics(topic) -> None:
    assert not is_system_topic(topic)
    assert effective_deduplication(namespace_policy=True, topic=topic)


def test_never_for_non_persistent_topics() -> None:
    assert not effective_deduplication(topic_policy=True, topic="non-persistent://public/default/t")


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"topic_policy": "true"}, "topic_policy='true'"),
        ({"namespace_policy": 1}, "namespace_policy=1"),
        ({"broker_enabled": None}, None),
    ],
)
def test_flags_must_be_bool_or_none(kwargs, fragment) -> None:
    if fragment is None:
        assert effective_deduplication(**kwargs) is False
        return
    with pytest.raises(InvalidArgument) as info:
        effective_deduplication(**kwargs)
    assert fragment in str(info.value)


def test_topic_must_be_a_string() -> None:
    with pytest.raises(InvalidArgument, match="topic=42"):
        is_system_topic(42)  # type: ignore[arg-type]
