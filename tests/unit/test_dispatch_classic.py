"""The classic (3.x) dispatcher on its own: recently joined consumers, coarse blocking, no look-ahead limit."""

from __future__ import annotations

import pytest

from reference_model.keyshared import (
    ClassicDispatcher,
    DispatchConsumer,
    DispatcherSettings,
    KeySharedPolicy,
    ReadType,
    make_dispatcher,
)
from reference_model.selectors import ConsumerRef, Selector
from reference_model.storage import Entry, ManagedCursor, MessageMetadata, Position, SingleMessage, TopicLog


class Harness:
    def __init__(self, version: str = "3.3", policy: KeySharedPolicy | None = None) -> None:
        self.log = TopicLog("t", 1)
        self.cursor = ManagedCursor(self.log, "s", self.log.earliest)
        dispatcher = make_dispatcher(
            cursor=self.cursor,
            policy=policy or KeySharedPolicy(),
            settings=DispatcherSettings(unblocking_interval_ms=0),
            version=version,
            implementation="classic",
        )
        assert isinstance(dispatcher, ClassicDispatcher)
        self.dispatcher = dispatcher
        self.sent: dict[str, list[Position]] = {}
        self._ids = 0

    def consumer(self, name: str, permits: int = 1000, ranges: list[tuple[int, int]] | None = None) -> DispatchConsumer:
        self._ids += 1
        record = self.sent.setdefault(name, [])

        def sink(entry: Entry, redeliveries: int) -> None:
            record.append(entry.position)

        c = DispatchConsumer(ConsumerRef(name, self._ids), sink, sticky_ranges=tuple(ranges) if ranges else None)
        self.dispatcher.add_consumer(c)
        if permits:
            self.dispatcher.consumer_flow(c, permits)
        return c

    def publish(self, *keys: bytes) -> list[Position]:
        out = [
            self.log.append(MessageMetadata("p", len(self.log)), (SingleMessage(b"v", len(self.log)),), k).position
            for k in keys
        ]
        self.dispatcher.read_more_entries()
        return out

    def ack(self, consumer: DispatchConsumer, position: Position) -> None:
        self.dispatcher.acknowledge(consumer, position)
        moved = self.cursor.delete(position)
        self.dispatcher.after_acknowledgements(moved)


def keys_for(selector: Selector, ref: ConsumerRef, n: int) -> list[bytes]:
    out: list[bytes] = []
    i = 0
    while len(out) < n:
        key = f"k{i}".encode()
        if selector.select_key(key) == ref:
            out.append(key)
        i += 1
    return out


def future_keys(h: Harness, name: str, n: int) -> list[bytes]:
    probe = h.dispatcher.selector.copy()
    ref = ConsumerRef(name, h._ids + 1)
    probe.add(ref)
    return keys_for(probe, ref, n)


def test_a_recently_joined_consumer_only_gets_entries_below_its_join_position() -> None:
    h = Harness()
    c1 = h.consumer("c1")
    [k] = future_keys(h, "c2", 1)
    held = h.publish(b"x0", b"x1")  # in flight at c1, unacknowledged
    c2 = h.consumer("c2")
    join = h.cursor.read_position
    assert c2.read_position_when_joining == join
    assert h.dispatcher.recently_joined == {c2: join}
    assert h.dispatcher.subscription_stats() == {"consumersAfterMarkDeletePosition": {"c2": str(join)}}
    [p] = h.publish(k)
    assert h.sent["c2"] == [] and p in h.dispatcher.replay
    for position in held:
        h.ack(c1, position)
    assert h.dispatcher.recently_joined == {}
    assert h.sent["c2"] == [p]


def test_a_joiner_is_not_recorded_when_nothing_is_in_flight() -> None:
    h = Harness()
    c1 = h.consumer("c1")
    [p] = h.publish(b"x")
    h.ack(c1, p)
    h.consumer("c2")
    assert h.dispatcher.recently_joined == {}
    assert h.dispatcher.consumer_stats(h.dispatcher.consumers[2]) == {"readPositionWhenJoining": "1:1"}


