"""``[settings] unnamed_producers``: producers the driver creates without a ``producer_name`` (the broker names
them).  Parsing, round trips, and the rules that keep each one a single producer to the broker."""

from __future__ import annotations

import pytest

from conformance.scenarios import InvalidScenario, dumps_scenario, loads_scenario, parse_scenario


def _scenario(*steps: dict[str, object], **settings: object) -> dict[str, object]:
    return {"name": "s", "settings": settings, "steps": [{"do": "open", "consumer": "c1"}, *steps]}


TWO_AT_ONCE = (
    {"do": "open_producer", "producer": "p1"},
    {"do": "open_producer", "producer": "p2"},
    {"do": "publish", "count": 3, "producer": "p2"},
    {"do": "restart_broker"},
    {"do": "resend", "producer": "p2", "from_seq": 1, "to_seq": 3, "reconnect": False},
)


def test_unnamed_producers_parse_and_round_trip() -> None:
    s = parse_scenario(_scenario(*TWO_AT_ONCE, unnamed_producers=["p1", "p2"]))
    assert s.settings.unnamed_producers == ("p1", "p2")
    for fmt in ("toml", "json"):
        assert loads_scenario(dumps_scenario(s, fmt), fmt) == s


@pytest.mark.parametrize(
    ("steps", "settings", "message"),
    [
        ((), {"unnamed_producers": ["p1", "p1"]}, "name each producer once"),
        ((), {"unnamed_producers": "p1"}, "unnamed_producers"),
        (({"do": "close_producer", "producer": "p1"},), {}, "created once per run"),
        (({"do": "publish", "count": 1}, {"do": "resend", "producer": "p1", "from_seq": 1, "to_seq": 1}), {}, "once"),
        (({"do": "publish", "count": 1}, {"do": "publish", "count": 1, "batching": "default"}), {}, "one batching"),
        (({"do": "open_producer", "producer": "p1"}, {"do": "publish", "count": 1, "batching": "default"}), {}, "one"),
        (({"do": "publish", "count": 1, "sequence_ids": [1], "highest_sequence_id": 1},), {}, "names itself"),
        (({"do": "publish", "count": 1},), {"partitions": 2}, "partitioned topic"),
    ],
    ids=["twice", "not-a-list", "closed", "reconnected", "rebatched", "opened-then-rebatched", "raw", "partitioned"],
)
def test_an_unnamed_producer_is_created_once(
    steps: tuple[dict[str, object], ...], settings: dict[str, object], message: str
) -> None:
    with pytest.raises(InvalidScenario, match=message):
        parse_scenario(_scenario(*steps, **{"unnamed_producers": ["p1"], **settings}))


def test_a_named_producer_may_still_be_closed_and_reopened() -> None:
    steps = ({"do": "publish", "count": 1}, {"do": "close_producer", "producer": "p1"}, {"do": "publish", "count": 1})
    assert parse_scenario(_scenario(*steps, unnamed_producers=["p2"])).settings.unnamed_producers == ("p2",)


def test_a_failover_names_its_own_producers() -> None:
    data = {
        "name": "f",
        "settings": {"clusters": ["r1", "r2"], "unnamed_producers": ["p1"]},
        "steps": [{"do": "publish", "count": 1}, {"do": "failover", "to": "r2"}],
    }
    with pytest.raises(InvalidScenario, match="failover workload names its producers"):
        parse_scenario(data)
