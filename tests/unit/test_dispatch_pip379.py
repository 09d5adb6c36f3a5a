"""The PIP-379 dispatcher on its own (no broker): rules R1-R4, look-ahead, markers, and the cases of Pulsar's
``PersistentStickyKeyDispatcherMultipleConsumersTest`` the model can express."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from reference_model.errors import ConsumerAssignError, ModelStateError
from reference_model.keyshared import DispatchConsumer, DispatcherSettings, KeySharedPolicy, make_dispatcher
from reference_model.keyshared.pip379 import Pip379Dispatcher
from reference_model.selectors import ConsumerRef, Selector
from reference_model.storage import Entry, ManagedCursor, MessageMetadata, Position, SingleMessage, TopicLog


class Harness:
    """A log, a cursor at Earliest, a dispatcher, and consumers recording what they were sent."""

    def __init__(self, policy: KeySharedPolicy | None = None, **settings: int) -> None:
        self.log = TopicLog("t", 1)
        self.cursor = ManagedCursor(self.log, "s", self.log.earliest)
        self.dispatcher = make_dispatcher(
            cursor=self.cursor,
            policy=policy or KeySharedPolicy(),
            settings=DispatcherSettings(unblocking_interval_ms=0, **settings),  # type: ignore[arg-type]
            version="4.0",
        )
        self.sent: dict[str, list[tuple[bytes, Position, int]]] = {}
        self.markers: list[Entry] = []
        self.dispatcher._on_marker = self._marker_read
        self._ids = 0

    def _marker_read(self, entry: Entry) -> None:
        self.markers.append(entry)
        self.cursor.delete(entry.position)

    @property
    def pip379(self) -> Pip379Dispatcher:
        assert isinstance(self.dispatcher, Pip379Dispatcher)
        return self.dispatcher

    def consumer(self, name: str, permits: int = 1000, ranges: list[tuple[int, int]] | None = None) -> DispatchConsumer:
        self._ids += 1
        log = self.sent.setdefault(name, [])

        def sink(entry: Entry, redeliveries: int) -> None:
            log.append((entry.sticky_key, entry.position, redeliveries))

        c = DispatchConsumer(ConsumerRef(name, self._ids), sink, sticky_ranges=tuple(ranges) if ranges else None)
        self.dispatcher.add_consumer(c)
        if permits:
            self.dispatcher.consumer_flow(c, permits)
        return c

    def publish(self, *keys: bytes, marker: bool = False) -> list[Position]:
        out = []
        for key in keys:
            md = MessageMetadata("p", len(self.log), marker_type=12 if marker else None)
            msgs = () if marker else (SingleMessage(b"v", len(self.log), partition_key=key.decode()),)
            out.append(self.log.append(md, msgs, key).position)
        self.dispatcher.read_more_entries()
        return out

    def ack(self, consumer: DispatchConsumer, position: Position) -> None:
        self.dispatcher.acknowledge(consumer, position)
        moved = self.cursor.delete(position)
        self.dispatcher.after_acknowledgements(moved)

    def keys_of(self, name: str) -> list[bytes]:
        return [k for k, _, _ in self.sent.get(name, [])]


def keys_for(selector: Selector, ref: ConsumerRef, n: int, prefix: str = "k") -> list[bytes]:
    """The first ``n`` keys ``prefix0, prefix1, ...`` the selector gives to ``ref``."""
    out: list[bytes] = []
    i = 0
    while len(out) < n:
        key = f"{prefix}{i}".encode()
        if selector.select_key(key) == ref:
            out.append(key)
        i += 1
        assert i < 100_000, "no key found for the consumer"
    return out


def test_each_key_goes_to_the_consumer_the_selector_names() -> None:
    h = Harness()
    c1, c2, c3 = h.consumer("c1"), h.consumer("c2"), h.consumer("c3")
    keys = [f"key-{i}".encode() for i in range(60)]
    h.publish(*keys)
    for c in (c1, c2, c3):
        assert h.keys_of(c.name) == [k for k in keys if h.dispatcher.selector.select_key(k) == c.ref]


def test_send_marker_message_markers_are_acked_and_never_sent() -> None:
    """``testSendMarkerMessage``: a marker plus 5 messages -> the consumer gets the 5 messages."""
    h = Harness()
    c1 = h.consumer("c1")
    [marker] = h.publish(b"", marker=True)
    h.publish(*[f"k{i}".encode() for i in range(5)])
    assert len(h.sent["c1"]) == 5
    assert [m.position for m in h.markers] == [marker]
    assert h.cursor.mark_delete_position == marker
    assert len(c1.pending) == 5


def test_sticky_consumer_receives_its_ranges_and_uncovered_slots_wait_in_replay() -> None:
    """``testSendMessage`` (STICKY) and the note that uncovered slots are parked, not dropped."""
    h = Harness(KeySharedPolicy(mode="STICKY", sticky_ranges=[(0, 32767)]))
    h.consumer("c1", ranges=[(0, 32767)])
    keys = [f"key-{i}".encode() for i in range(40)]
    h.publish(*keys)
    selector = h.dispatcher.selector
    mine = [k for k in keys if selector.slot_of(k) <= 32767]
    assert h.keys_of("c1") == mine
    assert len(h.dispatcher.replay) == len(keys) - len(mine)
    h.consumer("c2", ranges=[(32768, 65535)])
    assert sorted(h.keys_of("c2")) == sorted(k for k in keys if k not in mine)
    assert len(h.dispatcher.replay) == 0


def test_sticky_range_conflict_is_refused_and_leaves_no_member() -> None:
    h = Harness(KeySharedPolicy(mode="STICKY", sticky_ranges=[(0, 99)]))
    h.consumer("c1", ranges=[(0, 99)])
    with pytest.raises(ConsumerAssignError):
        h.consumer("c2", ranges=[(50, 150)])
    assert [c.name for c in h.dispatcher.consumers.values()] == ["c1"]


def test_skip_redeliver_temporally_a_replay_for_a_busy_consumer_does_not_block_others() -> None:
    """``testSkipRedeliverTemporally``: a replayed entry for a consumer without permits stays in replay while
    another consumer's new entry is dispatched."""
    h = Harness()
    c1 = h.consumer("c1", permits=1)
    c2 = h.consumer("c2", permits=0)
    k1 = keys_for(h.dispatcher.selector, c1.ref, 1)[0]
    k2 = keys_for(h.dispatcher.selector, c2.ref, 1)[0]
    [p_first] = h.publish(k2)  # c2 has no permits: to replay
    assert p_first in h.dispatcher.replay
    h.publish(k1)
    assert h.keys_of("c1") == [k1]
    assert h.keys_of("c2") == []
    h.dispatcher.consumer_flow(c2, 1)
    assert h.keys_of("c2") == [k2]


