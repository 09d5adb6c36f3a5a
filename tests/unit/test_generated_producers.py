"""The generator draws producer lifecycles and deduplication switches (``GeneratorOptions.producers``: the
``producer_cycle`` and ``dedup_switch`` moves): a program with both is written, loaded back and run on the model,
where p1, closed past the purge timeout, is forgotten and its resends are stored again in its next deduplication
epoch, as after the switch (valid); a model whose purge forgets nobody fails ``not_purged``."""

from __future__ import annotations

from pathlib import Path

import pytest
from generated_moves import dedup_program

from conformance.generated.program import (
    PURGE_SLEEP_MS,
    GeneratorOptions,
    Move,
    program_from_moves,
)
from conformance.scenarios import CloseProducer, Deduplication, OpenProducer, Sleep
from pytest_keyshared.driver import run_scenario
from pytest_keyshared.targets import open_target

OPTIONS = GeneratorOptions(producers=True)
KINDS = OPTIONS.move_kinds()
MOVES = [
    Move(KINDS.index("publish"), 0, 3),
    Move(KINDS.index("producer_cycle"), 0, 2),  # even: past the timeout plus one purge period
    Move(KINDS.index("resend"), 0, 3),
    Move(KINDS.index("dedup_switch"), 0, 1),  # odd: one message while it is off
    Move(KINDS.index("resend"), 0, 2),
]


def _program(tmp_path: Path):  # type: ignore[no-untyped-def]
    return dedup_program(MOVES, OPTIONS, tmp_path)


def test_the_moves_close_and_create_p1_and_switch_deduplication(tmp_path: Path) -> None:
    program = _program(tmp_path)
    steps = [type(s).__name__ for s in program.steps if isinstance(s, (CloseProducer, OpenProducer, Deduplication))]
    assert steps == ["CloseProducer", "OpenProducer", "Deduplication", "Deduplication"]
    assert Sleep(ms=PURGE_SLEEP_MS) in program.steps
    assert dict(program.broker)["brokerDeduplicationProducerInactivityTimeoutMinutes"] == 1
    assert "producer_cycle" not in GeneratorOptions().move_kinds()  # programs drawn without the option stay the same
    off = program_from_moves(MOVES, name="generated", options=OPTIONS)  # deduplication off: neither move
    assert not any(isinstance(s, (CloseProducer, Deduplication)) for s in off.steps) and not off.broker


@pytest.mark.parametrize("forgets", [True, False])
def test_the_program_passes_on_the_model_and_a_purge_that_forgets_nobody_fails(
    forgets: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    program = _program(tmp_path)
    if not forgets:
        from reference_model.dedup.deduplication import MessageDeduplication

        monkeypatch.setattr(MessageDeduplication, "purge_inactive", lambda self, *, now_ns: None)
    with open_target("model", artifacts_dir=tmp_path / "target") as model:
        result = run_scenario(model, program, seed=7, out_dir=tmp_path / "run", live_check=False)
    kinds = sorted({str(v.kind) for v in result.verdict.violations})
    if forgets:
        assert result.valid, kinds
    else:
        assert "not_purged" in kinds, kinds
