"""The generator draws gapped sequence ids (``GeneratorOptions.gaps``, the ``gap`` move): a program with one is
written, loaded back and run on the model, where the gapped id is answered ``-1:-1`` and never stored (valid); a
model that stores it fails ``stored_below_highest``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from generated_moves import dedup_program

from conformance.generated.program import (
    GeneratorOptions,
    Move,
    program_from_moves,
)
from conformance.scenarios import Publish
from pytest_keyshared.driver import run_scenario
from pytest_keyshared.targets import open_target

OPTIONS = GeneratorOptions(gaps=True)
KINDS = OPTIONS.move_kinds()
MOVES = [Move(KINDS.index("publish"), 0, 3), Move(KINDS.index("gap"), 0, 2), Move(KINDS.index("publish"), 0, 2)]


def _program(tmp_path: Path):  # type: ignore[no-untyped-def]
    return dedup_program(MOVES, OPTIONS, tmp_path)


def test_the_gap_move_sends_a_higher_id_then_a_skipped_one(tmp_path: Path) -> None:
    ids = [p.sequence_ids for p in _program(tmp_path).steps if isinstance(p, Publish) and p.sequence_ids]
    assert ids == [(6,), (4,)]
    assert "gap" not in GeneratorOptions().move_kinds()  # programs drawn without the option stay the same
    off = program_from_moves(MOVES, name="generated", options=OPTIONS)  # deduplication off: no gap
    assert not any(isinstance(p, Publish) and p.sequence_ids for p in off.steps)


@pytest.mark.parametrize("mutant", [None, "dedup-gap-stored"])
def test_the_gapped_id_is_answered_as_a_duplicate_on_the_model(
    mutant: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    program = _program(tmp_path)
    if mutant is not None:
        from reference_model.dedup.deduplication import MessageDeduplication

        monkeypatch.setattr(MessageDeduplication, "is_duplicate", MessageDeduplication.is_duplicate)
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
        receipts = [json.loads(line) for line in result.trace_path.read_text().splitlines()[1:]]
        gapped = [e for e in receipts if e.get("op") == "publish" and e.get("seq") == 4]
        assert [e["msg_id"].split(":")[:2] for e in gapped] == [["-1", "-1"]]
    else:
        assert "stored_below_highest" in kinds
