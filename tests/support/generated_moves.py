"""A generated program built from chosen moves with deduplication on, written and loaded back: what the tests of
each deduplication move (``gap``, ``batch_highest``, ``producer_cycle``, ``dedup_switch``) start from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conformance.generated.program import SHAPE_DIMENSIONS, GeneratorOptions, Move, program_from_moves
from conformance.scenarios import dump_scenario, load_scenario

#: the shape that turns deduplication on and leaves every other dimension at its first choice
DEDUP_ON = tuple(1 if d == "dedup" else 0 for d in SHAPE_DIMENSIONS)


def dedup_program(moves: list[Move], options: GeneratorOptions, tmp_path: Path) -> Any:
    """The program of ``moves`` with deduplication on, as a scenario file gives it back (asserted equal)."""
    program = program_from_moves(moves, name="generated", options=options, shape=DEDUP_ON)
    loaded = load_scenario(dump_scenario(program, tmp_path / "program.toml"))
    assert loaded == program
    return loaded
