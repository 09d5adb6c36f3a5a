"""The generator draws batches sent with their highest sequence id (``GeneratorOptions.highest_ids``, the
``batch_highest`` move): a program with one is written, loaded back and run on the model, where the batch under an
id at or below the pushed one is answered ``-1:-1`` whole (valid, its new id never stored); a model whose
deduplication ignores the highest id stores it again (``duplicate_publish``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from generated_moves import dedup_program

from conformance.generated.program import GeneratorOptions, Move, program_from_moves
from conformance.scenarios import Publish
from pytest_keyshared.driver import run_scenario
from pytest_keyshared.targets import open_target

OPTIONS = GeneratorOptions(highest_ids=True)
KINDS = OPTIONS.move_kinds()
MOVES = [
    Move(KINDS.index("publish"), 0, 2),
    Move(KINDS.index("batch_highest"), 0, 2),
    Move(KINDS.index("publish"), 0, 1),
]


def _program(tmp_path: Path):  # type: ignore[no-untyped-def]
    return dedup_program(MOVES, OPTIONS, tmp_path)


def test_the_move_sends_a_batch_then_one_under_its_highest_id(tmp_path: Path) -> None:
    batches = [
        (p.producer, p.sequence_ids, p.highest_sequence_id)
        for p in _program(tmp_path).steps
        if isinstance(p, Publish) and p.highest_sequence_id is not None
    ]
    assert batches == [("pb", (1, 2, 3), 3), ("pb", (3, 4), 4)]
    assert "batch_highest" not in GeneratorOptions().move_kinds()  # programs drawn without the option stay the same
    off = program_from_moves(MOVES, name="generated", options=OPTIONS)  # deduplication off: no batch
    assert not any(isinstance(p, Publish) and p.highest_sequence_id is not None for p in off.steps)


@pytest.mark.parametrize("mutant", [None, "dedup-ignores-highest-id"])
def test_the_batch_under_the_pushed_id_is_a_duplicate_on_the_model(
    mutant: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    program = _program(tmp_path)
    if mutant is not None:
        from reference_model.dedup.deduplication import MessageDeduplication

        monkeypatch.setattr(MessageDeduplication, "is_duplicate", MessageDeduplication.is_duplicate)
        monkeypatch.setattr(MessageDeduplication, "on_persisted", MessageDeduplication.on_persisted)
        sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
        try:
            import mutants

            mutants.apply(mutant)
        finally:
            sys.path.pop(0)
    with open_target("model", artifacts_dir=tmp_path / "target") as model:
        result = run_scenario(model, program, seed=7, out_dir=tmp_path / "run", live_check=False)
    kinds = sorted({str(v.kind) for v in result.verdict.violations})
    if mutant is None:
        assert result.valid, kinds
        events = [json.loads(line) for line in result.trace_path.read_text().splitlines()[1:]]
        second = [e for e in events if e.get("op") == "publish" and e.get("send_seq") == 3]
        assert [(e["seq"], e["msg_id"].split(":")[:2]) for e in second] == [(3, ["-1", "-1"]), (4, ["-1", "-1"])]
    else:
        assert "duplicate_publish" in kinds
