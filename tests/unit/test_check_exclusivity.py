"""key_overlap on hand-written traces: one report per episode, the right witness, and the clean handovers."""

from __future__ import annotations

from conformance.checks import Kind, check_trace
from conformance.trace.builder import TraceBuilder


def found(b: TraceBuilder, kind: Kind = Kind.KEY_OVERLAP) -> list[tuple[str | None, tuple[int, ...]]]:
    verdict = check_trace(b.events, header=b.header)
    return [(v.key, v.events) for v in verdict.all_violations() if v.kind is kind]


def two_consumers() -> TraceBuilder:
    b = TraceBuilder()
    b.open("c1")  # E0
    b.open("c2")  # E1
    return b


def test_a_key_held_by_two_consumers_is_reported_with_the_holders_receive_and_the_new_one() -> None:
    b = two_consumers()
    b.publish("k", "1:0")  # E2
    b.publish("k", "1:1")  # E3
    b.receive("c1", "k", "1:0")  # E4
    b.receive("c2", "k", "1:1")  # E5: c1 still holds k
    b.ack("c1", "1:0")
    b.ack("c2", "1:1")
    b.end()
    verdict = check_trace(b.events, header=b.header)
    (overlap,) = [v for v in verdict.violations if v.kind is Kind.KEY_OVERLAP]
    assert (overlap.key, overlap.events, overlap.consumers) == ("k", (4, 5), ("c1", "c2"))
    assert overlap.subscription == "s"
    assert "E4 = receive 1:0:-1:-1 by c1" in overlap.explanation
    assert "However, c2 received" in overlap.explanation
    assert not verdict.valid


def test_one_report_per_episode_not_per_message() -> None:
    b = two_consumers()
    for n in range(4):
        b.publish("k", f"1:{n}")  # E2..E5
    b.receive("c1", "k", "1:0")  # E6
    b.receive("c2", "k", "1:1")  # E7: episode of c2 starts -> one report
    b.receive("c2", "k", "1:2")  # E8: c2 already holds k: no new report
    b.receive("c2", "k", "1:3")  # E9
    b.end(drained=False)
    assert found(b) == [("k", (6, 7))]


def test_the_witness_is_the_earliest_received_message_still_held() -> None:
    b = two_consumers()
    for n in range(3):
        b.publish("k", f"1:{n}")  # E2..E4
    b.receive("c1", "k", "1:0")  # E5
    b.receive("c1", "k", "1:1")  # E6
    b.ack("c1", "1:0")  # E7: 1:1 (E6) is now the earliest still held
    b.receive("c2", "k", "1:2")  # E8
    b.end(drained=False)
    assert found(b) == [("k", (6, 8))]


def test_each_other_holder_is_reported() -> None:
    b = two_consumers()
    b.open("c3")  # E2
    b.publish("k", "1:0")  # E3
    b.receive("c1", "k", "1:0")  # E4
    b.receive("c2", "k", "1:0")  # E5: c2 overlaps c1
    b.receive("c3", "k", "1:0")  # E6: c3 overlaps c1 and c2
    b.end(drained=False)
    assert sorted(found(b)) == [("k", (4, 5)), ("k", (4, 6)), ("k", (5, 6))]


def test_handover_after_ack_close_crash_nack_and_redeliver_is_clean() -> None:
    for release in ("ack", "close", "crash", "nack", "redeliver"):
        b = two_consumers()
        b.publish("k", "1:0")
        b.publish("k", "1:1")
        b.receive("c1", "k", "1:0")
        if release == "ack":
            b.ack("c1", "1:0")
        elif release in ("close", "crash"):
            getattr(b, release)("c1")
        elif release == "nack":
            b.nack("c1", "1:0")
        else:
            b.redeliver("c1")
        b.receive("c2", "k", "1:1")
        b.end(drained=False)
        assert found(b) == [], release


def test_a_crash_releases_the_consumers_messages() -> None:
    b = two_consumers()
    b.publish("k", "1:0")
    b.receive("c1", "k", "1:0")
    b.crash("c1")
    b.receive("c2", "k", "1:0")  # redelivered after the crash: c1 holds nothing any more
    b.ack("c2", "1:0")
    b.end()
    verdict = check_trace(b.events, header=b.header)
    assert verdict.valid and not verdict.all_violations()


def test_a_fault_releases_every_consumers_messages() -> None:
    b = two_consumers()
    b.publish("k", "1:0")
    b.receive("c1", "k", "1:0")
    b.fault()
    b.receive("c2", "k", "1:0")
    b.end(drained=False)
    assert found(b) == []


def test_different_keys_partitions_and_subscriptions_do_not_overlap() -> None:
    b = two_consumers()
    b.open("d1", subscription="other")
    b.publish("k", "1:0")
    b.publish("j", "1:1")
    b.publish("k", "1:2:3:-1", topic="t-partition-3")
    b.receive("c1", "k", "1:0")
    b.receive("c2", "j", "1:1")  # another key
    b.receive("c2", "k", "1:2:3:-1", topic="t-partition-3")  # the same key in another partition
    b.receive("d1", "k", "1:0")  # another subscription gets its own copy
    b.end(drained=False)
    assert found(b) == []


def test_a_receive_logged_after_its_consumers_close_holds_nothing() -> None:
    b = two_consumers()
    b.publish("k", "1:0")
    b.publish("k", "1:1")
    b.close("c1")
    b.receive("c1", "k", "1:0")  # the receive thread logged it after close was recorded: a late receive
    b.receive("c2", "k", "1:0")
    b.receive("c2", "k", "1:1")
    b.ack("c2", "1:0")
    b.ack("c2", "1:1")
    b.end()
    verdict = check_trace(b.events, header=b.header)
    assert verdict.valid and not verdict.all_violations()


def test_a_duplicate_delivery_to_the_holder_starts_no_episode() -> None:
    b = two_consumers()
    b.publish("k", "1:0")
    b.receive("c1", "k", "1:0")
    b.receive("c1", "k", "1:0")  # delivered twice while held: absorbed
    b.ack("c1", "1:0")
    b.end()
    assert check_trace(b.events, header=b.header).all_violations() == ()
