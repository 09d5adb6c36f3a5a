"""undelivered, unexpected_message, redelivered_after_ack and duplicate_publish on hand-written traces."""

from __future__ import annotations

from conformance.checks import Kind, Validity, check_trace
from conformance.trace import SubscriptionSpec, TraceHeader
from conformance.trace.builder import TraceBuilder


def kinds(b: TraceBuilder, profile: str | None = None) -> list[tuple[Kind, tuple[int, ...]]]:
    verdict = check_trace(b.events, header=b.header, profile=profile)
    return [(v.kind, v.events) for v in verdict.all_violations()]


def dedup_header(on: bool = True) -> TraceHeader:
    return TraceHeader(target="hand-written", subscription=SubscriptionSpec("s"), deduplication=on)


# --- undelivered ------------------------------------------------------------------------------------------
def test_a_published_message_never_received_in_a_drained_run() -> None:
    b = TraceBuilder()
    b.open("c1")
    b.publish("k", "1:0")  # E1
    b.publish("j", "1:1")  # E2
    b.receive("c1", "j", "1:1")
    b.ack("c1", "1:1")
    b.end()  # E5
    verdict = check_trace(b.events, header=b.header)
    (v,) = verdict.violations
    assert (v.kind, v.key, v.events) == (Kind.UNDELIVERED, "k", (1,))
    assert "drained (E5)" in v.explanation


def test_a_message_released_by_a_crash_and_never_received_again() -> None:
    b = TraceBuilder()
    b.open("c1")
    b.open("c2")
    b.publish("k", "1:0")
    b.receive("c1", "k", "1:0")
    b.crash("c1")  # E4
    b.end()
    verdict = check_trace(b.events, header=b.header)
    assert [(v.kind, v.events, v.consumers) for v in verdict.violations] == [(Kind.UNDELIVERED, (4,), ("c1",))]


def test_undelivered_is_not_judged_when_the_run_was_not_drained() -> None:
    b = TraceBuilder()
    b.open("c1")
    b.publish("k", "1:0")
    b.end(drained=False)
    verdict = check_trace(b.events, header=b.header)
    assert verdict.violations == () and verdict.validity is Validity.UNKNOWN and verdict.valid
    assert verdict.unjudged == (Kind.UNDELIVERED,)
    assert any("not drained" in note for note in verdict.notes)
    strict = check_trace(b.events, header=b.header, profile="strict")
    assert not strict.valid and strict.validity is Validity.UNKNOWN


def test_no_end_event_means_not_drained() -> None:
    b = TraceBuilder()
    b.open("c1")
    b.publish("k", "1:0")
    assert check_trace(b.events, header=b.header).unjudged == (Kind.UNDELIVERED,)


def test_timed_out_failed_and_deduplicated_sends_are_not_expected() -> None:
    b = TraceBuilder(dedup_header())
    b.open("c1")
    b.publish("k", "1:0", result="info")  # outcome unknown: expected only if it shows up
    b.publish("k", "1:1", result="fail")
    b.publish("k", "-1:-1", seq=0)  # a deduplicated resend: stored under an earlier id, not a new message
    b.end()
    assert kinds(b) == []


def test_a_timed_out_send_that_shows_up_is_recovered() -> None:
    b = TraceBuilder()
    b.open("c1")
    b.publish("k", "1:0", result="info")
    b.receive("c1", "k", "1:0")
    b.ack("c1", "1:0")
    b.end()
    assert kinds(b) == []


def test_a_message_held_at_the_end_was_delivered() -> None:
    b = TraceBuilder()
    b.open("c1")
    b.publish("k", "1:0")
    b.receive("c1", "k", "1:0")
    b.end()
    assert kinds(b) == []


# --- unexpected_message ----------------------------------------------------------------------------------
def test_a_received_uid_nobody_published() -> None:
    b = TraceBuilder()
    b.open("c1")
    b.receive("c1", "k", "1:9", uid="ghost")  # E1
    b.receive("c1", "k", "1:9", uid="ghost")  # the same uid again: one report, at its first receive
    b.ack("c1", "1:9")
    b.end()
    verdict = check_trace(b.events, header=b.header)
    assert [(v.kind, v.events, v.facts["uid"]) for v in verdict.violations] == [
        (Kind.UNEXPECTED_MESSAGE, (1,), "ghost")
    ]


def test_a_receive_logged_before_its_publish_is_expected() -> None:
    b = TraceBuilder()
    b.open("c1")
    b.receive("c1", "k", "1:0")
    b.ack("c1", "1:0")
    b.publish("k", "1:0", result="info")  # any publish event registers the uid
    b.end()
    assert kinds(b) == []


def test_receives_without_uid_are_not_judged() -> None:
    b = TraceBuilder()
    b.open("c1")
    b.add("receive", consumer="c1", topic="t", key="k", msg_id="1:0")
    b.ack("c1", "1:0")
    b.end()
    assert kinds(b) == []