def test_message_redelivery_keeps_order_replayed_entry_first() -> None:
    """``testMessageRedelivery``: entries of a key waiting in replay go out before newer entries of the key."""
    h = Harness()
    c1 = h.consumer("c1", permits=1)
    c2 = h.consumer("c2")
    k = keys_for(h.dispatcher.selector, c1.ref, 1)[0]
    other = keys_for(h.dispatcher.selector, c2.ref, 1)[0]
    p1, p2, p3, p4 = h.publish(k, k, k, other)
    assert h.keys_of("c1") == [k] and h.keys_of("c2") == [other]
    assert list(h.dispatcher.replay) == [p2, p3]  # no permits left for c1: parked, hash recorded
    h.dispatcher.consumer_flow(c1, 1)
    assert [p for _, p, _ in h.sent["c1"]] == [p1, p2]
    [p5] = h.publish(k)  # R1: the new entry must not overtake p3
    assert [p for _, p, _ in h.sent["c1"]] == [p1, p2]
    h.dispatcher.consumer_flow(c1, 10)
    assert [p for _, p, _ in h.sent["c1"]] == [p1, p2, p3, p5]
    del p4


def test_draining_blocks_a_moved_hash_until_its_pending_entries_are_acked() -> None:
    h = Harness()
    c1 = h.consumer("c1")
    keys = [f"k{i}".encode() for i in range(30)]
    first = h.publish(*keys)
    c2 = h.consumer("c2")
    moved = [k for k in keys if h.dispatcher.selector.select_key(k) == c2.ref]
    assert moved, "c2 must take some keys"
    h.publish(*moved)
    assert h.keys_of("c2") == []
    tracker = h.pip379.tracker
    assert tracker is not None
    assert set(tracker.slots()) == {h.dispatcher.selector.slot_of(k) for k in moved}
    for position in first:
        h.ack(c1, position)
    assert h.keys_of("c2") == moved
    assert len(tracker) == 0
    assert h.pip379.consumer_stats(c1)["drainingHashesClearedTotal"] == len(
        set(tracker.slots()) | set(h.dispatcher.selector.slot_of(k) for k in moved)
    )


