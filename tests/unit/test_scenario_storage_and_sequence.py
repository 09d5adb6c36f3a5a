"""The ``storage_down`` / ``storage_up`` steps and ``publish`` with ``sequence = "auto"``: parsing, the capability
a storage step needs, round trips, and the rules that keep the driver's ids equal to the client's."""

from __future__ import annotations

import pytest

from conformance.scenarios import (
    InvalidScenario,
    Publish,
    StorageDown,
    StorageUp,
    dumps_scenario,
    loads_scenario,
    parse_scenario,
)


def _scenario(*steps: dict[str, object]) -> dict[str, object]:
    return {"name": "s", "steps": [{"do": "open", "consumer": "c1"}, *steps]}


def test_storage_steps_parse_need_the_capability_and_round_trip() -> None:
    s = parse_scenario(_scenario({"do": "storage_down"}, {"do": "publish", "count": 1}, {"do": "storage_up"}))
    assert s.steps[1] == StorageDown(fail_after_ms=200)
    assert s.steps[3] == StorageUp()
    assert s.required_capabilities() == {"storage_failure": "step 2 (storage_down)"}
    for fmt in ("toml", "json"):
        assert loads_scenario(dumps_scenario(s, fmt), fmt) == s


@pytest.mark.parametrize("value", [-1, "1s", True])
def test_a_bad_fail_after_ms_is_one_line_naming_it(value: object) -> None:
    with pytest.raises(InvalidScenario, match=r"step 2 \(storage_down\) fail_after_ms"):
        parse_scenario(_scenario({"do": "storage_down", "fail_after_ms": value}))


AUTO_AFTER_RECONNECT = (
    {"do": "publish", "count": 3},
    {"do": "resend", "producer": "p1", "from_seq": 3, "to_seq": 3},
    {"do": "publish", "count": 2, "sequence": "auto"},
)


def test_auto_sequence_after_a_reconnect_parses_and_round_trips() -> None:
    s = parse_scenario(_scenario(*AUTO_AFTER_RECONNECT))
    assert isinstance(s.steps[3], Publish) and s.steps[3].sequence == "auto"
    assert loads_scenario(dumps_scenario(s, "toml"), "toml") == s


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        (({"do": "publish", "count": 2, "sequence": "auto"},), "not"),
        (
            (
                {"do": "publish", "count": 2},
                {"do": "resend", "producer": "p1", "from_seq": 1, "to_seq": 1, "reconnect": False},
                {"do": "publish", "count": 2, "sequence": "auto"},
            ),
            "created again",
        ),
        (
            (*AUTO_AFTER_RECONNECT[:2], {"do": "publish", "count": 1}, AUTO_AFTER_RECONNECT[2]),
            "created again",
        ),
        (
            (*AUTO_AFTER_RECONNECT, {"do": "resend", "producer": "p1", "from_seq": 3, "to_seq": 4}),
            "cannot be resent",
        ),
        (({"do": "publish", "count": 2, "sequence": "client"},), "sequence"),
    ],
)
def test_auto_sequence_is_refused_where_the_ids_could_differ(
    steps: tuple[dict[str, object], ...], message: str
) -> None:
    with pytest.raises(InvalidScenario, match=message):
        parse_scenario(_scenario(*steps))
