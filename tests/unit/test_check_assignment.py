"""misassigned on hand-written traces, against the reference selectors."""

from __future__ import annotations

from conformance.checks import Kind, check_trace
from conformance.trace import SelectorSpec, SubscriptionSpec, TraceHeader
from conformance.trace.builder import TraceBuilder
from reference_model.selectors import ConsumerRef, make_selector

KEYS = [f"k{n}" for n in range(12)]


def header(kind: str = "auto-split", mode: str = "AUTO_SPLIT") -> TraceHeader:
    return TraceHeader(
        target="hand-written",
        subscription=SubscriptionSpec("s", key_shared_mode=mode),
        selector=SelectorSpec(kind, "4.0"),
    )


def owners(*members: tuple[str, int], kind: str = "auto-split") -> dict[str, str]:
    sel = make_selector(kind, "4.0")
    for name, cid in members:
        sel.add(ConsumerRef(name, cid))
    return {k: sel.select_key(k.encode()).name for k in KEYS}  # type: ignore[union-attr]


def misassigned(b: TraceBuilder) -> list[tuple[str | None, tuple[int, ...]]]:
    verdict = check_trace(b.events, header=b.header)
    placement = (Kind.MISASSIGNED, Kind.ACCEPTED_CONFLICTING_OPEN)
    return [(v.key, v.events) for v in verdict.all_violations() if v.kind in placement]


def test_deliveries_to_the_selected_consumer_are_clean() -> None:
    for kind in ("auto-split", "consistent-hashing"):
        own = owners(("c1", 0), ("c2", 1), kind=kind)
        b = TraceBuilder(header(kind))
        b.open("c1")
        b.open("c2")
        for n, key in enumerate(KEYS):
            b.publish(key, f"1:{n}")
            b.receive(own[key], key, f"1:{n}")
            b.ack(own[key], f"1:{n}")
        b.end()
        verdict = check_trace(b.events, header=b.header)
        assert verdict.valid and verdict.all_violations() == (), kind


def test_a_delivery_no_membership_explains_is_reported() -> None:
    own = owners(("c1", 0), ("c2", 1))
    key = KEYS[0]
    wrong = "c1" if own[key] == "c2" else "c2"
    b = TraceBuilder(header())
    b.open("c1")  # E0
    b.open("c2")  # E1
    b.publish(key, "1:0")  # E2, sent after both joined
    b.receive(wrong, key, "1:0")  # E3
    b.ack(wrong, "1:0")
    b.end()
    verdict = check_trace(b.events, header=b.header)
    (v,) = verdict.violations
    assert (v.kind, v.key, v.events, v.consumers) == (Kind.MISASSIGNED, key, (2, 3), (wrong,))
    assert v.facts["expected"] == [own[key]]


def test_a_message_sent_before_a_join_may_go_to_the_old_membership() -> None:
    alone = owners(("c1", 0))
    assert set(alone.values()) == {"c1"}
    together = owners(("c1", 0), ("c2", 2))
    key = next(k for k in KEYS if together[k] == "c2")
    b = TraceBuilder(header())
    b.open("c1")  # E0
    b.publish(key, "1:0")  # E1: sent while c1 was alone
    b.open("c2")  # E2
    b.receive("c1", key, "1:0")  # E3: dispatched before c2 joined: fine
    b.ack("c1", "1:0")
    b.publish(key, "1:1")  # E5: sent after c2 joined
    b.receive("c1", key, "1:1")  # E6: only the membership {c1, c2} applies: c2 should have it
    b.ack("c1", "1:1")
    b.end()
    assert misassigned(b) == [(key, (5, 6))]


def test_a_receive_logged_before_its_consumers_open_is_not_judged() -> None:
    b = TraceBuilder(header())
    b.open("c1")
    b.publish(KEYS[0], "1:0")
    b.receive("c2", KEYS[0], "1:0")  # c2's subscribe returned, its receive thread won the race to the log
    b.open("c2")
    b.end(drained=False)
    assert misassigned(b) == []


def test_a_doubtful_receive_is_decided_at_the_next_membership_change() -> None:
    from conformance.checks import StreamingChecker

    own = owners(("c1", 0), ("c2", 1))
    key = next(k for k in KEYS if own[k] == "c1")
    b = TraceBuilder(header())
    b.open("c1")  # E0
    b.open("c2")  # E1
    b.publish(key, "1:0")  # E2
    b.receive("c2", key, "1:0")  # E3: a subscribe recorded later may already have changed the membership
    b.open("c3")  # E4: it did not make the key c2's
    b.end(drained=False)
    checker = StreamingChecker(b.header)
    reported = [[v.kind for v in checker.feed(e)] for e in b.events]
    assert reported[3] == [] and reported[4] == [Kind.MISASSIGNED]
    assert [v.events for v in checker.finish().violations] == [(2, 3)]


def test_a_close_recorded_before_the_receive_may_not_have_taken_effect_yet() -> None:
    before = owners(("c1", 0), ("c2", 1))
    key = next(k for k in KEYS if before[k] == "c2")
    b = TraceBuilder(header())
    b.open("c1")  # E0
    b.open("c2")  # E1
    b.publish(key, "1:0")  # E2
    b.close("c1")  # E3
    b.receive("c2", key, "1:0")  # E4: both {c1, c2} and {c2} are possible: c2 is selected in either
    b.ack("c2", "1:0")
    b.end()
    assert misassigned(b) == []


