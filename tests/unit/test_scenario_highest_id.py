"""``publish`` with ``highest_sequence_id`` (and ``send_sequence_id``): a batch sent with its ids by the harness's
protocol producer.  Parsing, the capability it needs, round trips, and the rules that keep it sendable."""

from __future__ import annotations

import pytest

from conformance.scenarios import InvalidScenario, Publish, dumps_scenario, loads_scenario, parse_scenario


def _scenario(*steps: dict[str, object], settings: dict[str, object] | None = None) -> dict[str, object]:
    out: dict[str, object] = {"name": "s", "steps": [{"do": "open", "consumer": "c1"}, *steps]}
    if settings:
        out["settings"] = settings
    return out


BATCHES = (
    {"do": "publish", "count": 5, "sequence_ids": [1, 2, 3, 4, 5], "highest_sequence_id": 5},
    {"do": "publish", "count": 5, "sequence_ids": [4, 5, 6, 7, 8], "highest_sequence_id": 8},
    {"do": "publish", "count": 2, "sequence_ids": [10, 9], "highest_sequence_id": 10, "send_sequence_id": 10},
    {"do": "resend", "producer": "p1", "from_seq": 6, "to_seq": 6, "reconnect": False},
    {"do": "publish", "count": 1, "producer": "p2", "batching": "key_based"},
)


def test_batches_with_ids_parse_need_the_capability_and_round_trip() -> None:
    s = parse_scenario(_scenario(*BATCHES))
    first, second, third = s.steps[1], s.steps[2], s.steps[3]
    assert isinstance(first, Publish) and first.highest_sequence_id == 5 and first.send_sequence_id is None
    assert isinstance(second, Publish) and second.sequence_ids == (4, 5, 6, 7, 8)  # earlier ids again: allowed
    assert isinstance(third, Publish) and third.send_sequence_id == 10
    assert s.raw_producers() == frozenset({"p1"})  # p2 stays pulsar-client's, batching and all
    assert s.required_capabilities() == {"raw_send": "step 2 (publish with highest_sequence_id)"}
    for fmt in ("toml", "json"):
        assert loads_scenario(dumps_scenario(s, fmt), fmt) == s


@pytest.mark.parametrize(
    ("step", "message"),
    [
        ({"send_sequence_id": 3}, "send_sequence_id applies only with highest_sequence_id"),
        ({"highest_sequence_id": 0}, "highest_sequence_id"),
        ({"highest_sequence_id": "5"}, "highest_sequence_id"),
        ({"highest_sequence_id": 2, "sequence_ids": [3]}, r"below the send's sequence id 3.*MetadataError"),
        ({"highest_sequence_id": 4, "send_sequence_id": 5}, r"below send_sequence_id 5.*MetadataError"),
        ({"highest_sequence_id": 5, "batching": "default"}, "drop batching"),
        ({"highest_sequence_id": 5, "sequence": "auto"}, "drop sequence"),
        ({"highest_sequence_id": 5, "deliver_after_ms": 10}, "drop deliver_after_ms"),
    ],
)
def test_a_bad_batch_with_ids_is_one_line_naming_it(step: dict[str, object], message: str) -> None:
    publish = {"do": "publish", "count": 1, **step}
    with pytest.raises(InvalidScenario, match=message) as caught:
        parse_scenario(_scenario(publish))
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("other", "drop"),
    [({"batching": "default"}, "batching"), ({"deliver_after_ms": 5}, "deliver_after_ms")],
)
def test_a_raw_producers_other_sends_are_unbatched_and_undelayed(other: dict[str, object], drop: str) -> None:
    steps = (BATCHES[0], {"do": "publish", "count": 2, **other})
    with pytest.raises(InvalidScenario, match=f"step 3 \\(publish\\): producer 'p1' .* drop {drop}"):
        parse_scenario(_scenario(*steps))


def test_a_failover_scenario_refuses_it() -> None:
    data = _scenario(BATCHES[0], settings={"clusters": ["r1", "r2"]})
    with pytest.raises(InvalidScenario, match="failover workload"):
        parse_scenario(data)
