"""``received_beyond_lookahead`` on the checker, both ways (``conformance/checks/lookahead.py``).

The trace of ``dispatch/lookahead-window``: c1 (receiver queue 1) holds k0 back, c2 acknowledges k11, Pulsar 4.0
with ``keySharedLookAheadMsgInReplayThresholdPerConsumer`` = 1 (a limit of 2 entries for two consumers). A broker
that reads past the limit hands c2 every k11 message while k0's wait below them (planted: INVALID); one that stops
at the limit gives c2 the first k11 messages and the rest after c1 resumes (VALID). Both with equal timestamps,
with late acks (after the acker's close), with the same trace's Parquet form, and on the eras the rule does not
judge (3.x, the classic dispatcher) or without the setting.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from lookahead_traces import BEYOND, PUBLISHED, WITHIN, _header, _trace

from conformance.checks import check_trace
from conformance.checks.lookahead import effective_limit


def _write(tmp_path: Path, header: dict[str, Any], events: list[dict[str, Any]], name: str = "t.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(json.dumps(x) for x in [header, *events]) + "\n")
    return path


def _kinds(path: Path) -> list[str]:
    return [str(v.kind) for v in check_trace(path).violations]


@pytest.mark.parametrize("equal_t", [False, True])
@pytest.mark.parametrize("late_acks", [False, True])
def test_reading_past_the_limit_is_reported_and_stopping_at_it_is_not(
    tmp_path: Path, equal_t: bool, late_acks: bool
) -> None:
    beyond = _write(tmp_path, _header(), _trace(BEYOND, equal_t=equal_t, late_acks=late_acks), "beyond.jsonl")
    within = _write(tmp_path, _header(), _trace(WITHIN, equal_t=equal_t, late_acks=late_acks), "within.jsonl")
    assert _kinds(beyond) == ["received_beyond_lookahead"]
    assert _kinds(within) == []
    (violation,) = check_trace(beyond).violations
    assert violation.events == (2 + PUBLISHED + 2 * 14,)  # c2's receive of 0:29, the 15th receive (each acked)
    assert violation.facts["count"] == 15 and violation.facts["limit"] == 2 and violation.facts["allowance"] == 6
    assert "0:0 to 0:28" in violation.explanation


@pytest.mark.parametrize(
    "header",
    [
        _header(pulsar_version="3.3"),  # the classic dispatcher of 3.x: no look-ahead limit
        _header(implementation="classic"),  # 4.x with the classic implementation
        _header(broker_conf={"maxUnackedMessagesPerConsumer": 5}),  # no look-ahead threshold named: not judged
        _header(delayed_delivery=True),  # a delayed entry waits in the tracker, not the replay queue
    ],
)
def test_not_judged_without_a_pip379_look_ahead(tmp_path: Path, header: dict[str, Any]) -> None:
    assert _kinds(_write(tmp_path, header, _trace(BEYOND))) == []


def test_a_bigger_receiver_queue_or_a_fault_excuses(tmp_path: Path) -> None:
    """What may sit sent and unread in a queue is not counted: queues of 10 cover what the tight ones could not;
    a fault before the receives excuses every entry stored before it."""
    events = _trace(BEYOND)
    for e in events:
        if e["op"] == "open":
            e["receiver_queue"] = 10
    assert _kinds(_write(tmp_path, _header(), events, "big.jsonl")) == []
    events = _trace(BEYOND)
    first_receive = next(n for n, e in enumerate(events) if e["op"] == "receive")
    events.insert(first_receive, {"op": "fault", "fault": "broker_restart", "consumers": [], "t": 0})
    for n, e in enumerate(events):
        e["i"] = n
        e["t"] = n * 1000
    assert _kinds(_write(tmp_path, _header(), events, "fault.jsonl")) == []


def test_the_parquet_form_is_judged_alike(tmp_path: Path) -> None:
    from conformance.trace import convert_to_parquet

    beyond = _write(tmp_path, _header(), _trace(BEYOND), "beyond.jsonl")
    parquet = tmp_path / "beyond.parquet"
    convert_to_parquet(beyond, parquet)
    assert _kinds(parquet) == ["received_beyond_lookahead"]


@pytest.mark.parametrize(
    ("conf", "consumers", "limit"),
    [
        ({"keySharedLookAheadMsgInReplayThresholdPerConsumer": 1}, 2, 2),  # the per-subscription default is above
        ({"keySharedLookAheadMsgInReplayThresholdPerConsumer": 10}, 3, 30),
        (
            {
                "keySharedLookAheadMsgInReplayThresholdPerConsumer": 10,
                "keySharedLookAheadMsgInReplayThresholdPerSubscription": 25,
            },
            3,
            25,
        ),
        (
            {
                "keySharedLookAheadMsgInReplayThresholdPerConsumer": 0,
                "keySharedLookAheadMsgInReplayThresholdPerSubscription": 5,
            },
            3,
            5,
        ),
        (
            {
                "keySharedLookAheadMsgInReplayThresholdPerConsumer": 0,
                "keySharedLookAheadMsgInReplayThresholdPerSubscription": 0,
                "maxUnackedMessagesPerConsumer": 1,
            },
            2,
            2,
        ),
        (
            {
                "keySharedLookAheadMsgInReplayThresholdPerConsumer": 0,
                "keySharedLookAheadMsgInReplayThresholdPerSubscription": 0,
                "maxUnackedMessagesPerConsumer": 0,
                "maxUnackedMessagesPerSubscription": 0,
            },
            2,
            2**31 - 1,
        ),
    ],
)
def test_the_effective_limit_is_pulsars(conf: dict[str, int], consumers: int, limit: int) -> None:
    full = {
        "keySharedLookAheadMsgInReplayThresholdPerConsumer": 2000,
        "keySharedLookAheadMsgInReplayThresholdPerSubscription": 20000,
        "maxUnackedMessagesPerConsumer": 50000,
        "maxUnackedMessagesPerSubscription": 200000,
        **conf,
    }
    assert effective_limit(full, consumers) == limit


def test_the_bucketed_engine_checks_such_a_trace_whole(tmp_path: Path) -> None:
    """The count spans keys: split by key into buckets (the Spark engine's layout), a part that judged a receive
    under a look-ahead threshold makes the trace be checked again whole, with the same verdict."""
    from conformance.checks.buckets import check_bucketed
    from conformance.trace.buckets import convert_to_buckets

    for name, order, kinds in (("beyond", BEYOND, ["received_beyond_lookahead"]), ("within", WITHIN, [])):
        path = _write(tmp_path, _header(), _trace(order), f"{name}.jsonl")
        layout = convert_to_buckets(path, tmp_path / f"{name}-buckets", 4)
        assert [str(v.kind) for v in check_bucketed(layout).violations] == kinds
