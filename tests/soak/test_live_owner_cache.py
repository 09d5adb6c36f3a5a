"""The soak's live check empties the assignment timeline's key caches together: the owner cache is read through
the slot cache at every membership change, so emptying only the slot cache (the bigger one) made the next change
fail (``KeyError``: the live check of a 10-minute model soak with churn stopped so)."""

from __future__ import annotations

from conformance.checks.streaming import StreamingChecker
from conformance.trace import SelectorSpec, SubscriptionSpec, TraceHeader
from conformance.trace.builder import TraceBuilder
from pytest_keyshared.soak.live import drop_per_key_leftovers


def test_a_membership_change_after_the_caches_were_trimmed_is_checked() -> None:
    header = TraceHeader("model", SubscriptionSpec("s"), selector=SelectorSpec("consistent-hashing", "4.0"))
    b = TraceBuilder(header)
    b.open("c0"), b.open("c1")
    checker = StreamingChecker(header)
    for event in b.events:
        checker.feed(event)
    timeline = checker.subs["s"].timeline
    for n in range(20):  # slots for 20 keys, owners for 5 of them: only the slot cache exceeds the bound
        timeline.slot(f"k{n}")
    for n in range(5):
        timeline.latest_owner(f"k{n}")
    assert len(timeline._owner) == 5 < 10 < len(timeline._slots)
    drop_per_key_leftovers(checker, 10)
    assert not timeline._slots and not timeline._owner
    late = TraceBuilder(header)
    late.events, late.t = list(b.events), b.t
    checker.feed(late.open("c2"))  # a membership change reads the cached owners' slots
    assert checker.finish().valid