def test_sticky_ranges_come_from_the_open_policy() -> None:
    sel = make_selector("sticky", "4.0")
    lo_key = next(k for k in KEYS if sel.slot_of(k.encode()) < 32768)
    hi_key = next(k for k in KEYS if sel.slot_of(k.encode()) >= 32768)
    b = TraceBuilder(header("sticky", "STICKY"))
    b.open("c1", policy={"key_shared_mode": "STICKY", "sticky_ranges": [[0, 32767]]})
    b.open("c2", policy={"key_shared_mode": "STICKY", "sticky_ranges": [[32768, 65535]]})
    b.publish(lo_key, "1:0")
    b.receive("c1", lo_key, "1:0")
    b.ack("c1", "1:0")
    b.publish(hi_key, "1:1")  # E5
    b.receive("c1", hi_key, "1:1")  # E6: c2's range
    b.ack("c1", "1:1")
    b.end()
    assert misassigned(b) == [(hi_key, (5, 6))]


def test_an_accepted_open_the_selector_refuses_is_accepted_conflicting_open_and_ends_judging() -> None:
    """Pulsar fails a subscribe whose sticky ranges overlap a connected consumer's; a broker that accepts it has
    broken the assignment contract at the open, and its membership is unknown from there on."""
    b = TraceBuilder(header("sticky", "STICKY"))
    b.open("c1", policy={"sticky_ranges": [[0, 40000]]})
    b.open("c2", policy={"sticky_ranges": [[30000, 65535]]})  # E1 overlaps c1: Pulsar refuses such a consumer
    b.publish("k0", "1:0")
    b.receive("c2", "k0", "1:0")
    b.ack("c2", "1:0")
    b.end()
    verdict = check_trace(b.events, header=b.header)
    assert misassigned(b) == [(None, (1,))]  # the open, not the receive after it
    (found,) = [v for v in verdict.violations if v.kind.value == "accepted_conflicting_open"]
    assert found.consumers == ("c2",) and "Range conflict" in found.explanation and ".." not in found.explanation
    assert any("not judged" in note and "refuses the subscribe at E1" in note for note in verdict.notes)


def test_a_refused_open_after_a_fault_is_no_finding() -> None:
    """After a restart the old consumers may not have re-subscribed yet: Pulsar could accept the open too."""
    b = TraceBuilder(header("sticky", "STICKY"))
    b.open("c1", policy={"sticky_ranges": [[0, 65535]]})
    b.fault()
    b.open("c2", policy={"sticky_ranges": [[0, 65535]]})
    b.end()
    assert misassigned(b) == []


def test_a_refused_open_that_failed_is_no_finding() -> None:
    b = TraceBuilder(header("sticky", "STICKY"))
    b.open("c1", policy={"sticky_ranges": [[0, 65535]]})
    b.open("c2", policy={"sticky_ranges": [[30000, 65535]]}, result="fail")  # refused, as Pulsar does
    b.publish("k0", "1:0")
    b.receive("c1", "k0", "1:0")
    b.ack("c1", "1:0")
    b.end()
    assert misassigned(b) == []


def test_not_judged_after_a_fault_nor_without_a_selector() -> None:
    b = TraceBuilder(header())
    b.open("c1")
    b.open("c2")
    b.fault()
    for n, key in enumerate(KEYS):
        b.publish(key, f"1:{n}")
        b.receive("c1", key, f"1:{n}")  # some of these are c2's keys
        b.ack("c1", f"1:{n}")
    b.end()
    verdict = check_trace(b.events, header=b.header)
    assert misassigned(b) == [] and any("after the fault" in n for n in verdict.notes)
    plain = TraceBuilder()
    plain.events = b.events
    assert any("names no selector" in n for n in check_trace(plain.events, header=plain.header).notes)


def test_a_bad_selector_in_the_header_leaves_misassigned_unjudged() -> None:
    bad = TraceHeader(target="x", subscription=SubscriptionSpec("s"), selector=SelectorSpec("consistent-hash", "4.0"))
    b = TraceBuilder(bad)
    b.open("c1")
    b.end()
    verdict = check_trace(b.events, header=b.header)
    assert Kind.MISASSIGNED in verdict.unjudged
    assert any("consistent-hashing" in n for n in verdict.notes)  # the did-you-mean survives into the note


def test_cached_owners_kept_across_membership_changes_are_the_selectors_answers() -> None:
    """The timeline keeps a key's cached owner across a change only where the head's slot kept its owner: after
    every change of a random churn (joins, leaves, crashes), each key's owner as the hot path reads it equals
    the head state's fresh answer, for every selector kind and era."""
    import random

    from conformance.checks.assignment import Change, Timeline, selector_factory
    from reference_model.selectors import SELECTOR_KINDS

    keys = [f"key-{n}" for n in range(120)]
    checked = 0
    for kind in SELECTOR_KINDS:
        for version in ("2.10", "3.0", "4.0"):
            for classic in (False, True):
                rng = random.Random(f"{kind}{version}{classic}")
                tl = Timeline(selector_factory(SelectorSpec(kind, version), classic), kind == "sticky")
                live: dict[int, str] = {}
                for index in range(1, 40):
                    if live and (len(live) >= 5 or rng.random() < 0.45):
                        inc = rng.choice(sorted(live))
                        change = Change(index, index, rng.choice(("close", "close", "crash")), inc, live.pop(inc))
                    else:
                        lo = rng.randrange(0, 60000)
                        ranges = ((lo, lo + rng.randrange(1, 5000)),) if kind == "sticky" else None
                        live[index] = f"c{index}"
                        change = Change(index, index, "open", index, f"c{index}", ranges)
                    tl.apply(change)
                    if tl.broken_at is not None:
                        break
                    for key in rng.sample(keys, 30):  # the hot path: fills the cache
                        tl.latest_owner(key)
                    for key in keys:
                        fresh = tl.head.state.select(tl.slot(key))
                        assert tl.latest_owner(key) == (None if fresh is None else fresh.consumer_id), (kind, key)
                        checked += 1
    assert checked > 20_000
