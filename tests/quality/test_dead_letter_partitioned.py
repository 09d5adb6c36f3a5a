"""Dead letters on a partitioned topic: message identity and the dead-letter accounting are per partition.

On a partitioned topic each partition is a topic with its own ledgers, subscription and dispatcher, and the client
dead-letters a partition's message through that partition's consumer, to that partition's dead-letter topic
(``DeadLetterTopicTest.testDeadLetterTopicUnderPartitionedTopicWithKeyShareType``).  The driver records a
message id with its partition (``ledger:entry:<i>:-1``) on the partitioned name, and a ``dead_letter`` event with
the copy's ``REAL_TOPIC`` (the partition's name) and ``ORIGIN_MESSAGE_ID`` (the model's client leaves the
partition out, the C++ client writes it).  Proven, both engines and the reference, with distinct and equal
timestamps: partition 1's ``1:0`` is another message than partition 0's ``1:0`` (received after the other was
dead-lettered, it is no ``received_after_dead_letter``; never received, it is ``undelivered`` whatever partition
0's dead letter says), while partition 0's ``1:0`` delivered again after its dead letter is in both.
"""

from __future__ import annotations

from collections import Counter

import pytest
from test_dead_letter import MAX, STEPS, header, kinds

from conformance.checks import Kind
from conformance.trace.builder import TraceBuilder

TOPIC = "persistent://public/default/pt"
P0 = f"{TOPIC}-partition-0"
P1 = f"{TOPIC}-partition-1"
#: the original's id as the dead-letter copy names it: the model's client (no partition), the C++ client's
ORIGINS = pytest.mark.parametrize("origin", ["1:0:-1:-1", "1:0:0:-1"], ids=["origin-without-partition", "origin-cpp"])


def run(
    *, step: int, origin: str, again: bool = False, p1_received: bool = True, dead: tuple[str, str] = ("bad", P0)
) -> TraceBuilder:
    """c1 nacks partition 0's ``1:0`` (key "bad") N + 1 times and the client dead-letters it (``dead_topic``:
    the key and partition the copy names); then c2 receives and acknowledges partition 1's ``1:0`` (key "good": same
    ledger and entry, another partition), unless not ``p1_received``; ``again``: c2 then receives partition 0's."""
    b = TraceBuilder(header(), step=step, topic=TOPIC)
    b.open("c1")
    b.open("c2")
    b.publish("bad", "1:0:0:-1")
    b.publish("good", "1:0:1:-1")
    for _ in range(MAX + 1):
        b.receive("c1", "bad", "1:0:0:-1")
        b.nack("c1", "1:0:0:-1")
    b.dead_letter(dead[0], origin, topic=dead[1])
    if p1_received:
        b.receive("c2", "good", "1:0:1:-1")
        b.ack("c2", "1:0:1:-1")
    if again:
        b.receive("c2", "bad", "1:0:0:-1")
        b.ack("c2", "1:0:0:-1")
    b.end(drained=True)
    return b


@STEPS
@ORIGINS
def test_the_other_partitions_message_at_the_same_position_is_another_message(step: int, origin: str) -> None:
    assert kinds(run(step=step, origin=origin)) == Counter()


@STEPS
@ORIGINS
def test_the_dead_lettered_partitions_message_delivered_again_is_in_both(step: int, origin: str) -> None:
    assert kinds(run(step=step, origin=origin, again=True)) == Counter({Kind.RECEIVED_AFTER_DEAD_LETTER: 1})


@ORIGINS
def test_a_dead_letter_of_one_partition_does_not_deliver_the_other(origin: str) -> None:
    # distinct timestamps only: a message published at the very instant the run ends is never judged undelivered
    assert kinds(run(step=10, origin=origin, p1_received=False)) == Counter({Kind.UNDELIVERED: 1})


@STEPS
def test_a_dead_letter_naming_the_wrong_partition_is_judged_as_that_partitions(step: int) -> None:
    # the copy is partition 1's 1:0 (its key), which nobody had received: dead-lettered early (routed on another
    # partition's count), and its later receive is in both
    found = kinds(run(step=step, origin="1:0:-1:-1", dead=("good", P1)))
    assert found[Kind.DEAD_LETTERED_EARLY] == 1 and found[Kind.RECEIVED_AFTER_DEAD_LETTER] == 1, found


def test_an_ack_never_logged_does_not_matter() -> None:
    b = run(step=10, origin="1:0:-1:-1")
    b.events = [e for e in b.events if not (e.op.value == "ack" and e.msg_id == "1:0:1:-1")]
    assert kinds(b) == Counter()  # partition 1's 1:0 held at the end: delivered
