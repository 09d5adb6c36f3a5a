"""The ``deduplication`` step (switched at run time) and ``open_producer`` / ``close_producer``: parsing, the
capability the switch needs, round trips, one-line errors, and a dedup switch fault touching no consumer."""

from __future__ import annotations

import pytest

from conformance.scenarios import (
    CloseProducer,
    Deduplication,
    InvalidScenario,
    OpenProducer,
    dumps_scenario,
    loads_scenario,
    parse_scenario,
)


def _scenario(*steps: dict[str, object]) -> dict[str, object]:
    return {"name": "s", "steps": [{"do": "open", "consumer": "c1"}, *steps]}


def test_the_steps_parse_need_the_switch_and_round_trip() -> None:
    s = parse_scenario(
        _scenario(
            {"do": "open_producer", "producer": "p1"},
            {"do": "close_producer", "producer": "p1"},
            {"do": "deduplication", "enabled": False},
            {"do": "publish", "count": 1},
            {"do": "deduplication", "enabled": True},
        )
    )
    assert s.steps[1:4] == (OpenProducer("p1"), CloseProducer("p1"), Deduplication(enabled=False))
    assert s.required_capabilities() == {"dedup_switch": "step 4 (deduplication)"}
    for fmt in ("toml", "json"):
        assert loads_scenario(dumps_scenario(s, fmt), fmt) == s


@pytest.mark.parametrize(
    ("step", "field"),
    [
        ({"do": "deduplication"}, "enabled"),
        ({"do": "deduplication", "enabled": "yes"}, "enabled"),
        ({"do": "open_producer"}, "producer"),
        ({"do": "close_producer", "producer": ""}, "producer"),
    ],
)
def test_a_bad_step_is_one_line_naming_the_field(step: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidScenario, match=field) as caught:
        parse_scenario(_scenario(step))
    assert "\n" not in str(caught.value)
