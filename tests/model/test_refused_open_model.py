"""refused_open on the model's own traces: its refusals stay valid, and a model that refuses a changed policy after
every consumer left (the mutant ``policy-change-refused-after-all-leave``) is reported on a generated program.

The driver records what the rule needs: ``t0`` on every open, a ``closed`` event after each close returned, and
the model sends a subscribe strictly after a same-instant leave (``ModelSession.before_subscribe``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conformance.generated.program import MANY_CONSUMERS, GeneratorOptions, Move, program_from_moves
from conformance.scenarios import load_scenario
from pytest_keyshared.driver import run_scenario
from pytest_keyshared.targets import open_target
from reference_model.broker.errors import ConsumerBusy
from reference_model.broker.subscription import ServerSubscription

ROOT = Path(__file__).resolve().parents[2]
REFUSING = (
    "conformance/cases/scenarios/catalogue/hash-range-conflict.toml",
    "conformance/cases/scenarios/catalogue/hash-range-conflict-after-close.toml",
    "conformance/cases/scenarios/pinned/sticky-overlap-refused.toml",
)
OPTIONS = GeneratorOptions()
KINDS = OPTIONS.move_kinds()


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    with open_target("model", artifacts_dir=tmp_path_factory.mktemp("target")) as target:
        yield target


def _events(path: Path) -> list[dict[str, Any]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [e for e in map(json.loads, lines) if "op" in e]


def _kinds(result: Any) -> set[str]:
    return {str(v.kind) for v in result.verdict.all_violations()}


@pytest.mark.parametrize("case", REFUSING)
def test_the_model_s_own_refusals_stay_valid(case: str, model: object, tmp_path: Path) -> None:
    result = run_scenario(model, load_scenario(ROOT / case), seed=0, out_dir=tmp_path, live_check=False)  # type: ignore[arg-type]
    refused = [e for e in _events(result.trace_path) if e["op"] == "open" and e.get("result") == "fail"]
    assert refused and all("ConsumerAssignError" in e["error"] and "t0" in e for e in refused)
    assert "refused_open" not in _kinds(result)


def _changed_flag_program() -> Any:
    """The generator's program where every consumer leaves and the next asks for the other flag."""
    moves = [
        Move(KINDS.index("publish"), 0, 4),
        Move(KINDS.index("close"), 0, 1),
        Move(KINDS.index("open"), MANY_CONSUMERS.index("c2"), 2),
        Move(KINDS.index("publish"), 0, 8),
    ]
    from conformance.generated.program import SHAPE_DIMENSIONS

    shape = tuple(1 if d == "out_of_order" else 0 for d in SHAPE_DIMENSIONS)
    return program_from_moves(moves, name="generated", options=OPTIONS, shape=shape)


def test_a_changed_flag_after_every_consumer_left_is_accepted_and_valid(model: object, tmp_path: Path) -> None:
    result = run_scenario(model, _changed_flag_program(), seed=7, out_dir=tmp_path, live_check=False)  # type: ignore[arg-type]
    events = _events(result.trace_path)
    closed = next(e for e in events if e["op"] == "closed")
    reopened = next(e for e in events if e["op"] == "open" and e["i"] > closed["i"])
    assert closed["t"] < reopened["t0"]  # strictly: the rule judges it
    assert result.valid


def test_a_model_that_refuses_it_is_reported_refused_open(
    model: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = ServerSubscription.add_consumer

    def add_consumer(self: Any, consumer: Any, policy: Any) -> None:  # the mutant, restored after the test
        current = self.dispatcher
        if current is not None and not current.consumers:
            old = current.policy
            if (old.mode, old.allow_out_of_order_delivery) != (policy.mode, policy.allow_out_of_order_delivery):
                raise ConsumerBusy(f"Subscription is of different type: subscription {self.name!r}")
        original(self, consumer, policy)

    monkeypatch.setattr(ServerSubscription, "add_consumer", add_consumer)
    result = run_scenario(model, _changed_flag_program(), seed=7, out_dir=tmp_path, live_check=False)  # type: ignore[arg-type]
    assert "refused_open" in _kinds(result) and not result.valid