def test_closing_consumer_returns_pending_entries_with_their_hashes_and_redelivery_counts() -> None:
    h = Harness()
    c1 = h.consumer("c1")
    c2 = h.consumer("c2")
    k1 = keys_for(h.dispatcher.selector, c1.ref, 2)
    h.publish(*k1)
    h.dispatcher.remove_consumer(c1)
    assert h.keys_of("c2") == k1
    assert [rc for _, _, rc in h.sent["c2"]] == [0, 0]  # 4.x ``removeConsumer`` makes no redelivery-tracker call
    assert c1.pending.closed and not c1.active
    del c2


def test_negative_ack_replays_without_hash_so_a_newer_entry_may_overtake() -> None:
    """PIP-379 contract: no ordering after nack (the position is queued without its hash)."""
    h = Harness()
    c1 = h.consumer("c1", permits=1)
    k = keys_for(h.dispatcher.selector, c1.ref, 1)[0]
    [p1] = h.publish(k)
    h.dispatcher.redeliver(c1, [p1])
    assert h.dispatcher.replay.slot_of(p1) is None
    assert not h.dispatcher.replay.contains_slot(h.dispatcher.selector.slot_of(k))


def test_send_time_recheck_refuses_a_hash_draining_at_another_consumer() -> None:
    """R4: ``addPendingAckIfAllowed`` refuses the entry even if the pass let it through."""
    h = Harness()
    c1 = h.consumer("c1")
    c2 = h.consumer("c2", permits=0)
    k = keys_for(h.dispatcher.selector, c2.ref, 1)[0]
    entry = h.log.append(MessageMetadata("p", 0), (SingleMessage(b"v", 0),), k)
    tracker = h.pip379.tracker
    assert tracker is not None
    tracker.add_entry(c1, h.dispatcher.selector.slot_of(k))
    assert h.pip379._add_pending_if_allowed(c2, entry, h.dispatcher.selector.slot_of(k)) is False
    assert h.pip379._add_pending_if_allowed(c1, entry, h.dispatcher.selector.slot_of(k)) is True


def test_lookahead_limit_bounds_the_replay_queue_and_the_read_position() -> None:
    """``testReadAheadLimit``: with PerSubscription=20 the replay queue never exceeds 20."""
    h = Harness(lookahead_per_subscription=20)
    c1 = h.consumer("c1", permits=0)
    c2 = h.consumer("c2", permits=500)
    k1 = keys_for(h.dispatcher.selector, c1.ref, 5)
    k2 = keys_for(h.dispatcher.selector, c2.ref, 5)
    sizes = []
    for i in range(200):
        h.publish(k1[i % 5])
        sizes.append(len(h.dispatcher.replay))
    h.publish(*k2)
    assert max(sizes) <= 20
    assert h.keys_of("c2") == []  # c2's entries are behind the look-ahead window
    assert h.cursor.read_position < Position(1, 40)
    h.dispatcher.consumer_flow(c1, 1000)
    assert len(h.keys_of("c1")) == 200 and h.keys_of("c2") == k2


def test_lookahead_reads_past_a_blocked_consumer_to_reach_others() -> None:
    """A consumer without permits holding the head of the topic does not stall a consumer with permits."""
    h = Harness()
    c1 = h.consumer("c1", permits=0)
    c2 = h.consumer("c2")
    k1 = keys_for(h.dispatcher.selector, c1.ref, 3)
    k2 = keys_for(h.dispatcher.selector, c2.ref, 3)
    h.publish(*k1, *k2)
    assert h.keys_of("c2") == k2
    assert len(h.dispatcher.replay) == 3


def test_allow_out_of_order_delivery_neither_drains_nor_blocks_by_hash() -> None:
    h = Harness(KeySharedPolicy(allow_out_of_order_delivery=True))
    c1 = h.consumer("c1")
    keys = [f"k{i}".encode() for i in range(20)]
    h.publish(*keys)
    c2 = h.consumer("c2")
    assert h.pip379.tracker is None
    moved = [k for k in keys if h.dispatcher.selector.select_key(k) == c2.ref]
    h.publish(*moved)
    assert h.keys_of("c2") == moved  # delivered at once although c1 still holds earlier ones
    del c1


