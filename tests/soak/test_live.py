"""The soak's live check: the streaming checker with settled messages forgotten beyond a bound."""

from __future__ import annotations

from conformance.trace import SubscriptionSpec, TraceHeader, TraceWriter
from pytest_keyshared.soak.live import LiveCount, drop_per_key_leftovers, prune


def _writer() -> TraceWriter:
    header = TraceHeader(target="model", subscription=SubscriptionSpec(name="s"))
    return TraceWriter(None, header, clock=iter(range(0, 10**12, 1000)).__next__)


def _message(w: TraceWriter, seq: int, consumer: str = "c1", *, ack: bool = True, again: int = 0) -> None:
    key, mid, uid = f"k{seq % 7}", f"0:{seq}:-1:-1", f"p:{seq}"
    w.record("publish", topic="t", producer="p", key=key, msg_id=mid, seq=seq, uid=uid, result="ok", t0=seq)
    w.record("receive", topic="t", subscription="s", consumer=consumer, producer="p", key=key, msg_id=mid, seq=seq,
             uid=uid, redelivery_count=again)  # fmt: skip
    if ack:
        w.record("ack", topic="t", subscription="s", consumer=consumer, key=key, msg_id=mid, uid=uid)


def test_memory_stays_bounded_and_clean_traces_stay_clean() -> None:
    w = _writer()
    live = LiveCount(w.header, None, keep=500, every=1000)
    w.add_listener(live.feed)
    w.record("open", topic="t", subscription="s", consumer="c1", result="ok", name="c1")
    for seq in range(6000):
        _message(w, seq)
    live.close()
    checker = live.checker
    sub = next(iter(checker.subs.values()))
    assert len(sub.settled) <= 500 + 1000 and len(checker.uid_pub) <= 500 + 1000
    assert len(checker._published) <= 2 * 500 + 1000
    assert live.violations == 0 and not live.notes


def test_a_redelivery_after_ack_within_the_bound_is_still_found() -> None:
    w = _writer()
    live = LiveCount(w.header, None, keep=500, every=1000)
    w.add_listener(live.feed)
    w.record("open", topic="t", subscription="s", consumer="c1", result="ok", name="c1")
    for seq in range(3000):
        _message(w, seq)
    mid = "0:2990:-1:-1"  # acknowledged a moment ago: delivered again
    w.record("receive", topic="t", subscription="s", consumer="c1", producer="p", key="k1", msg_id=mid, seq=2990,
             uid="p:2990", redelivery_count=0)  # fmt: skip
    live.close()
    assert live.kinds == {"redelivered_after_ack": 1}


def test_prune_forgets_the_oldest_first() -> None:
    w = _writer()
    live = LiveCount(w.header, None, keep=10**9, every=10**9)  # no pruning while feeding
    w.add_listener(live.feed)
    w.record("open", topic="t", subscription="s", consumer="c1", result="ok", name="c1")
    for seq in range(100):
        _message(w, seq)
    live.close()
    sub = next(iter(live.checker.subs.values()))
    before = list(sub.settled)
    assert len(before) == 100
    forgotten = prune(live.checker, keep=10)
    assert forgotten >= 90 and list(sub.settled) == before[-10:]


def test_keyless_messages_leave_no_per_key_state_behind() -> None:
    """A soak's keyless messages each have a key of their own: the per-key heaps and caches stay bounded, also for
    messages nacked and then acknowledged (their records stay, a later fault may disarm the ack, but an exemption
    an armed ack suspended is off the heap until it comes back: docs/soak.md)."""
    w = _writer()
    live = LiveCount(w.header, None, keep=500, every=1000)
    w.add_listener(live.feed)
    w.record("open", topic="t", subscription="s", consumer="c1", result="ok", name="c1")
    for seq in range(6000):
        key, mid, uid = f"p-{seq}", f"0:{seq}:-1:-1", f"p:{seq}"
        # the receipt after the receive: the message is known (a free heap entry) before its publish is seen
        w.record("receive", topic="t", subscription="s", consumer="c1", producer="p", key=key, msg_id=mid, seq=seq,
                 uid=uid, redelivery_count=0)  # fmt: skip
        w.record("publish", topic="t", producer="p", key=key, msg_id=mid, seq=seq, uid=uid, result="ok", t0=seq)
        if seq % 3:
            w.record("nack", topic="t", subscription="s", consumer="c1", key=key, msg_id=mid, uid=uid)  # exempt
            w.record("receive", topic="t", subscription="s", consumer="c1", producer="p", key=key, msg_id=mid,
                     seq=seq, uid=uid, redelivery_count=1)  # fmt: skip
        w.record("ack", topic="t", subscription="s", consumer="c1", key=key, msg_id=mid, uid=uid)
    live.close()
    checker = live.checker
    sub = next(iter(checker.subs.values()))
    assert len(sub.free_heaps) + len(sub.exempt_heaps) <= 1000
    assert sum(len(of_stream) for of_stream in checker._scopes.values()) <= 500 + 1000
    assert live.violations == 0 and not live.notes


def _findings(checker: object) -> list[tuple[str, tuple[int, ...]]]:
    return sorted((v.kind.value, tuple(v.events)) for v in checker.found)  # type: ignore[attr-defined]


def test_slices_and_dropping_per_key_leftovers_change_no_judgement() -> None:
    """The same traces (clean, with planted violations, fuzzed) through a checker fed event by event and one fed
    in slices (``feed_many``) that drops its per-key leftovers after every slice: the same violations, at the
    same events."""
    import random

    from trace_synth import PLANTABLE, SynthConfig, fuzz, synthesize

    from conformance.checks import StreamingChecker

    runs = [synthesize(seed, SynthConfig(messages=60, keys=6, nack_rate=0.1, fault_rate=0.02)) for seed in range(8)]
    runs += [synthesize(seed, plant={kind}) for seed, kind in enumerate(sorted(PLANTABLE) * 2)]
    runs += [fuzz(seed, events=120) for seed in range(16)]
    differs = 0
    for run in runs:
        plain, pruned = StreamingChecker(run.header), StreamingChecker(run.header)
        for event in run.events:
            plain.feed(event)
        rnd, start = random.Random(len(run.events)), 0
        while start < len(run.events):
            end = start + rnd.choice((1, 2, 5, 17))
            pruned.feed_many(run.events[start:end])
            drop_per_key_leftovers(pruned, cache_bound=0)
            start = end
        assert _findings(plain) == _findings(pruned)
        plain_verdict, pruned_verdict = plain.finish(), pruned.finish()
        assert plain_verdict.counts == pruned_verdict.counts
        differs += bool(plain_verdict.counts and any(plain_verdict.counts.values()))
    assert differs >= 10  # the comparison saw violations, not only clean traces
