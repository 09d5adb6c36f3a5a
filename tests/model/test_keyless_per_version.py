"""Keyless messages: the driver records the sticky key the claimed release resolves, so the model's dispatcher
and its selector agree (3.x hashes the literal NONE_KEY; 4.0 falls back to producerName-sequenceId, #23219)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.cases._support import area_scenarios
from pytest_keyshared.driver import run_scenario
from pytest_keyshared.targets import open_target


@pytest.mark.parametrize(
    ("target", "keyless_key"),
    [("model:3.0", "NONE_KEY"), ("model:3.3.1", "NONE_KEY"), ("model:3.0:classic", "NONE_KEY"), ("model:4.0", None)],
)
def test_keyless_fallback_agrees_with_the_selector(target: str, keyless_key: str | None, tmp_path: Path) -> None:
    scenario = next(s for s in area_scenarios("assignment") if s.name == "keyless-fallback")
    with open_target(target, artifacts_dir=tmp_path / "target") as opened:
        result = run_scenario(opened, scenario, seed=7, out_dir=tmp_path, live_check=False)
    assert result.verdict is not None and result.verdict.valid, result.verdict
    events = [json.loads(line) for line in result.trace_path.read_text(encoding="utf-8").splitlines()[1:]]
    keys = {e["key"] for e in events if e["op"] == "publish"}
    receivers = {e["consumer"] for e in events if e["op"] == "receive"}
    if keyless_key is None:  # 4.0: one key per message, spread over the consumers
        assert keys == {f"p1-{i}" for i in range(1, 151)}
        assert len(receivers) == 3
    else:  # 3.x: every keyless message has the same sticky key, so one consumer gets them all
        assert keys == {keyless_key}
        assert len(receivers) == 1
