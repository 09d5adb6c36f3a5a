"""DrainingHashesTracker, case by case after Pulsar's ``DrainingHashesTrackerTest``."""

from __future__ import annotations

import pytest

from reference_model.errors import InvalidArgument, ModelStateError
from reference_model.keyshared import DrainingHashesTracker


class C:
    """A stand-in consumer: identity is all the tracker uses."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


@pytest.fixture
def unblocked() -> list[int]:
    return []


@pytest.fixture
def tracker(unblocked: list[int]) -> DrainingHashesTracker[C]:
    return DrainingHashesTracker(unblocked.append)


def test_add_entry_creates_an_entry_for_the_consumer(tracker: DrainingHashesTracker[C]) -> None:
    c1 = C("c1")
    tracker.add_entry(c1, 1)
    entry = tracker.get_entry(1)
    assert entry is not None
    assert entry.consumer is c1
    assert entry.ref_count == 1


def test_add_entry_refuses_hash_zero(tracker: DrainingHashesTracker[C]) -> None:
    with pytest.raises(InvalidArgument, match="cannot be 0"):
        tracker.add_entry(C("c1"), 0)


def test_reduce_ref_count_to_zero_removes_the_entry(tracker: DrainingHashesTracker[C]) -> None:
    c1 = C("c1")
    tracker.add_entry(c1, 1)
    tracker.add_entry(c1, 1)
    assert tracker.reduce_ref_count(c1, 1, closing=False) is False
    assert tracker.get_entry(1) is not None
    assert tracker.reduce_ref_count(c1, 1, closing=False) is True
    assert tracker.get_entry(1) is None


def test_reduce_ref_count_by_another_consumer_is_an_error_and_keeps_the_entry(
    tracker: DrainingHashesTracker[C],
) -> None:
    c1, c2 = C("c1"), C("c2")
    tracker.add_entry(c1, 1)
    with pytest.raises(ModelStateError, match=r"already draining|is draining"):
        tracker.reduce_ref_count(c2, 1, closing=False)
    entry = tracker.get_entry(1)
    assert entry is not None and entry.ref_count == 1


def test_add_entry_for_a_second_consumer_is_an_error(tracker: DrainingHashesTracker[C]) -> None:
    tracker.add_entry(C("c1"), 7)
    with pytest.raises(ModelStateError, match="already draining hash 7"):
        tracker.add_entry(C("c2"), 7)


def test_same_consumer_is_not_blocked_and_clears_the_entry_lazily(tracker: DrainingHashesTracker[C]) -> None:
    c1 = C("c1")
    tracker.add_entry(c1, 1)
    tracker.add_entry(c1, 1)
    assert tracker.should_block(c1, 1) is False
    # cleared whatever its reference count: the hash came back to its original consumer
    assert tracker.get_entry(1) is None
    assert tracker.consumer_stats(c1)["drainingHashesClearedTotal"] == 1


def test_other_consumer_is_blocked_and_the_attempt_is_counted(tracker: DrainingHashesTracker[C]) -> None:
    c1, c2 = C("c1"), C("c2")
    tracker.add_entry(c1, 1)
    assert tracker.should_block(c2, 1) is True
    assert tracker.should_block(c2, 1) is True
    entry = tracker.get_entry(1)
    assert entry is not None and entry.blocked_count == 2


def test_unknown_hash_is_not_blocked(tracker: DrainingHashesTracker[C]) -> None:
    assert tracker.should_block(C("c1"), 42) is False
    assert tracker.should_block(C("c1"), 0) is False


def test_unblock_after_a_blocked_attempt_notifies_the_hash(
    tracker: DrainingHashesTracker[C], unblocked: list[int]
) -> None:
    c1, c2 = C("c1"), C("c2")
    tracker.add_entry(c1, 1)
    tracker.should_block(c2, 1)
    tracker.reduce_ref_count(c1, 1, closing=False)
    assert unblocked == [1]


def test_unblock_without_blocked_attempts_does_not_notify(
    tracker: DrainingHashesTracker[C], unblocked: list[int]
) -> None:
    c1 = C("c1")
    tracker.add_entry(c1, 1)
    tracker.reduce_ref_count(c1, 1, closing=False)
    assert unblocked == []


def test_unblock_while_closing_does_not_notify(tracker: DrainingHashesTracker[C], unblocked: list[int]) -> None:
    c1, c2 = C("c1"), C("c2")
    tracker.add_entry(c1, 1)
    tracker.should_block(c2, 1)
    tracker.reduce_ref_count(c1, 1, closing=True)
    assert unblocked == []
    assert tracker.get_entry(1) is None


def test_unblocks_inside_nested_batches_coalesce_into_one_minus_one(
    tracker: DrainingHashesTracker[C], unblocked: list[int]
) -> None:
    c1, c2 = C("c1"), C("c2")
    for slot in (1, 2):
        tracker.add_entry(c1, slot)
        tracker.should_block(c2, slot)
    tracker.start_batch()
    tracker.start_batch()
    tracker.reduce_ref_count(c1, 1, closing=False)
    tracker.end_batch()
    assert unblocked == []
    tracker.reduce_ref_count(c1, 2, closing=False)
    assert unblocked == []
    tracker.end_batch()
    assert unblocked == [-1]


def test_clear_forgets_everything(tracker: DrainingHashesTracker[C]) -> None:
    c1 = C("c1")
    tracker.add_entry(c1, 1)
    tracker.add_entry(c1, 2)
    tracker.clear()
    assert len(tracker) == 0
    assert tracker.get_entry(1) is None
    assert tracker.consumer_stats(c1)["drainingHashesCount"] == 0


def test_consumer_stats_use_pulsars_field_names(tracker: DrainingHashesTracker[C]) -> None:
    c1, c2 = C("c1"), C("c2")
    tracker.add_entry(c1, 2862)
    tracker.add_entry(c1, 2862)
    tracker.add_entry(c1, 17)
    for _ in range(5):
        tracker.should_block(c2, 2862)
    stats = tracker.consumer_stats(c1)
    assert stats == {
        "drainingHashesCount": 2,
        "drainingHashesClearedTotal": 0,
        "drainingHashesUnackedMessages": 3,
        "drainingHashes": [
            {"hash": 17, "unackMsgs": 1, "blockedAttempts": 0},
            {"hash": 2862, "unackMsgs": 2, "blockedAttempts": 5},
        ],
    }
    tracker.consumer_removed(c1)
    assert tracker.consumer_stats(c1)["drainingHashesCount"] == 0
