"""The contract of a non-persistent topic (``docs/checker.md``, "Non-persistent topics"), proven both ways.

Loss is allowed (``undelivered`` permitted), a second delivery of a message is ``delivered_twice`` whatever came
between, two holders of a key are ``key_overlap``, and per-key order holds among what arrives. Each planted fault
fails; the same trace from a correct broker passes, also with every event at one timestamp and with acks that
arrive late or never. The independent reference checker (``tests/quality/reference_checker.py``) agrees on each.
"""

from __future__ import annotations

import pytest
from reference_checker import engine_identities, reference_check

from conformance.checks import Kind, Validity, check_trace
from conformance.trace import SubscriptionSpec, TraceHeader
from conformance.trace.builder import TraceBuilder


def header(non_persistent: bool = True) -> TraceHeader:
    extra = {"topic_kind": "non-persistent"} if non_persistent else {}
    return TraceHeader(target="hand-written", subscription=SubscriptionSpec("s"), extra=extra)


def builder(non_persistent: bool = True, step: int = 10) -> TraceBuilder:
    return TraceBuilder(header(non_persistent), topic="non-persistent://public/default/t", step=step)


def judged(b: TraceBuilder) -> tuple[Validity, set[tuple[Kind, tuple[int, ...]]], set[Kind]]:
    verdict = check_trace(b.events, header=b.header)
    assert engine_identities(verdict.all_violations()) == reference_check(b.header, b.events)
    return (
        verdict.validity,
        {(v.kind, v.events) for v in verdict.violations},
        {v.kind for v in verdict.allowed},
    )


# --- a correct broker passes -------------------------------------------------------------------------------
@pytest.mark.parametrize("step", [10, 0], ids=["timestamps", "equal-timestamps"])
def test_drops_are_allowed_and_order_holds_among_what_arrives(step: int) -> None:
    b = builder(step=step)
    b.open("c1")
    b.publish("k", "0:1")  # E1: dropped (c1 had no permits)
    b.publish("k", "0:2")
    b.receive("c1", "k", "0:2")  # overtakes nothing: 0:1 is not waiting anywhere
    b.ack("c1", "0:2")
    b.end()
    validity, violations, allowed = judged(b)
    assert (validity, violations) == (Validity.VALID, set())
    assert allowed == ({Kind.UNDELIVERED} if step else allowed & {Kind.UNDELIVERED})


def test_the_same_drop_on_a_persistent_topic_is_undelivered_and_out_of_order() -> None:
    b = builder(non_persistent=False)
    b.open("c1")
    b.publish("k", "0:1")
    b.publish("k", "0:2")
    b.receive("c1", "k", "0:2")
    b.ack("c1", "0:2")
    b.end()
    validity, violations, _ = judged(b)
    assert validity is Validity.INVALID
    assert {kind for kind, _ in violations} == {Kind.UNDELIVERED, Kind.OUT_OF_ORDER}


@pytest.mark.parametrize("step", [10, 0], ids=["timestamps", "equal-timestamps"])
def test_a_nack_or_a_close_brings_nothing_back_and_late_acks_change_nothing(step: int) -> None:
    b = builder(step=step)
    b.open("c1")
    b.open("c2")
    b.publish("k", "0:1")
    b.publish("k", "0:2")
    b.receive("c1", "k", "0:1")
    b.nack("c1", "0:1")  # nothing comes back: fine
    b.receive("c1", "k", "0:2")
    b.close("c1")  # 0:2 held at the close: gone with c1
    b.ack("c1", "0:2")  # a late ack, after the close
    b.publish("k", "0:3")
    b.receive("c2", "k", "0:3")  # the key moved to c2 (c2 never acks: the ack may never have arrived)
    b.end()
    validity, violations, allowed = judged(b)
    assert (validity, violations) == (Validity.VALID, set())
    assert allowed <= {Kind.UNDELIVERED}


# --- planted faults fail -------------------------------------------------------------------------------
@pytest.mark.parametrize("step", [10, 0], ids=["timestamps", "equal-timestamps"])
def test_a_message_delivered_again_after_a_nack_is_delivered_twice(step: int) -> None:
    b = builder(step=step)
    b.open("c1")
    b.publish("k", "0:1")
    b.receive("c1", "k", "0:1")  # E2
    b.nack("c1", "0:1")
    b.receive("c1", "k", "0:1")  # E4: a persistent topic would redeliver it; a non-persistent one never does
    b.ack("c1", "0:1")
    b.end()
    validity, violations, _ = judged(b)
    assert validity is Validity.INVALID
    assert violations == {(Kind.DELIVERED_TWICE, (2, 4))}
    verdict = check_trace(b.events, header=b.header)
    assert "delivered twice on a non-persistent topic" in verdict.violations[0].explanation