def keys_moving_to(h: Harness, name: str, n: int) -> list[bytes]:
    """Keys the *next* consumer added to ``h`` (named ``name``) will own."""
    probe = h.dispatcher.selector.copy()
    ref = ConsumerRef(name, h._ids + 1)
    probe.add(ref)
    return keys_for(probe, ref, n)


@pytest.mark.parametrize(("version", "out_of_order"), [("4.0.2", True), ("4.0.3", False)])
def test_replay_filter_blocks_a_hash_for_the_rest_of_the_pass_since_4_0_3(version: str, out_of_order: bool) -> None:
    """#23870/#23874: an ack racing with the replay filter unblocks a draining hash mid-pass; before 4.0.3 the
    later position of the hash passes the filter while the earlier one was skipped, and overtakes it."""
    h = Harness()
    h.dispatcher = make_dispatcher(
        cursor=h.cursor,
        policy=KeySharedPolicy(),
        settings=DispatcherSettings(unblocking_interval_ms=0),
        version=version,
    )
    h.dispatcher._on_marker = h._marker_read
    c1 = h.consumer("c1")
    [k] = keys_moving_to(h, "c2", 1)
    [held] = h.publish(k)  # pending at c1
    c2 = h.consumer("c2", permits=0)
    first, second = h.publish(k, k)  # the hash drains at c1: both wait in the replay queue
    assert list(h.dispatcher.replay) == [first, second]
    # the ack of `held` lands while the filter is between `first` and `second`
    h.dispatcher.interleave_replay_filter(lambda: h.ack(c1, held), after=first)
    h.dispatcher.consumer_flow(c2, 10)
    order = [p for _, p, _ in h.sent["c2"]]
    assert sorted(order) == [first, second]
    assert (order == [second, first]) is out_of_order


def test_a_leaving_consumer_registers_nothing_for_itself_and_the_last_one_clears_state() -> None:
    h = Harness()
    c1 = h.consumer("c1")
    h.publish(*[f"k{i}".encode() for i in range(10)])
    h.dispatcher.remove_consumer(c1)
    assert not h.dispatcher.consumers
    assert len(h.dispatcher.replay) == 0
    tracker = h.pip379.tracker
    assert tracker is not None and len(tracker) == 0
    c2 = h.consumer("c2")
    assert len(h.keys_of("c2")) == 10  # the cursor rewound to the first unacknowledged entry
    assert [rc for _, _, rc in h.sent["c2"]] == [0] * 10
    del c2


def test_max_unacked_per_consumer_caps_pending_messages() -> None:
    """``getAvailablePermits``: the room under ``maxUnackedMessagesPerConsumer`` caps what is sent; the consumer
    is flagged blocked (flow permits are parked) until acknowledgements bring it to half the limit."""
    h = Harness(max_unacked_per_consumer=4)
    c1 = DispatchConsumer(ConsumerRef("c1", 1), lambda e, r: None, max_unacked_messages=4)
    h.dispatcher.add_consumer(c1)
    h.dispatcher.consumer_flow(c1, 100)
    positions = h.publish(*[b"k"] * 10)
    assert [p for p, _, _ in c1.pending] == positions[:4] and c1.blocked_on_unacked
    h.dispatcher.consumer_flow(c1, 5)
    assert c1.permits_while_blocked == 5
    h.ack(c1, positions[0])
    assert [p for p, _, _ in c1.pending] == positions[1:5]  # one slot of room, one more entry
    for p in positions[1:]:
        h.ack(c1, p)
        assert c1.pending.unacked_messages <= 4
    assert len(c1.pending) == 0 and h.cursor.mark_delete_position == positions[-1]
    # down to half the limit: unblocked, the parked permits are handed back
    assert not c1.blocked_on_unacked and c1.permits_while_blocked == 0 and c1.permits == 105 - 10


def test_dispatcher_settle_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """The read loop stops when a round makes no progress; a model bug that loops raises instead of hanging."""
    import reference_model.keyshared.dispatcher as module

    h = Harness()
    h.consumer("c1")
    monkeypatch.setattr(module, "_MAX_ROUNDS", 3)
    h.dispatcher.replay.add(Position(9, 9))  # something to do, so the loop never sees a settled dispatcher
    always: Callable[[], bool] = lambda: True  # noqa: E731
    monkeypatch.setattr(h.dispatcher, "_read_round", always)
    with pytest.raises(ModelStateError, match="did not settle"):
        h.dispatcher.read_more_entries()
