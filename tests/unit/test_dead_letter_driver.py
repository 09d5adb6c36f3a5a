"""The driver's side of dead letters: the original's id as both clients write it, the real client's subscribe
options, and a run on the model whose trace records each dead letter once and judges clean."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from pytest_keyshared.driver.dead_letters import origin_msg_id
from pytest_keyshared.driver.handles import ConsumerSpec
from pytest_keyshared.driver.pulsar_client import consumer_options


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("(1,0,-1,-1)", "1:0:-1:-1"),  # the C++ client (pulsar-client 3.13.0 against pulsar-lite, 2026-11-29)
        ("(12,7,3,2)", "12:7:3:2"),
        ("12:7:3", "12:7:3:-1"),  # the Java client
        ("nonsense", None),
        (None, None),
    ],
)
def test_origin_message_id_in_both_clients_spellings(text: str | None, want: str | None) -> None:
    assert origin_msg_id(text) == want


def test_the_real_client_subscribes_with_the_policy() -> None:
    spec = ConsumerSpec("t", "s", "c1", "AUTO_SPLIT", False, (), 10, 100, dead_letter=(2, "t-s-DLQ"))
    assert "dead_letter_policy" in consumer_options(spec)
    assert "dead_letter_policy" not in consumer_options(ConsumerSpec("t", "s", "c1", "AUTO_SPLIT", False, (), 10, 100))


def test_a_model_run_records_each_dead_letter_once_and_judges_clean(tmp_path: Path) -> None:
    import json

    from conformance.scenarios.loader import load_scenario
    from pytest_keyshared.driver.run import run_scenario
    from pytest_keyshared.targets import open_target

    scenario = load_scenario(
        Path(__file__).parents[2] / "conformance/cases/scenarios/catalogue/dead-letter-key-shared.toml"
    )
    with open_target("model", artifacts_dir=tmp_path / "target") as target:
        result = run_scenario(target, scenario, seed=0, out_dir=tmp_path / "run")
    events = [json.loads(line) for line in result.trace_path.read_text().splitlines()[1:]]
    dead = Counter(e["msg_id"] for e in events if e["op"] == "dead_letter")
    assert dead and set(dead.values()) == {1}
    assert result.verdict.valid
