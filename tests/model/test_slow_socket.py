"""A consumer whose client stops reading its socket, per release (``KeySharedSlowConsumerTest``, apache/pulsar#26635).

Before 5.0.0 both Key_Shared dispatchers keep writing to the stalled consumer while it has permits, and read again
only once every write of a round completed: the other consumer gets nothing more until an unrelated trigger (its own
``Flow``) or the stalled client reading again.  From 5.0.0 an unwritable consumer gets nothing and the others go on.
Keys ``key-14`` (``slow``'s) and ``key-22`` (``fast``'s) are theirs on every selector era.
"""

from __future__ import annotations

import pytest

from reference_model.broker import ModelBroker

TOPIC = "persistent://public/default/slow-socket"
SLOW_KEY, FAST_KEY = "key-14", "key-22"


def _drain(consumer: object) -> list[int]:
    got = []
    while (message := consumer.receive(timeout_millis=0)) is not None:  # type: ignore[attr-defined]
        got.append(int(message.data()))
        consumer.acknowledge(message)  # type: ignore[attr-defined]
    return got


def _take(consumer: object) -> list[int]:
    """What arrived, left unacknowledged (an acknowledgement that moves the mark-delete position reads again)."""
    got = []
    while (message := consumer.receive(timeout_millis=0)) is not None:  # type: ignore[attr-defined]
        got.append(int(message.data()))
    return got


def _run(version: str, implementation: str | None = None) -> tuple[ModelBroker, object, object, object]:
    broker = ModelBroker(version, implementation)
    slow = broker.subscribe(TOPIC, "s", consumer_name="slow", receiver_queue_size=2000)
    fast = broker.subscribe(TOPIC, "s", consumer_name="fast", receiver_queue_size=2000)
    slow.stall_connection()
    producer = broker.create_producer(TOPIC, producer_name="p")
    for i in range(50):
        producer.send(str(i).encode(), partition_key=SLOW_KEY if i % 5 else FAST_KEY)
    broker.run_until_idle()
    return broker, slow, fast, producer


@pytest.mark.parametrize(
    ("version", "implementation"), [("4.0", None), ("4.2", None), ("4.0", "classic"), ("3.0", None)]
)
def test_before_the_fix_a_stalled_socket_stops_dispatch_to_the_others(version: str, implementation: str | None) -> None:
    broker, slow, fast, _producer = _run(version, implementation)
    assert _drain(fast) == [0]  # the second entry went to the stalled socket: no read follows its round
    assert _drain(slow) == []  # written, but backed up unread
    slow.resume_connection()  # type: ignore[attr-defined]
    broker.run_until_idle()
    assert _drain(fast) == list(range(5, 50, 5))
    assert _drain(slow) == [i for i in range(50) if i % 5]


def test_before_the_fix_a_flow_of_the_other_consumer_reads_one_more_round() -> None:
    broker, _slow, fast, producer = _run("4.0")
    assert _take(fast) == [0]
    producer.send(b"50", partition_key=FAST_KEY)  # type: ignore[attr-defined]
    broker.run_until_idle()
    assert _take(fast) == []  # no read is armed: the new entry waits too
    sub = broker.subscription(TOPIC, "s")
    assert sub is not None and sub.dispatcher is not None
    sub.flow(fast.server, 1)  # type: ignore[attr-defined]  # an explicit trigger: readMoreEntries reads
    broker.run_until_idle()
    assert _take(fast) == [*range(5, 51, 5)]  # one read of every entry: fast's go out, slow's back up again


def test_from_the_fix_the_others_go_on_and_the_stalled_consumer_gets_nothing_until_it_reads() -> None:
    broker, slow, fast, _producer = _run("5.0")
    assert _drain(fast) == list(range(0, 50, 5))
    assert _drain(slow) == []
    slow.resume_connection()  # type: ignore[attr-defined]
    broker.run_until_idle()
    assert _drain(slow) == [i for i in range(50) if i % 5]  # replayed in order once writable
