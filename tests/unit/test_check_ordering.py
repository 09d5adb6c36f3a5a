"""out_of_order on hand-written traces, including the clean cases the contract allows."""

from __future__ import annotations

from conformance.checks import Kind, check_trace
from conformance.trace.builder import TraceBuilder


def found(b: TraceBuilder) -> list[tuple[str | None, tuple[int, ...]]]:
    verdict = check_trace(b.events, header=b.header)
    return [(v.key, v.events) for v in verdict.all_violations() if v.kind is Kind.OUT_OF_ORDER]


def test_a_later_message_received_before_an_earlier_known_one() -> None:
    b = TraceBuilder()
    b.open("c1")  # E0
    b.publish("k", "1:0")  # E1
    b.publish("k", "1:1")  # E2
    b.receive("c1", "k", "1:1")  # E3: 1:0 is known and waiting
    b.receive("c1", "k", "1:0")
    b.ack("c1", "1:0")
    b.ack("c1", "1:1")
    b.end()
    verdict = check_trace(b.events, header=b.header)
    (v,) = verdict.violations
    assert (v.kind, v.key, v.events, v.consumers) == (Kind.OUT_OF_ORDER, "k", (1, 3), ("c1",))
    assert v.facts["earlier_msg"] == "1:0:-1:-1" and v.facts["msg"] == "1:1:-1:-1"
    assert "E1 = publish 1:0:-1:-1" in v.explanation


def test_reorder_after_a_nack_is_allowed_and_the_exemption_ends_with_the_ack() -> None:
    b = TraceBuilder()
    b.open("c1")
    for n in range(4):
        b.publish("k", f"1:{n}")  # E1..E4
    b.receive("c1", "k", "1:0")  # E5
    b.nack("c1", "1:0")  # E6: no ordering promise for k while 1:0 is unacknowledged
    b.receive("c1", "k", "1:1")  # E7: allowed
    b.receive("c1", "k", "1:0")  # E8
    b.ack("c1", "1:0")  # E9: exemption over
    b.ack("c1", "1:1")  # E10
    b.receive("c1", "k", "1:3")  # E11: 1:2 is waiting again -> violation
    b.receive("c1", "k", "1:2")
    b.end(drained=False)
    assert found(b) == [("k", (3, 11))]


def test_a_redeliver_request_exempts_the_key() -> None:
    b = TraceBuilder()
    b.open("c1")
    b.publish("k", "1:0")
    b.publish("k", "1:1")
    b.receive("c1", "k", "1:0")
    b.redeliver("c1")
    b.receive("c1", "k", "1:1")
    b.receive("c1", "k", "1:0")
    b.end(drained=False)
    assert found(b) == []


def test_redelivery_after_close_in_the_right_order_is_clean() -> None:
    b = TraceBuilder()
    b.open("c1")
    b.open("c2")
    b.publish("k", "1:0")
    b.publish("k", "1:1")
    b.receive("c1", "k", "1:0")
    b.close("c1")
    b.receive("c2", "k", "1:0")
    b.receive("c2", "k", "1:1")
    b.ack("c2", "1:0")
    b.ack("c2", "1:1")
    b.end()
    verdict = check_trace(b.events, header=b.header)
    assert verdict.valid and verdict.all_violations() == ()


def test_redelivery_after_close_in_the_wrong_order_names_the_close() -> None:
    b = TraceBuilder()
    b.open("c1")  # E0
    b.open("c2")  # E1
    b.publish("k", "1:0")  # E2
    b.publish("k", "1:1")  # E3
    b.receive("c1", "k", "1:0")  # E4
    b.close("c1")  # E5: 1:0 must be redelivered first (Pulsar replays before reading on)
    b.receive("c2", "k", "1:1")  # E6
    b.end(drained=False)
    assert found(b) == [("k", (5, 6))]