@pytest.mark.parametrize("implementation", ["classic", "pip379"])
def test_coarse_blocking_one_replayed_hash_blocks_all_of_a_consumers_entries_in_the_read(implementation: str) -> None:
    """Classic holds back *every* entry grouped for a consumer in a normal read if any of their hashes waits in
    the replay queue; PIP-379 holds back only that hash."""
    log = TopicLog("t", 1)
    cursor = ManagedCursor(log, "s", log.earliest)
    dispatcher = make_dispatcher(cursor=cursor, policy=KeySharedPolicy(), version="4.0", implementation=implementation)
    sent: list[bytes] = []
    c1 = DispatchConsumer(ConsumerRef("c1", 1), lambda e, r: sent.append(e.sticky_key))
    dispatcher.add_consumer(c1)
    c1.permits = 10
    a, b = b"key-a", b"key-b"
    waiting = log.append(MessageMetadata("p", 0), (SingleMessage(b"v", 0),), a)
    dispatcher.replay.add(waiting.position, dispatcher.selector.slot_of(a))
    entries = [log.append(MessageMetadata("p", i), (SingleMessage(b"v", i),), k) for i, k in ((1, b), (2, a))]
    dispatcher._send_entries(ReadType.NORMAL, entries)
    assert sent == ([] if implementation == "classic" else [b])


def test_replay_reads_use_the_oldest_joiner_position() -> None:
    """#8292: c0 holds m0; c1 joins at 2 and m2, m3 (c1's keys) wait in replay; c2 joins at 4 and now owns those
    keys: replaying m2, m3 to c2 is capped by the *oldest* joiner position (2), so they are not sent."""
    h = Harness()
    c0 = h.consumer("c0")
    m0, m1 = h.publish(b"x0", b"x1")
    h.ack(c0, m1)
    c1 = h.consumer("c1")
    assert h.dispatcher.recently_joined == {c1: Position(1, 2)}
    probe = h.dispatcher.selector.copy()
    ref2 = ConsumerRef("c2", h._ids + 1)
    probe.add(ref2)
    [k] = [
        key
        for key in (f"m{i}".encode() for i in range(5000))
        if h.dispatcher.selector.select_key(key) == c1.ref and probe.select_key(key) == ref2
    ][:1]
    m2, m3 = h.publish(k, k)
    assert list(h.dispatcher.replay) == [m2, m3] and h.sent["c1"] == []
    c2 = h.consumer("c2")
    assert h.dispatcher.recently_joined == {c1: Position(1, 2), c2: Position(1, 4)}
    assert h.sent["c2"] == []  # m2, m3 < c2's own join position 4, but not below the oldest (2)
    h.ack(c0, m0)  # mark-delete reaches 1:1: both joiners may now take everything
    assert h.sent["c2"] == [m2, m3]


def test_sticky_mode_still_uses_recently_joined_in_classic() -> None:
    """#23271: classic applies the joining rule to STICKY consumers although their ranges are fixed."""
    h = Harness(policy=KeySharedPolicy(mode="STICKY", sticky_ranges=[(0, 65535)]))
    h.consumer("c1", ranges=[(0, 32767)])
    h.publish(b"a", b"b", b"c")
    c2 = h.consumer("c2", ranges=[(32768, 65535)])
    assert h.dispatcher.recently_joined is not None and c2 in h.dispatcher.recently_joined


def test_no_lookahead_limit_the_replay_queue_grows_without_bound() -> None:
    h = Harness()
    c1 = h.consumer("c1", permits=0)
    c2 = h.consumer("c2")
    [k1] = keys_for(h.dispatcher.selector, c1.ref, 1)
    [k2] = keys_for(h.dispatcher.selector, c2.ref, 1)
    for _ in range(300):
        h.publish(k1)
    h.publish(k2)
    assert len(h.dispatcher.replay) == 300
    assert len(h.sent["c2"]) == 1


def test_out_of_order_allowed_has_no_joining_rule() -> None:
    h = Harness(policy=KeySharedPolicy(allow_out_of_order_delivery=True))
    h.consumer("c1")
    h.publish(b"a", b"b")
    h.consumer("c2")
    assert h.dispatcher.recently_joined is None
