"""The topic log, the cursor, pending acks, the replay queue and the look-ahead limit."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import random
from typing import Any

import pytest

from reference_model.errors import InvalidArgument, ModelStateError
from reference_model.keyshared import DispatcherSettings, PendingAcks, ReplayQueue, effective_lookahead_limit
from reference_model.storage import Entry, ManagedCursor, MessageMetadata, Position, SingleMessage, TopicLog
from reference_model.storage._fast_init import fast_frozen_init


def _log(n: int, ledger: int = 3) -> TopicLog:
    log = TopicLog("t", ledger)
    for i in range(n):
        log.append(MessageMetadata("p", i), (SingleMessage(b"x", i),), b"k")
    return log


# -- topic log ---------------------------------------------------------------------------------------------
def test_positions_count_entries_from_zero_within_a_ledger_and_continue_in_a_new_ledger() -> None:
    log = _log(3)
    assert [e.position for e in log] == [Position(3, 0), Position(3, 1), Position(3, 2)]
    log.roll_ledger(7)
    entry = log.append(MessageMetadata("p", 3), (SingleMessage(b"x", 3),), b"k")
    assert entry.position == Position(7, 0)
    assert log.position_after(Position(3, 2)) == Position(7, 0)
    assert log.next_valid_position(Position(7, 0)) == Position(7, 1)
    assert log.count_between(Position(3, 0), Position(7, 0)) == 3


def test_rolling_to_a_lower_ledger_is_refused() -> None:
    with pytest.raises(ModelStateError, match="Ledger ids only grow"):
        _log(1).roll_ledger(2)


def test_missing_position_names_the_topic() -> None:
    with pytest.raises(ModelStateError, match="no entry at position 3:9"):
        _log(2).get(Position(3, 9))


def test_earliest_and_latest() -> None:
    log = TopicLog("t", 5)
    assert log.earliest == Position(5, -1) and log.latest == Position(5, -1) and log.last_position is None
    log.append(MessageMetadata("p", 0), (SingleMessage(b"x", 0),), b"k")
    assert log.latest == Position(5, 0)
    assert str(Position(5, 0)) == "5:0"


# -- cursor ------------------------------------------------------------------------------------------------
def test_mark_delete_advances_over_contiguous_acknowledgements_only() -> None:
    log = _log(5)
    cursor = ManagedCursor(log, "s", log.earliest)
    assert cursor.delete(Position(3, 1)) is False
    assert cursor.delete(Position(3, 2)) is False
    assert cursor.mark_delete_position == Position(3, -1)
    assert cursor.deleted_ranges() == [(Position(3, 0), Position(3, 2))]
    assert cursor.format_deleted_ranges() == "[(3:0..3:2]]"
    assert cursor.delete(Position(3, 0)) is True
    assert cursor.mark_delete_position == Position(3, 2)
    assert cursor.backlog() == 2
    assert cursor.delete(Position(3, 0)) is False  # already acknowledged


def test_read_entries_skips_acknowledged_entries_and_moves_the_read_position() -> None:
    log = _log(5)
    cursor = ManagedCursor(log, "s", log.earliest)
    cursor.delete(Position(3, 1))
    read = cursor.read_entries(2)
    assert [e.position for e in read] == [Position(3, 0), Position(3, 2)]
    assert cursor.read_position == Position(3, 3)
    assert cursor.entries_since_first_not_acked() == 4  # (mark-delete, read position], read position included
    cursor.rewind()
    assert cursor.read_position == Position(3, 0)


def test_cumulative_mark_delete_drops_holes_below_and_pulls_the_read_position() -> None:
    log = _log(6)
    cursor = ManagedCursor(log, "s", log.earliest)
    cursor.delete(Position(3, 1))
    cursor.delete(Position(3, 4))
    assert cursor.mark_delete(Position(3, 3)) is True
    assert cursor.mark_delete_position == Position(3, 4)  # 3:4 was already acknowledged
    assert cursor.individually_deleted == frozenset()
    assert cursor.read_position == Position(3, 5)
    assert cursor.mark_delete(Position(3, 2)) is False


def test_subscription_at_latest_starts_after_the_last_entry() -> None:
    log = _log(2)
    cursor = ManagedCursor(log, "s", log.latest)
    assert cursor.read_position == Position(3, 2)
    assert not cursor.has_more_entries()
    assert cursor.backlog() == 0


# -- pending acks ------------------------------------------------------------------------------------------
def test_pending_acks_count_messages_and_refuse_after_close() -> None:
    pending = PendingAcks()
    assert pending.add_if_allowed(Position(1, 2), 3, 77)
    assert pending.add_if_allowed(Position(1, 1), 1, 5)
    assert pending.unacked_messages == 4
    assert list(pending) == [(Position(1, 1), 1, 5), (Position(1, 2), 3, 77)]
    assert pending.remove(Position(1, 2)) == (3, 77)
    assert pending.remove(Position(1, 2)) is None
    assert pending.drain(close=True) == [(Position(1, 1), 1, 5)]
    assert pending.unacked_messages == 0
    assert pending.add_if_allowed(Position(1, 3), 1, 5) is False


def test_pending_acks_remove_all_up_to() -> None:
    pending = PendingAcks()
    for i in range(5):
        pending.add_if_allowed(Position(1, i), 2, i + 1)
    gone = pending.remove_all_up_to(Position(1, 2))
    assert [p for p, _, _ in gone] == [Position(1, 0), Position(1, 1), Position(1, 2)]
    assert pending.unacked_messages == 4


# -- replay queue ------------------------------------------------------------------------------------------
def test_replay_queue_reads_lowest_first_and_counts_hashes() -> None:
    replay = ReplayQueue(track_hashes=True)
    assert replay.add(Position(1, 5), 9)
    assert replay.add(Position(1, 2), 9)
    assert replay.add(Position(1, 3), None)
    assert not replay.add(Position(1, 2), 9)
    assert list(replay) == [Position(1, 2), Position(1, 3), Position(1, 5)]
    assert replay.contains_slot(9)
    assert replay.slot_of(Position(1, 3)) is None
    replay.remove(Position(1, 2))
    assert replay.contains_slot(9)
    replay.remove(Position(1, 5))
    assert not replay.contains_slot(9)
    # a hash learned later replaces "unknown"
    replay.add(Position(1, 3), 4)
    assert replay.contains_slot(4) and replay.slot_of(Position(1, 3)) == 4


def test_replay_queue_without_hash_tracking_never_blocks() -> None:
    replay = ReplayQueue(track_hashes=False)
    replay.add(Position(1, 1), 9)
    assert not replay.contains_slot(9)
    assert replay.slot_of(Position(1, 1)) is None


def test_replay_select_passes_over_rejected_slots_without_asking_the_filter() -> None:
    replay = ReplayQueue(track_hashes=True)
    for i in range(8):
        replay.add(Position(1, i), i % 3 + 1)  # slots 1, 2, 3, 1, 2, 3, ...
    replay.add(Position(2, 0), None)  # no hash known: never rejected by slot
    seen: list[Position] = []
    blocked: set[int] = set()

    def block_slot_1_once_seen(position: Position, slot: int | None) -> bool:
        seen.append(position)
        if slot == 1:
            blocked.add(1)  # the filter blocks a hash as it goes; later positions of it are passed over
            return False
        return True

    assert replay.select(10, block_slot_1_once_seen, blocked) == [
        p for p in replay if p.ledger_id == 2 or p.entry_id % 3 != 0
    ]
    assert Position(1, 0) in seen and Position(1, 3) not in seen and Position(1, 6) not in seen


def test_replay_select_stops_once_every_queued_hash_is_rejected() -> None:
    replay = ReplayQueue(track_hashes=True)
    for i in range(30):
        replay.add(Position(1, i), i % 3 + 1)
    seen: list[Position] = []
    blocked: set[int] = set()

    def block_all(position: Position, slot: int | None) -> bool:
        seen.append(position)
        blocked.add(slot)  # type: ignore[arg-type]
        return False

    assert replay.select(10, block_all, blocked) == [] and seen == [Position(1, 0), Position(1, 1), Position(1, 2)]
    replay.add(Position(2, 0), None)  # a position of unknown hash is asked about: the walk goes on to it
    seen.clear()
    blocked.clear()
    assert replay.select(10, block_all, blocked) == [] and seen[-1] == Position(2, 0) and len(seen) == 4


def test_replay_select_consults_the_filter_in_order_and_stops_at_max() -> None:
    replay = ReplayQueue(track_hashes=True)
    for i in range(6):
        replay.add(Position(1, i), i % 2 + 1)
    seen: list[Position] = []

    def only_odd_slot(position: Position, slot: int | None) -> bool:
        seen.append(position)
        return slot == 2

    assert replay.select(2, only_odd_slot) == [Position(1, 1), Position(1, 3)]
    assert seen == [Position(1, 0), Position(1, 1), Position(1, 2), Position(1, 3)]
    assert replay.remove_all_up_to(Position(1, 3)) == 4
    assert list(replay) == [Position(1, 4), Position(1, 5)]


def _copying_select(
    order: list[Position], slots: dict[Position, int], max_positions: int, accept: Any
) -> list[Position]:
    """The replay selection over a copy of the queue: what ``select`` must be equivalent to."""
    out: list[Position] = []
    for p in list(order):
        if p not in slots:
            continue
        if accept(p, slots[p] or None):
            out.append(p)
            if len(out) >= max_positions:
                break
    return out


@pytest.mark.parametrize("seed", range(30))
def test_replay_select_walks_the_positions_it_started_with_when_the_filter_changes_the_queue(seed: int) -> None:
    """``select`` walks the live queue (no copy per read round); a filter that adds or removes positions (the
    #23870 race forces an ack there) sees exactly what a walk over a copy would see."""
    rnd = random.Random(seed)

    def run(use_reference: bool) -> tuple[list[Position], list[Position], list[Position]]:
        replay = ReplayQueue(track_hashes=True)
        for i in rnd_positions:
            replay.add(Position(1, i), i % 3 + 1)
        actions = iter(script)
        seen: list[Position] = []

        def accept(position: Position, slot: int | None) -> bool:
            seen.append(position)
            kind, arg = next(actions, ("none", 0))
            if kind == "remove":
                replay.remove(Position(1, arg))
            elif kind == "add":
                replay.add(Position(1, arg), arg % 3 + 1)
            elif kind == "clear-below":
                replay.remove_all_up_to(Position(1, arg))
            return slot != 2

        if use_reference:
            order, slots = replay.positions, replay._slots
            chosen = _copying_select(order, slots, 4, accept)
        else:
            chosen = replay.select(4, accept)
        return chosen, seen, list(replay)

    rnd_positions = rnd.sample(range(40), 15)
    script = [(rnd.choice(["none", "none", "remove", "add", "clear-below"]), rnd.randrange(40)) for _ in range(20)]
    assert run(use_reference=False) == run(use_reference=True)


def test_replay_select_without_a_filter_is_the_head_of_the_queue() -> None:
    replay = ReplayQueue(track_hashes=False)
    for i in (5, 1, 3):
        replay.add(Position(1, i))
    assert replay.select(2) == [Position(1, 1), Position(1, 3)]
    assert replay.select(0) == []


# -- records -----------------------------------------------------------------------------------------------
def test_records_built_by_the_fast_constructor_are_the_frozen_dataclasses() -> None:
    """``fast_frozen_init`` only speeds construction up: type, defaults, equality, hashing, immutability, replace,
    copy and pickle are the dataclass's."""
    metadata = MessageMetadata("p", 7, partition_key="k")
    assert type(metadata) is MessageMetadata and dataclasses.is_dataclass(metadata)
    assert metadata == MessageMetadata(producer_name="p", sequence_id=7, partition_key="k", highest_sequence_id=-1)
    assert hash(metadata) == hash(MessageMetadata("p", 7, 0, "k"))
    assert metadata.ordering_key is None and metadata.num_messages_in_batch is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        metadata.sequence_id = 8  # type: ignore[misc]
    assert dataclasses.replace(metadata, replicated_from="r1").replicated_from == "r1"
    assert copy.copy(metadata) == metadata and pickle.loads(pickle.dumps(metadata)) == metadata
    entry = Entry(Position(1, 0), metadata, (SingleMessage(b"a", 7), SingleMessage(b"b", 8)), b"k")
    assert entry.batch_size == 2 and copy.deepcopy(entry).batch_size == 2  # ``__post_init__`` ran
    with pytest.raises(TypeError, match="sequence_id"):
        MessageMetadata("p")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="bogus"):
        SingleMessage(b"x", 1, bogus=2)  # type: ignore[call-arg]


