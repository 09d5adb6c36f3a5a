"""A late redelivery of an acknowledged message holds no key (``key_overlap``), both engines' rule, both ways.

The contract: a key is *unacknowledged* at no more than one consumer at a time.  A message whose ack was logged
(and not taken back by a ``redelivered_after_ack``) is pending nowhere, so receiving it again — a copy in flight
when a fault or a redeliver request disarmed the ack — does not make the receiver hold its key.  It may still be
acknowledged again, and that ack arms ``redelivered_after_ack`` like any holder's.
"""

from __future__ import annotations

from collections import Counter

import pytest
from reference_checker import engine_identities, reference_check

from conformance.checks import Kind, check_trace
from conformance.trace.builder import TraceBuilder

STEPS = pytest.mark.parametrize("step", [10, 0], ids=["distinct-timestamps", "equal-timestamps"])


def late_copy(*, step: int, disarm: bool = True, pending_copy: bool = False) -> TraceBuilder:
    """c1 acknowledges 1:0 (key k); a fault disarms that ack (``disarm``); c2 receives 1:0 again; then c1
    receives 1:1 of the same key.  ``pending_copy``: c2 receives 1:2 (never acknowledged) instead."""
    b = TraceBuilder(step=step)
    b.open("c1")
    b.open("c2")
    for n in range(3):
        b.publish("k", f"1:{n}")
    b.receive("c1", "k", "1:0")
    b.ack("c1", "1:0")
    if disarm:
        b.fault("client_reconnect")
    b.receive("c2", "k", "1:2" if pending_copy else "1:0")
    b.receive("c1", "k", "1:1")
    b.ack("c1", "1:1")
    b.ack("c2", "1:2" if pending_copy else "1:0")  # a duplicate ack of 1:0, or the copy's first
    if not pending_copy:
        b.receive("c1", "k", "1:2")
        b.ack("c1", "1:2")
    b.end()
    return b


def kinds(b: TraceBuilder) -> Counter[Kind]:
    verdict = check_trace(b.events, header=b.header)
    assert engine_identities(verdict.violations) == reference_check(b.header, b.events)  # the reference agrees
    return Counter(v.kind for v in verdict.violations)


@STEPS
def test_a_late_copy_of_an_acknowledged_message_holds_no_key(step: int) -> None:
    assert kinds(late_copy(step=step)) == Counter()


@STEPS
def test_a_pending_message_received_by_another_consumer_still_overlaps(step: int) -> None:
    found = kinds(late_copy(step=step, pending_copy=True))
    assert found[Kind.KEY_OVERLAP] == 1  # c2 holds 1:2 (never acknowledged) when c1 receives 1:1


@STEPS
def test_a_redelivery_that_breaks_an_armed_ack_makes_the_message_pending_again(step: int) -> None:
    # no fault: c1's ack of 1:0 is armed, so c2's receive is redelivered_after_ack, the broker took the ack
    # back: c2 holds the key (and the earlier 1:0, owed again) when c1 receives 1:1
    found = kinds(late_copy(step=step, disarm=False))
    assert found == Counter({Kind.REDELIVERED_AFTER_ACK: 1, Kind.KEY_OVERLAP: 1, Kind.OUT_OF_ORDER: 1})


def test_the_ack_of_a_late_copy_arms_a_further_redelivery() -> None:
    b = TraceBuilder()
    b.open("c1")
    b.open("c2")
    b.publish("k", "1:0")
    b.receive("c1", "k", "1:0")
    b.ack("c1", "1:0")
    b.fault("client_reconnect")  # disarms c1's ack
    b.receive("c2", "k", "1:0")  # the late copy: allowed, holds no key
    b.ack("c2", "1:0")  # c2 held the copy: its ack arms
    b.receive("c1", "k", "1:0")  # delivered again with no fault since: a broken acknowledgement
    b.ack("c1", "1:0")
    b.end()
    assert kinds(b) == Counter({Kind.REDELIVERED_AFTER_ACK: 1})
    (found,) = check_trace(b.events, header=b.header).violations
    assert found.events == (7, 8)  # c2's ack, then c1's receive


def test_a_crash_of_the_consumer_holding_a_late_copy_frees_nothing() -> None:
    b = TraceBuilder()
    b.open("c1")
    b.open("c2")
    b.publish("k", "1:0")
    b.receive("c1", "k", "1:0")
    b.ack("c1", "1:0")
    b.fault("client_reconnect")
    b.receive("c2", "k", "1:0")
    b.crash("c2")  # its copy was acknowledged: owed to nobody, so not undelivered in a drained run
    b.end()
    assert kinds(b) == Counter()


# --- a batch partly acknowledged, then delivered whole again ---------------------------------------------
# Without batch-index acknowledgements the client acknowledges a batch's entry only once every message of it is
# acknowledged; the broker keeps the entry pending and, after a release, delivers all of it again — the
# messages the application acknowledged with it (pulsar-lite.md 4.9 shows the same on pulsar-lite).

BATCH = [f"1:5:-1:{n}" for n in range(3)]  # one entry of three messages of key k (key-based batching)


def batch_again(*, acked: int, step: int) -> TraceBuilder:
    """c1 receives the batch and acknowledges its first ``acked`` messages, then closes (a close flushes acks:
    it disarms nothing); c2 receives the whole batch again and acknowledges it."""
    b = TraceBuilder(step=step)
    b.open("c1")
    b.open("c2")
    for msg in BATCH:
        b.publish("k", msg)
    for msg in BATCH:
        b.receive("c1", "k", msg)
    for msg in BATCH[:acked]:
        b.ack("c1", msg)
    b.close("c1")
    for msg in BATCH:
        b.receive("c2", "k", msg)
    for msg in BATCH:
        b.ack("c2", msg)
    b.end()
    return b


@STEPS
def test_a_partly_acknowledged_batch_delivered_whole_again_is_no_redelivery_after_ack(step: int) -> None:
    assert kinds(batch_again(acked=2, step=step)) == Counter()


@STEPS
def test_a_fully_acknowledged_batch_delivered_again_is(step: int) -> None:
    # found once, at its first message: that acknowledgement is taken back, so the entry is owed again and the
    # rest of the batch comes with it
    b = batch_again(acked=3, step=step)
    assert kinds(b) == Counter({Kind.REDELIVERED_AFTER_ACK: 1})
    (found,) = check_trace(b.events, header=b.header).violations
    first_ack = next(e.i for e in b.events if e.op.value == "ack")
    first_again = next(e.i for e in b.events if e.op.value == "receive" and e.consumer == "c2")
    assert found.events == (first_ack, first_again)


def test_batches_are_told_apart_by_entry() -> None:
    # 1:6:-1:0 is another entry: its being unacknowledged does not excuse the redelivery of 1:5's messages
    b = TraceBuilder()
    b.open("c1")
    b.open("c2")
    for msg in (*BATCH, "1:6:-1:0"):
        b.publish("k", msg)
    for msg in (*BATCH, "1:6:-1:0"):
        b.receive("c1", "k", msg)
    for msg in BATCH:
        b.ack("c1", msg)
    b.close("c1")
    b.receive("c2", "k", BATCH[0])  # 1:5 was fully acknowledged: a broken acknowledgement
    b.receive("c2", "k", "1:6:-1:0")
    b.ack("c2", BATCH[0])
    b.ack("c2", "1:6:-1:0")
    b.end()
    assert kinds(b)[Kind.REDELIVERED_AFTER_ACK] == 1