# --- redelivered_after_ack -------------------------------------------------------------------------------
def redelivery(disarm: str | None) -> TraceBuilder:
    b = TraceBuilder()
    b.open("c1")  # E0
    b.open("c2")  # E1
    b.publish("k", "1:0")  # E2
    b.receive("c1", "k", "1:0")  # E3
    b.ack("c1", "1:0")  # E4
    if disarm == "crash":
        b.crash("c1")
    elif disarm == "close":
        b.close("c1")
    elif disarm == "redeliver":
        b.redeliver("c1")
    elif disarm == "fault":
        b.fault()
    b.receive("c2", "k", "1:0")
    b.receive("c2", "k", "1:0")  # a second receive of the same delivery is not reported again
    b.ack("c2", "1:0")
    b.end()
    return b


def test_a_message_received_again_after_its_holder_acknowledged_it() -> None:
    verdict = check_trace(redelivery(None).events, header=redelivery(None).header)
    (v,) = verdict.violations
    assert (v.kind, v.events, v.consumers) == (Kind.REDELIVERED_AFTER_ACK, (4, 5), ("c1", "c2"))


def test_a_crash_fault_or_redeliver_of_the_acker_excuses_the_redelivery_but_a_close_does_not() -> None:
    for disarm in ("crash", "fault", "redeliver"):
        assert kinds(redelivery(disarm)) == [], disarm
    assert kinds(redelivery("close")) == [(Kind.REDELIVERED_AFTER_ACK, (4, 6))]


def test_an_ack_of_a_message_the_acker_did_not_hold_arms_nothing() -> None:
    b = TraceBuilder()
    b.open("c1")
    b.publish("k", "1:0")
    b.receive("c1", "k", "1:0")
    b.nack("c1", "1:0")  # released...
    b.ack("c1", "1:0")  # ...then acknowledged: may race with the redelivery the nack caused
    b.receive("c1", "k", "1:0")
    b.ack("c1", "1:0")
    b.end()
    assert kinds(b) == []


# --- duplicate_publish -----------------------------------------------------------------------------------
def test_one_producer_sequence_stored_under_two_ids() -> None:
    b = TraceBuilder(dedup_header())
    b.open("c1")
    b.publish("k", "1:0", seq=7, uid="a")  # E1
    b.publish("k", "1:1", seq=7, uid="a")  # E2: the resend was stored again
    for msg in ("1:0", "1:1"):
        b.receive("c1", "k", msg, uid="a")
        b.ack("c1", msg)
    b.end()
    verdict = check_trace(b.events, header=b.header)
    (v,) = verdict.violations
    assert (v.kind, v.events, v.facts["producer"], v.facts["seq"]) == (Kind.DUPLICATE_PUBLISH, (1, 2), "p", 7)


def test_a_deduplicated_resend_answered_with_minus_one_is_clean() -> None:
    b = TraceBuilder(dedup_header())
    b.open("c1")
    b.publish("k", "1:0", seq=3, uid="a")
    b.publish("k", "-1:-1", seq=3, uid="a")  # the broker's receipt for a dropped duplicate
    b.receive("c1", "k", "1:0", uid="a")
    b.ack("c1", "1:0")
    b.end()
    verdict = check_trace(b.events, header=b.header)
    assert verdict.valid and verdict.all_violations() == ()


def test_a_duplicate_seen_only_by_the_consumer() -> None:
    b = TraceBuilder(dedup_header())
    b.open("c1")
    b.publish("k", "1:0", seq=3, uid="a", result="info")  # timed out: stored as 1:0 after all
    b.publish("k", "1:1", seq=3, uid="a")  # E2: the resend, stored again
    b.receive("c1", "k", "1:0", uid="a")  # E3: evidence of the first id
    b.ack("c1", "1:0")
    b.receive("c1", "k", "1:1", uid="a")
    b.ack("c1", "1:1")
    b.end()
    assert kinds(b) == [(Kind.DUPLICATE_PUBLISH, (2, 3))]


def test_duplicates_are_permitted_when_deduplication_is_off() -> None:
    b = TraceBuilder(dedup_header(on=False))
    b.open("c1")
    b.publish("k", "1:0", seq=0, uid="a")
    b.publish("k", "1:1", seq=0, uid="a")
    for msg in ("1:0", "1:1"):
        b.receive("c1", "k", msg, uid="a")
        b.ack("c1", msg)
    b.end()
    verdict = check_trace(b.events, header=b.header)
    assert verdict.valid and verdict.violations == ()
    assert [v.kind for v in verdict.allowed] == [Kind.DUPLICATE_PUBLISH]
    assert verdict.counts["duplicate_publish"] == 1
