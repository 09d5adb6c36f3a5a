"""The ack timeout end to end on the model: the scenario setting, the agent's ``alternate`` behaviour and the
releases the driver records for the client's tracker (a ``nack`` with ``cause = "ack_timeout"``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conformance.scenarios import Behaviour, InvalidScenario, dump_scenario, load_scenario, parse_scenario
from pytest_keyshared.driver.agent import ConsumerAgent
from pytest_keyshared.driver.handles import Delivery
from pytest_keyshared.driver.run import run_scenario
from pytest_keyshared.targets import open_target

CASES = Path(__file__).resolve().parents[2] / "conformance" / "cases" / "scenarios" / "catalogue"
MS = 1_000_000


def _delivery(seq: int, redelivery_count: int = 0) -> Delivery:
    return Delivery(
        key="k", msg_id=f"0:{seq}:-1:-1", producer="p1", seq=seq, uid=f"p1:{seq}",
        redelivery_count=redelivery_count, token=None,
    )  # fmt: skip


def test_alternate_acknowledges_every_other_first_receipt_and_every_repeat() -> None:
    agent = ConsumerAgent("c1", Behaviour("alternate"))
    ops = [[a.op for a in agent.on_receive(_delivery(i), 0)] for i in range(4)]
    assert ops == [["ack"], [], ["ack"], []]
    assert [d.seq for d in agent.held] == [1, 3]
    assert [a.op for a in agent.on_receive(_delivery(1, 1), 0)] == ["ack"]  # seen before: acknowledged


def test_expired_releases_held_messages_a_margin_before_the_clients_timeout() -> None:
    agent = ConsumerAgent("c1", Behaviour("hold"), ack_timeout_ms=10_000)
    agent.on_receive(_delivery(0), 0)
    agent.on_receive(_delivery(1), 500 * MS)
    agent.take_held("ack", 1)  # message 0 acknowledged: never released
    assert agent.expired(8_999 * MS) == []
    assert [d.seq for d in agent.expired(9_500 * MS)] == [1]  # 500 ms + 10 s - 1 s margin
    assert agent.held == () and agent.expired(60_000 * MS) == []


def test_ack_timeout_round_trips_and_a_short_one_is_refused(tmp_path: Path) -> None:
    scenario = load_scenario(CASES / "ack-timeout-sticky-ranges.toml")
    dump_scenario(scenario, tmp_path / "again.toml")
    assert load_scenario(tmp_path / "again.toml") == scenario
    with pytest.raises(InvalidScenario, match="below the client's minimum ack timeout"):
        parse_scenario({"name": "x", "steps": [{"do": "open", "consumer": "c1", "ack_timeout_ms": 3000}]})


def _events(path: Path) -> list[dict[str, Any]]:
    return [e for e in map(json.loads, path.read_text().splitlines()) if "op" in e]


def test_the_case_on_the_model_releases_before_each_redelivery_and_is_valid(tmp_path: Path) -> None:
    scenario = load_scenario(CASES / "ack-timeout-ordering-key-sticky.toml")
    with open_target("model", artifacts_dir=tmp_path / "target") as target:
        result = run_scenario(target, scenario, seed=0, out_dir=tmp_path / "run", live_check=False)
    assert result.verdict.valid is True
    events = _events(result.trace_path)
    released = {e["uid"]: e["i"] for e in events if e["op"] == "nack" and e.get("cause") == "ack_timeout"}
    again = [e for e in events if e["op"] == "receive" and e["redelivery_count"] > 0]
    assert len(released) == 100 and len(again) == 100
    assert all(released[e["uid"]] < e["i"] for e in again)
    opens = [e for e in events if e["op"] == "open"]
    assert all(e.get("ack_timeout_ms") == 10_000 for e in opens)