def test_a_crash_keeps_the_ordering_promise() -> None:
    b = TraceBuilder()
    b.open("c1")
    b.open("c2")
    b.publish("k", "1:0")
    b.publish("k", "1:1")
    b.receive("c1", "k", "1:0")
    b.crash("c1")  # E5
    b.receive("c2", "k", "1:1")  # E6
    b.end(drained=False)
    assert found(b) == [("k", (5, 6))]


def test_a_receive_logged_before_its_publish_receipt_is_clean() -> None:
    b = TraceBuilder()
    b.open("c1")
    b.publish("k", "1:1")
    b.receive("c1", "k", "1:0")  # the receipt of 1:0 comes later
    b.receive("c1", "k", "1:1")
    b.ack("c1", "1:0")
    b.publish("k", "1:0")  # receipt after the receive and the ack
    b.ack("c1", "1:1")
    b.end()
    verdict = check_trace(b.events, header=b.header)
    assert verdict.valid and verdict.all_violations() == ()


def test_interleaved_acks_across_keys_and_consumers_are_clean() -> None:
    b = TraceBuilder()
    b.open("c1")
    b.open("c2")
    for n in range(6):
        b.publish("ab"[n % 2], f"1:{n}")
    b.receive("c1", "a", "1:0")
    b.receive("c2", "b", "1:1")
    b.receive("c1", "a", "1:2")
    b.ack("c1", "1:2")  # acks in any order
    b.receive("c2", "b", "1:3")
    b.ack("c2", "1:1")
    b.receive("c1", "a", "1:4")
    b.ack("c1", "1:0")
    b.ack("c2", "1:3")
    b.receive("c2", "b", "1:5")
    b.ack("c1", "1:4")
    b.ack("c2", "1:5")
    b.end()
    verdict = check_trace(b.events, header=b.header)
    assert verdict.valid and verdict.all_violations() == ()


def test_an_earlier_message_held_elsewhere_is_the_witness() -> None:
    b = TraceBuilder()
    b.open("c1")
    b.open("c2")
    b.publish("k", "1:0")
    b.publish("k", "1:1")
    b.receive("c1", "k", "1:0")  # E4
    b.receive("c2", "k", "1:1")  # E5: 1:0 is held by c1, not by c2
    b.end(drained=False)
    verdict = check_trace(b.events, header=b.header)
    (v,) = [v for v in verdict.all_violations() if v.kind is Kind.OUT_OF_ORDER]
    assert v.events == (4, 5) and v.facts["earlier_holder"] == "c1"


def test_messages_held_by_the_receiver_itself_do_not_block() -> None:
    b = TraceBuilder()
    b.open("c1")
    b.publish("k", "1:0")
    b.publish("k", "1:1")
    b.receive("c1", "k", "1:0")
    b.receive("c1", "k", "1:1")  # 1:0 is outstanding at c1 itself: in order
    b.end(drained=False)
    assert found(b) == []


def test_partitions_are_ordered_separately_and_batches_by_index() -> None:
    b = TraceBuilder()
    b.open("c1")
    b.publish("k", "1:5:0:-1", topic="t")
    b.publish("k", "1:2:1:-1", topic="t")
    b.publish("k", "1:7:0:0", topic="t")
    b.publish("k", "1:7:0:1", topic="t")
    b.receive("c1", "k", "1:2:-1:-1", topic="t-partition-1")  # partition 1 only compares with itself
    b.receive("c1", "k", "1:5:0:-1", topic="persistent://public/default/t-partition-0")
    b.receive("c1", "k", "1:7:0:1", topic="t-partition-0")  # batch index 1 before 0: out of order
    b.end(drained=False)
    assert found(b) == [("k", (3, 7))]


def test_a_send_issued_before_the_subscription_existed_does_not_block() -> None:
    b = TraceBuilder()
    b.publish("k", "1:0")  # the subscription does not exist yet: it will never see 1:0
    b.open("c1")
    b.publish("k", "1:1")
    b.receive("c1", "k", "1:1")
    b.ack("c1", "1:1")
    b.end()
    verdict = check_trace(b.events, header=b.header)
    assert verdict.valid and verdict.all_violations() == ()
