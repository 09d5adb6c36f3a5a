"""The soak's live check: the streaming checker with settled messages forgotten beyond a bound."""

from __future__ import annotations

from conformance.trace import SubscriptionSpec, TraceHeader, TraceWriter
from pytest_keyshared.soak.live import LiveCount, prune


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
    assert live.kinds == {"redelivered_after_ack": 1}


def test_prune_forgets_the_oldest_first() -> None:
    w = _writer()
    live = LiveCount(w.header, None, keep=10**9, every=10**9)  # no pruning while feeding
    w.add_listener(live.feed)
    w.record("open", topic="t", subscription="s", consumer="c1", result="ok", name="c1")
    for seq in range(100):
        _message(w, seq)
    sub = next(iter(live.checker.subs.values()))
    before = list(sub.settled)
    assert len(before) == 100
    forgotten = prune(live.checker, keep=10)
    assert forgotten >= 90 and list(sub.settled) == before[-10:]
