"""``MessageDuplicationTest``'s expectations (``pulsar_vectors``) run through the model at every release they hold."""

from __future__ import annotations

import pytest
from pulsar_vectors import DEDUP_FLAGS, IS_DUPLICATE, DedupFlagVector

from reference_model.broker import BrokerConfig, ModelBroker
from reference_model.dedup import DedupConfig, MessageDeduplication, effective_deduplication


@pytest.mark.parametrize("release", IS_DUPLICATE.releases)
def test_is_duplicate(release: str) -> None:
    dedup = MessageDeduplication(DedupConfig(entries_interval=10, max_producers=10), release)
    dedup.set_enabled(True, now_ns=0)
    for index, step in enumerate(IS_DUPLICATE.steps):
        if step.persist is not None:
            dedup.on_persisted(step.producer, step.persist, -1, (0, index))
        if step.reset_pushed:
            dedup.on_write_failed()
        decision = dedup.is_duplicate(step.producer, step.seq, step.highest)
        assert (decision.value, dedup.pushed()[step.producer]) == (step.decision, step.pushed), (index, step)


def _message_deduplication(release: str) -> bool:
    """``testMessageDeduplication`` (broker deduplication on): a closed producer is inactive; with deduplication
    disabled by topic policy, the next purge leaves no inactive producer. The Pulsar test calls the purge at once;
    the model's purge runs on its timer, one purge period later (well inside the 6-hour inactivity timeout)."""
    broker = ModelBroker(pulsar_version=release, config=BrokerConfig(dedup=DedupConfig(broker_enabled=True)))
    topic = "persistent://tenant/ns-abc/testMessageDeduplication"
    producer = broker.create_producer(topic, producer_name="test-producer")
    assert "test-producer" not in broker.dedup_stats(topic)["inactiveProducers"]
    producer.close()
    assert "test-producer" in broker.dedup_stats(topic)["inactiveProducers"]
    broker.set_topic_deduplication(topic, False)
    assert broker.dedup_stats(topic)["deduplicationStatus"] == "Disabled"
    broker.advance(broker.config.dedup.purge_check_interval_ms)
    return not broker.dedup_stats(topic)["inactiveProducers"]


def _system_topic(release: str) -> bool:
    """``testMessageDeduplicationShouldNotWorkForSystemTopic``: ``isDeduplicationEnabled`` of ``__change_events``
    with the broker setting, then the namespace policy, then the topic policy on; the last answer (all agree)."""
    topic = "persistent://tenant/ns-abc/__change_events"
    answers = {
        effective_deduplication(broker_enabled=True, topic=topic, version=release),
        effective_deduplication(namespace_policy=True, broker_enabled=True, topic=topic, version=release),
        effective_deduplication(topic_policy=True, namespace_policy=True, broker_enabled=True, topic=topic,
                                version=release),
    }  # fmt: skip
    assert len(answers) == 1
    return answers.pop()


_RUN = {
    "MessageDuplicationTest.testMessageDeduplication": _message_deduplication,
    "MessageDuplicationTest.testMessageDeduplicationShouldNotWorkForSystemTopic": _system_topic,
}


@pytest.mark.parametrize(
    ("vector", "release"),
    [pytest.param(v, r, id=f"{v.test.split('.')[-1]}@{r}") for v in DEDUP_FLAGS for r in v.releases],
)
def test_flag_vectors(vector: DedupFlagVector, release: str) -> None:
    assert _RUN[vector.test](release) is vector.expected