def test_the_same_redelivery_on_a_persistent_topic_is_fine() -> None:
    b = builder(non_persistent=False)
    b.open("c1")
    b.publish("k", "0:1")
    b.receive("c1", "k", "0:1")
    b.nack("c1", "0:1")
    b.receive("c1", "k", "0:1")
    b.ack("c1", "0:1")
    b.end()
    validity, violations, _ = judged(b)
    assert (validity, violations) == (Validity.VALID, set())


def test_a_leaver_s_message_sent_to_the_survivor_is_delivered_twice() -> None:
    b = builder()
    b.open("c1")
    b.open("c2")
    b.publish("k", "0:1")
    b.receive("c1", "k", "0:1")  # E3
    b.close("c1")
    b.receive("c2", "k", "0:1")  # E5: a non-persistent topic keeps nothing to redeliver
    b.ack("c2", "0:1")
    b.end()
    validity, violations, _ = judged(b)
    assert validity is Validity.INVALID
    assert violations == {(Kind.DELIVERED_TWICE, (3, 5))}


def test_two_holders_of_a_key_and_order_among_arrivals() -> None:
    b = builder()
    b.open("c1")
    b.open("c2")
    b.publish("k", "0:1")
    b.publish("k", "0:2")
    b.receive("c1", "k", "0:1")  # E4: held by c1
    b.receive("c2", "k", "0:2")  # E5: the key at two consumers, and 0:2 overtakes the held 0:1
    b.ack("c1", "0:1")
    b.ack("c2", "0:2")
    b.end()
    validity, violations, _ = judged(b)
    assert validity is Validity.INVALID
    assert {kind for kind, _ in violations} == {Kind.KEY_OVERLAP, Kind.OUT_OF_ORDER}


def test_a_keyless_message_delivered_twice() -> None:
    b = builder()
    b.open("c1")
    b.publish(None, "0:1")
    b.receive("c1", None, "0:1")
    b.receive("c1", None, "0:1")
    b.ack("c1", "0:1")
    b.end()
    validity, violations, _ = judged(b)
    assert validity is Validity.INVALID
    assert {kind for kind, _ in violations} == {Kind.DELIVERED_TWICE}


def test_a_join_moves_a_held_key_at_once_which_is_no_violation() -> None:
    b = builder()
    b.open("c1")
    b.publish("k", "0:1")
    b.receive("c1", "k", "0:1")  # E2: c1 holds k
    b.open("c2")  # E3: the selector gives k to c2 at once (nothing drains on a non-persistent topic)
    b.publish("k", "0:2")
    b.receive("c2", "k", "0:2")  # E5: two holders, a later message first: Pulsar's behaviour here
    b.ack("c1", "0:1")
    b.ack("c2", "0:2")
    b.end()
    validity, violations, _ = judged(b)
    assert (validity, violations) == (Validity.VALID, set())


def test_the_same_join_on_a_persistent_topic_must_drain() -> None:
    b = builder(non_persistent=False)
    b.open("c1")
    b.publish("k", "0:1")
    b.receive("c1", "k", "0:1")
    b.open("c2")
    b.publish("k", "0:2")
    b.receive("c2", "k", "0:2")
    b.ack("c1", "0:1")
    b.ack("c2", "0:2")
    b.end()
    validity, violations, _ = judged(b)
    assert validity is Validity.INVALID
    assert {kind for kind, _ in violations} == {Kind.KEY_OVERLAP, Kind.OUT_OF_ORDER}


def test_a_hold_that_began_after_the_latest_join_is_judged() -> None:
    b = builder()
    b.open("c1")
    b.open("c2")  # E1: the latest join
    b.publish("k", "0:1")
    b.publish("k", "0:2")
    b.receive("c1", "k", "0:1")  # E4: after the join
    b.receive("c2", "k", "0:2")  # E5: nothing moved k since E4
    b.ack("c1", "0:1")
    b.ack("c2", "0:2")
    b.end()
    validity, violations, _ = judged(b)
    assert validity is Validity.INVALID
    assert violations == {(Kind.KEY_OVERLAP, (4, 5)), (Kind.OUT_OF_ORDER, (4, 5))}
