"""Whether deduplication is in effect on a topic: topic policy, then namespace policy, then broker setting.

Follows ``PersistentTopic.isDeduplicationEnabled`` (hierarchy topic policies: topic -> namespace -> broker
``brokerDeduplicationEnabled``) and ``SystemTopicNames.isSystemTopic``: deduplication never runs on system
topics (``MessageDuplicationTest.testMessageDeduplicationShouldNotWorkForSystemTopic``) nor on non-persistent
topics (they have no ``MessageDeduplication``; a producer there always gets ``last_sequence_id`` -1). System
topics are excluded from apache/pulsar#22582 on (``DEDUP_SYSTEM_TOPICS_EXCLUDED``); before, they followed the policies.
"""

from __future__ import annotations

from reference_model.errors import InvalidArgument
from reference_model.versions import DEDUP_SYSTEM_TOPICS_EXCLUDED, DEFAULT_VERSION, PulsarVersion, parse_version

__all__ = ["effective_deduplication", "is_system_topic"]

#: Local names of the event system topics (``SystemTopicNames.EVENTS_TOPIC_NAMES``).
_EVENT_TOPIC_NAMES = frozenset({"__change_events", "__transaction_buffer_snapshot"})
_PENDING_ACK_SUFFIX = "__transaction_pending_ack"
_TRANSACTION_PREFIXES = (
    "persistent://pulsar/system/transaction_coordinator_assign",
    "persistent://pulsar/system/__transaction_log_",
)


def _without_partition(name: str) -> str:
    head, sep, tail = name.rpartition("-partition-")
    return head if sep and tail.isdigit() else name


def is_system_topic(topic: str) -> bool:
    """Whether ``topic`` is a Pulsar system topic (``SystemTopicNames.isSystemTopic``).

    Event topics (``__change_events``, ``__transaction_buffer_snapshot``, partition suffix ignored), the
    transaction coordinator topics of ``pulsar/system``, and ``...__transaction_pending_ack`` topics.
    """
    if not isinstance(topic, str):
        raise InvalidArgument(f"Expected a topic name (str) but got topic={topic!r} (type={type(topic).__name__}).")
    full = _without_partition(topic)
    local = full.rsplit("/", 1)[-1]
    return local in _EVENT_TOPIC_NAMES or full.startswith(_TRANSACTION_PREFIXES) or full.endswith(_PENDING_ACK_SUFFIX)


def _check_flag(name: str, value: object) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise InvalidArgument(
        f"Expected True, False or None (policy not set) for {name} but got {name}={value!r}"
        f" (type={type(value).__name__})."
    )


def effective_deduplication(
    *,
    topic_policy: bool | None = None,
    namespace_policy: bool | None = None,
    broker_enabled: bool = False,
    topic: str | None = None,
    version: str | PulsarVersion = DEFAULT_VERSION,
) -> bool:
    """The effective ``deduplicationEnabled`` of a topic.

    The first policy that is set wins: ``topic_policy``, then ``namespace_policy``, then the broker's
    ``brokerDeduplicationEnabled`` (default false). ``None`` means "not set" (what ``removeDeduplicationStatus``
    restores). When ``topic`` is given, ``non-persistent://`` topics are never deduplicated, and neither are system
    topics from apache/pulsar#22582 (3.0.5, 3.2.3, 3.3.0; ``version``): before it they followed the policies.
    """
    topic_flag = _check_flag("topic_policy", topic_policy)
    namespace_flag = _check_flag("namespace_policy", namespace_policy)
    broker_flag = _check_flag("broker_enabled", broker_enabled)
    if topic is not None:
        if topic.startswith("non-persistent://"):
            return False
        if is_system_topic(topic) and parse_version(version).has(DEDUP_SYSTEM_TOPICS_EXCLUDED):
            return False
    if topic_flag is not None:
        return topic_flag
    if namespace_flag is not None:
        return namespace_flag
    return bool(broker_flag)
