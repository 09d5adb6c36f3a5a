"""Write the fixed generated programs: ``python -m conformance.generated.regenerate [DIR]``.

Each ``program-NN.toml`` is :func:`~conformance.generated.programs.program_from_seed` of its seed, written
with the scenario writer; ``tests/unit/test_stored_programs.py`` checks that the stored files still equal
what the generator derives, so a change to the generator is a deliberate regeneration.
"""

from __future__ import annotations

import sys
from pathlib import Path

from conformance.generated.program import STORED_OPTIONS, STORED_SEEDS, program_from_seed
from conformance.scenarios import dump_scenario

__all__ = ["main", "regenerate"]

DEFAULT_DIR = Path(__file__).resolve().parent / "programs"


def regenerate(folder: Path = DEFAULT_DIR) -> list[Path]:
    written = []
    for seed in STORED_SEEDS:
        scenario = program_from_seed(seed, options=STORED_OPTIONS)
        written.append(dump_scenario(scenario, folder / f"{scenario.name}.toml"))
    return written


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    folder = Path(args[0]) if args else DEFAULT_DIR
    for path in regenerate(folder):
        print(path)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
