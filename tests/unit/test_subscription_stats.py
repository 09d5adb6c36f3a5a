"""The subscription stats a ``record:subscription-stats`` scenario records at its end, judged against themselves
(``stats_mismatch``): the subscription's draining figures are the sum of its consumers' (Pulsar's
``PersistentSubscription.getStats``), positions print as ``ledgerId:entryId``, and the classic recently-joined map
names only connected consumers.  Proven both ways: each planted fault is flagged, the correct document is not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conformance.cases._support import (
    consumer_counter_problems,
    dedup_snapshot_problems,
    stats_figure_problems,
    subscription_stats_problems,
)
from conformance.trace.builder import TraceBuilder
from conformance.trace.header import SubscriptionSpec, TraceHeader
from pytest_keyshared.driver.session import stats_subscription_figures


def _figures(**changes: Any) -> dict[str, Any]:
    """What a correct PIP-379 broker printed after a join: c1 drained 4 hashes, one hash still draining at c2."""
    figures: dict[str, Any] = {
        "drainingHashesCount": 1,
        "drainingHashesClearedTotal": 4,
        "drainingHashesUnackedMessages": 2,
        "consumersAfterMarkDeletePosition": {},
        "consumers": [
            {"consumerName": "c1", "drainingHashesCount": 0, "drainingHashesClearedTotal": 4},
            {
                "consumerName": "c2",
                "drainingHashesCount": 1,
                "drainingHashesClearedTotal": 0,
                "drainingHashesUnackedMessages": 2,
            },
        ],
    }
    figures.update(changes)
    return figures


def _classic(**changes: Any) -> dict[str, Any]:
    figures: dict[str, Any] = {
        "consumersAfterMarkDeletePosition": {"c2": "3:50"},
        "consumers": [
            {"consumerName": "c1", "readPositionWhenJoining": "3:0"},
            {"consumerName": "c2", "readPositionWhenJoining": "3:50"},
        ],
    }
    figures.update(changes)
    return figures


def test_a_correct_document_passes() -> None:
    assert stats_figure_problems(_figures()) == []
    assert stats_figure_problems(_classic()) == []
    # a classic broker prints no draining figures, an older one no recently-joined map: nothing to judge
    assert stats_figure_problems({"consumers": [{"consumerName": "c1"}]}) == []
    assert stats_figure_problems({"drainingHashesClearedTotal": 0, "consumers": []}) == []


@pytest.mark.parametrize(
    ("figures", "says"),
    [
        (_figures(drainingHashesClearedTotal=0), "drainingHashesClearedTotal is 0, but its consumers' add up to 4"),
        (_figures(drainingHashesCount=2), "drainingHashesCount is 2, but its consumers' add up to 1"),
        (_figures(drainingHashesUnackedMessages=0), "drainingHashesUnackedMessages is 0"),
        (_classic(consumers=[{"consumerName": "c1", "readPositionWhenJoining": ""}]), "not a position"),
        (_classic(consumersAfterMarkDeletePosition={"c2": ""}), "gives 'c2' the position ''"),
        (
            _classic(consumersAfterMarkDeletePosition={"c9": "3:50"}),
            "names 'c9', which is not among the subscription's consumers",
        ),
    ],
)
def test_each_planted_fault_is_flagged(figures: dict[str, Any], says: str) -> None:
    problems = stats_figure_problems(figures)
    assert problems and all(p.startswith("stats_mismatch: ") for p in problems)
    assert any(says in p for p in problems), problems


def test_the_figures_are_read_from_a_topic_stats_document() -> None:
    stats = {
        "subscriptions": {
            "s": {
                "msgBacklog": 3,
                "drainingHashesCount": 0,
                "consumersAfterMarkDeletePosition": {"c1": "1:2"},
                "consumers": [{"consumerName": "c1", "readPositionWhenJoining": "1:2", "unackedMessages": 5}],
            }
        }
    }
    assert stats_subscription_figures(stats, "s") == {
        "drainingHashesCount": 0,
        "consumersAfterMarkDeletePosition": {"c1": "1:2"},
        "consumers": [{"consumerName": "c1", "readPositionWhenJoining": "1:2", "unackedMessages": 5}],
    }
    assert stats_subscription_figures(stats, "other") is None
    assert stats_subscription_figures(None, "s") is None


def _trace(tmp_path: Path, figures: dict[str, Any] | None) -> Path:
    b = TraceBuilder(TraceHeader(target="hand-written", subscription=SubscriptionSpec("s")))
    b.open("c1")
    b.publish("k", "1:0")
    b.receive("c1", "k", "1:0")
    b.ack("c1", "1:0")
    if figures is None:
        b.add("end", drained=True)
    else:
        b.add("end", drained=True, subscription_stats=figures)
    return b.write(tmp_path / "trace.jsonl")


def test_judged_from_the_end_event_only_when_recorded(tmp_path: Path) -> None:
    assert subscription_stats_problems(_trace(tmp_path, _figures())) == []
    assert subscription_stats_problems(_trace(tmp_path, None)) == []  # no admin API: nothing recorded, nothing judged
    flagged = subscription_stats_problems(_trace(tmp_path, _figures(drainingHashesClearedTotal=0)))
    assert len(flagged) == 1 and "drainingHashesClearedTotal" in flagged[0]


# -- each consumer's unacked figures and msgOutCounter against the limit and the trace (``consumer_counter_problems``)

TOPIC = "persistent://public/default/t"


def _held(unacked: int, blocked: bool, out: int, average: int = 1) -> dict[str, Any]:
    return {
        "consumers": [
            {
                "consumerName": "c1",
                "unackedMessages": unacked,
                "blockedConsumerOnUnackedMsgs": blocked,
                "msgOutCounter": out,
                "avgMessagesPerEntry": average,
            }
        ]
    }


def _limit_trace(
    tmp_path: Path,
    limit: int,
    held: dict[str, Any],
    after: dict[str, Any],
    *,
    equal_times: bool = False,
    late_ack: bool = False,
    nack: bool = False,
    batch: bool = False,
    queue: int = 0,
) -> Path:
    """c1 receives 10 messages and holds them; stats read before the drain (``held``) and after it (``after``)."""
    header = TraceHeader(
        target="hand-written",
        subscription=SubscriptionSpec("s"),
        extra={"topic": TOPIC, "broker_conf": {"maxUnackedMessagesPerConsumer": limit}},
    )
    b = TraceBuilder(header, topic=TOPIC, step=0 if equal_times else 10)
    b.add("open", consumer="c1", subscription="s", topic=TOPIC, result="ok", name="c1", receiver_queue=queue)
    for n in range(10):
        msg_id = f"1:{n // 2}:-1:{n % 2}" if batch else f"1:{n}"  # batch: five entries of two messages
        b.publish("k", msg_id)
        b.receive("c1", "k", msg_id)
    if late_ack:  # an ack the client sent that may not have reached the broker when the stats were read
        b.ack("c1", "1:0")
    if nack:
        b.nack("c1", "1:9")
    for n in range(1 if late_ack else 0, 10):
        b.ack("c1", f"1:{n}")
    b.add("end", drained=True, subscription_stats=after, subscription_stats_held=held)
    return b.write(tmp_path / "trace.jsonl")


@pytest.mark.parametrize("equal_times", [False, True])
@pytest.mark.parametrize("late_ack", [False, True])
def test_a_consumer_at_its_limit_is_blocked(tmp_path: Path, equal_times: bool, late_ack: bool) -> None:
    after = _held(0, False, 10)
    right = _limit_trace(tmp_path, 10, _held(10, True, 10), after, equal_times=equal_times, late_ack=late_ack)
    assert subscription_stats_problems(right) == []
    # the ack may have arrived: one fewer unacknowledged, still blocked above half the limit
    arrived = _limit_trace(tmp_path, 10, _held(9, True, 10), after, equal_times=equal_times, late_ack=late_ack)
    assert subscription_stats_problems(arrived) == []
    wrong = _limit_trace(tmp_path, 10, _held(10, False, 10), after, equal_times=equal_times, late_ack=late_ack)
    flagged = subscription_stats_problems(wrong)
    assert len(flagged) == 1 and "not blockedConsumerOnUnackedMsgs" in flagged[0]


def test_after_a_redelivery_the_flag_is_not_judged(tmp_path: Path) -> None:
    # a nack clears the flag whatever the count (a batch may have taken the count past the limit)
    assert (
        subscription_stats_problems(_limit_trace(tmp_path, 10, _held(10, False, 10), _held(0, False, 11), nack=True))
        == []
    )


def test_no_limit_never_blocks(tmp_path: Path) -> None:
    assert subscription_stats_problems(_limit_trace(tmp_path, 0, _held(10, False, 10), _held(0, False, 10))) == []
    flagged = subscription_stats_problems(_limit_trace(tmp_path, 0, _held(10, True, 10), _held(0, False, 10)))
    assert len(flagged) == 1 and "no limit" in flagged[0]
    flagged = consumer_counter_problems(_held(1, True, 1), 0, None)  # whatever the run did
    assert len(flagged) == 1
    assert consumer_counter_problems(_held(1, True, 1), None, None) == []  # the setting unknown: the default limit


@pytest.mark.parametrize("equal_times", [False, True])
def test_msg_out_counter_is_the_receives_when_nothing_was_sent_twice(tmp_path: Path, equal_times: bool) -> None:
    held = _held(10, True, 10)
    assert (
        subscription_stats_problems(_limit_trace(tmp_path, 10, held, _held(0, False, 10), equal_times=equal_times))
        == []
    )
    flagged = subscription_stats_problems(
        _limit_trace(tmp_path, 10, held, _held(0, False, 11), equal_times=equal_times)
    )
    assert len(flagged) == 1 and "msgOutCounter 11" in flagged[0]
    # before the drain the counter is not compared (messages may still be on their way)
    assert subscription_stats_problems(_limit_trace(tmp_path, 10, _held(10, True, 12), _held(0, False, 10))) == []


# -- the deduplication snapshot (``record:dedup-cursor``): the pulsar.dedup cursor against the entries stored -----


def _dedup_trace(
    tmp_path: Path,
    cursor: str | None,
    *,
    interval: int | None = 4,
    after_restart: int = 4,
    dedup: bool = True,
    late_old_receipt: bool = False,
    equal_times: bool = False,
) -> Path:
    """p stores 1:0..1:5, the broker restarts, then ``after_restart`` entries in ledger 2 (2:0, 2:1, ...)."""
    extra = {"broker_conf": {"brokerDeduplicationEntriesInterval": interval}} if interval is not None else {}
    b = TraceBuilder(
        TraceHeader(target="hand-written", subscription=SubscriptionSpec("s"), deduplication=dedup, extra=extra),
        step=0 if equal_times else 10,
    )
    for entry in range(6):
        b.publish("k", f"1:{entry}:-1:-1")
    b.fault("broker_restart")
    b.fault("broker_restarted")
    if late_old_receipt:  # a send the old broker stored, receipted only after the restart: not the new ledger's
        b.publish("k", "1:6:-1:-1")
    b.publish("k", "-1:-1:-1:-1", seq=0)  # a resend answered as a duplicate: not an entry
    for entry in range(after_restart):
        b.publish("k", f"2:{entry}:-1:-1")
    if cursor is None:
        b.add("end", drained=True)
    else:
        b.add("end", drained=True, dedup_cursor=cursor)
    return b.write(tmp_path / "trace.jsonl")


@pytest.mark.parametrize("equal_times", [False, True])
@pytest.mark.parametrize("cursor", ["2:0", "2:1", "2:3"])
def test_a_snapshot_at_or_past_the_floor_passes(tmp_path: Path, cursor: str, equal_times: bool) -> None:
    # four entries since the restart, a snapshot every four: the cursor is at 2:3, or earlier (2:0 at the earliest)
    # when the recovery counted replayed entries first (apache/pulsar#22479)
    assert dedup_snapshot_problems(_dedup_trace(tmp_path, cursor, equal_times=equal_times)) == []


@pytest.mark.parametrize("cursor", ["1:5", "-1:-1", ""])
def test_a_snapshot_behind_the_floor_is_flagged(tmp_path: Path, cursor: str) -> None:
    problems = dedup_snapshot_problems(_dedup_trace(tmp_path, cursor))
    assert len(problems) == 1 and problems[0].startswith("dedup_snapshot_behind: 4 entries were stored")
    assert "must be at or past 2:0" in problems[0]


def test_not_judged_without_what_the_floor_needs(tmp_path: Path) -> None:
    assert dedup_snapshot_problems(_dedup_trace(tmp_path, "")) != []
    assert dedup_snapshot_problems(_dedup_trace(tmp_path, None)) == []  # not recorded (no admin API)
    assert dedup_snapshot_problems(_dedup_trace(tmp_path, "", interval=None)) == []  # the broker's interval unknown
    assert dedup_snapshot_problems(_dedup_trace(tmp_path, "", dedup=False)) == []
    assert dedup_snapshot_problems(_dedup_trace(tmp_path, "", after_restart=3)) == []  # fewer than one interval


def test_a_receipt_of_the_old_ledger_after_the_restart_is_not_counted(tmp_path: Path) -> None:
    # 1:6 was stored before the restart (its receipt came late): counting it would put the floor at 2:0 with only
    # three new entries, where no snapshot is owed yet
    assert dedup_snapshot_problems(_dedup_trace(tmp_path, "", after_restart=3, late_old_receipt=True)) == []


def _timed_trace(tmp_path: Path, cursor: str, quiet_s: float, *, every: int = 1, broker_wide: bool = True) -> Path:
    """Time-based snapshots (interval 1 s, checked every ``every`` s), three entries, the end ``quiet_s`` later."""
    conf: dict[str, Any] = {
        "brokerDeduplicationSnapshotIntervalSeconds": 1,
        "brokerDeduplicationSnapshotFrequencyInSeconds": every,
    }
    if broker_wide:
        conf["brokerDeduplicationEnabled"] = True
    b = TraceBuilder(
        TraceHeader(
            target="hand-written", subscription=SubscriptionSpec("s"), deduplication=True, extra={"broker_conf": conf}
        ),
        step=0,
    )
    for entry in range(3):
        b.publish("k", f"0:{entry}:-1:-1")
    b.t += int(quiet_s * 1e9)
    b.add("end", drained=True, dedup_cursor=cursor)
    return b.write(tmp_path / "trace.jsonl")


def test_a_time_based_snapshot_is_owed_after_a_quiet_interval_and_check(tmp_path: Path) -> None:
    assert dedup_snapshot_problems(_timed_trace(tmp_path, "0:2", 3.0)) == []
    problems = dedup_snapshot_problems(_timed_trace(tmp_path, "0:1", 3.0))
    assert len(problems) == 1 and "must be at or past 0:2" in problems[0] and "time-based" in problems[0]
    assert dedup_snapshot_problems(_timed_trace(tmp_path, "-1:-1", 2.0)) != []  # I + F = 2 s: owed
    assert dedup_snapshot_problems(_timed_trace(tmp_path, "-1:-1", 1.5)) == []  # the check may not have run yet
    assert dedup_snapshot_problems(_timed_trace(tmp_path, "-1:-1", 30.0, every=0)) == []  # the check is off
    # deduplication on for the topic only: before apache/pulsar#22479 the broker never started the check
    assert dedup_snapshot_problems(_timed_trace(tmp_path, "-1:-1", 30.0, broker_wide=False)) == []


@pytest.mark.parametrize("nack", [False, True])
def test_one_message_per_entry_averages_one(tmp_path: Path, nack: bool) -> None:
    right = _limit_trace(tmp_path, 10, _held(10, True, 10), _held(0, False, 10), nack=nack)
    assert subscription_stats_problems(right) == []
    out = 11 if nack else 10  # the nacked message went out again
    for wrong in (_held(0, False, out, average=0), _held(0, False, out, average=2)):
        flagged = subscription_stats_problems(_limit_trace(tmp_path, 10, _held(10, True, 10), wrong, nack=nack))
        assert len(flagged) == 1 and "avgMessagesPerEntry" in flagged[0]
    # before the drain it is not judged: the trace does not show which receives came before that read
    early = _limit_trace(tmp_path, 10, _held(10, True, 10, average=0), _held(0, False, out), nack=nack)
    assert subscription_stats_problems(early) == []
    # entries of two messages: the average is not judged
    batched = _limit_trace(tmp_path, 10, _held(10, True, 10, average=2), _held(0, False, 10, average=2), batch=True)
    assert subscription_stats_problems(batched) == []


@pytest.mark.parametrize("equal_times", [False, True])
def test_available_permits_are_what_the_client_flow_control_left(tmp_path: Path, equal_times: bool) -> None:
    def after(permits: int) -> dict[str, Any]:
        figures = _held(0, False, 10)
        figures["consumers"][0]["availablePermits"] = permits
        return figures

    held = _held(10, True, 10)
    for queue, left in ((1000, 990), (8, 6), (4, 4), (1, 1)):  # 10 taken: a Flow back every max(q / 2, 1)
        trace = _limit_trace(tmp_path, 10, held, after(left), queue=queue, equal_times=equal_times)
        assert subscription_stats_problems(trace) == [], queue
        flagged = subscription_stats_problems(_limit_trace(tmp_path, 10, held, after(left + 1), queue=queue))
        assert len(flagged) == 1 and "availablePermits" in flagged[0]
    # not judged: a zero queue (permits asked one receive at a time), a redelivery, the document before the drain
    assert subscription_stats_problems(_limit_trace(tmp_path, 10, held, after(5), queue=0)) == []
    assert subscription_stats_problems(_limit_trace(tmp_path, 10, held, after(5), queue=1000, nack=True)) == []
    early = _held(10, True, 10)
    early["consumers"][0]["availablePermits"] = 7
    assert subscription_stats_problems(_limit_trace(tmp_path, 10, early, after(990), queue=1000)) == []
