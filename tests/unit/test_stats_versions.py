"""Stats that changed between Pulsar releases while what is delivered did not."""

from __future__ import annotations

from collections import Counter

import pytest

from reference_model.broker import ModelBroker


def _draining_attempts_after_one_publish(version: str) -> tuple[dict[int, int], Counter[int | None], list[bytes]]:
    """c1 holds one message of each of 20 keys when c2 joins; 60 more messages queue in the replay queue behind the
    draining hashes; then one publish of a key that drains nowhere. Returns, per hash draining at c1, how many
    blocked attempts that publish added, the replay queue's positions per hash, and c2's deliveries."""
    broker = ModelBroker(pulsar_version=version)
    producer = broker.create_producer("t", producer_name="p")
    broker.subscribe("t", "s", consumer_name="c1")
    for i in range(20):
        producer.send(f"{i}".encode(), partition_key=f"k{i}")
    c2 = broker.subscribe("t", "s", consumer_name="c2")
    for _ in range(3):
        for i in range(20):
            producer.send(f"{i}".encode(), partition_key=f"k{i}")

    def attempts() -> dict[int, int]:
        c1 = broker.topic_stats("t")["subscriptions"]["s"]["consumers"][0]
        return {h["hash"]: h["blockedAttempts"] for h in c1["drainingHashes"]}

    before = attempts()
    sub = broker.subscription("t", "s")
    assert sub is not None and sub.dispatcher is not None
    queued = Counter(sub.dispatcher.replay.slot_of(p) for p in sub.dispatcher.replay)
    producer.send(b"x", partition_key="not-draining")
    after = attempts()
    delivered = []
    while (message := c2.receive(0)) is not None:
        delivered.append(message.data())
    return {h: after[h] - before[h] for h in before}, queued, delivered


@pytest.mark.parametrize(("old", "new"), [("4.0.2", "4.0.3"), ("4.0.0", "4.0.14")])
def test_blocked_attempts_count_once_per_hash_and_pass_from_23874(old: str, new: str) -> None:
    """``blockedAttempts`` of a draining hash (consumer stats, apache/pulsar#23429): before apache/pulsar#23874
    (4.0.3, ``PIP_379_REPLAY_FILTER_FIX``) the replay filter asked the draining tracker once per queued position
    of the hash, and each ask counts an attempt; from it the hash is remembered as blocked for the rest of the pass
    (``alreadyBlockedHashes``) and counted once. The figures of 4.0.0 - 4.0.2 are therefore the later figures
    times the hash's queued positions; what c2 receives is the same."""
    old_delta, old_queued, old_delivered = _draining_attempts_after_one_publish(old)
    new_delta, new_queued, new_delivered = _draining_attempts_after_one_publish(new)
    assert old_queued == new_queued and old_delivered == new_delivered
    assert old_delta.keys() == new_delta.keys() and old_delta
    for slot, count in new_delta.items():
        assert count > 0
        assert old_delta[slot] == count * old_queued[slot] and old_queued[slot] > 1, slot