def test_fast_frozen_init_refuses_classes_it_cannot_build() -> None:
    @dataclasses.dataclass(slots=True)
    class Mutable:
        a: int

    @dataclasses.dataclass(frozen=True, slots=True)
    class WithFactory:
        a: list[int] = dataclasses.field(default_factory=list)

    @dataclasses.dataclass(frozen=True, slots=True)
    class WithInitVar:
        a: int
        scale: dataclasses.InitVar[int] = 1

    for cls in (Mutable, WithFactory, WithInitVar):
        with pytest.raises(TypeError, match="fast_frozen_init"):
            fast_frozen_init(cls)


# -- look-ahead limit --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("per_consumer", "per_subscription", "consumers", "expected"),
    [
        (2000, 20000, 3, 6000),  # per consumer times consumers
        (2000, 20000, 20, 20000),  # capped by the subscription limit
        (0, 50, 3, 50),  # per-consumer term disabled
        (10, 0, 3, 30),  # subscription cap disabled
        (0, 0, 3, 150000),  # both off: max-unacked limits (3 x 50000 < 200000)
    ],
)
def test_effective_lookahead_limit(per_consumer: int, per_subscription: int, consumers: int, expected: int) -> None:
    settings = DispatcherSettings(lookahead_per_consumer=per_consumer, lookahead_per_subscription=per_subscription)
    assert effective_lookahead_limit(settings, consumers) == expected


def test_lookahead_falls_back_to_int_max_when_every_limit_is_off() -> None:
    settings = DispatcherSettings(
        lookahead_per_consumer=0,
        lookahead_per_subscription=0,
        max_unacked_per_consumer=0,
        max_unacked_per_subscription=0,
    )
    assert effective_lookahead_limit(settings, 2) == 2**31 - 1


def test_dispatcher_settings_from_broker_conf_names() -> None:
    settings = DispatcherSettings.from_broker_conf(
        {"keySharedUnblockingIntervalMs": 0, "dispatcherMaxReadBatchSize": 7}
    )
    assert settings.unblocking_interval_ms == 0 and settings.max_read_batch_size == 7
    with pytest.raises(InvalidArgument, match="Did you mean 'keySharedUnblockingIntervalMs'"):
        DispatcherSettings.from_broker_conf({"keySharedUnblockingIntervalMS": 0})
