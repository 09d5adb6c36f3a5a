"""The stored generated programs are exactly what the generator derives from their seeds.

``conformance/generated/programs/`` is replayed against every target, so it must not drift from
``program_from_seed``: a change to the generator shows up here, and is made deliberate by running
``python -m conformance.generated.regenerate``.
"""

from __future__ import annotations

from pathlib import Path

from conformance.generated.regenerate import DEFAULT_DIR, regenerate


def test_stored_programs_equal_what_the_generator_derives(tmp_path: Path) -> None:
    fresh = {path.name: path.read_text(encoding="utf-8") for path in regenerate(tmp_path)}
    stored = {path.name: path.read_text(encoding="utf-8") for path in sorted(DEFAULT_DIR.glob("*.toml"))}
    assert sorted(fresh) == sorted(stored), "the stored program files differ from STORED_SEEDS"
    stale = [name for name in fresh if fresh[name] != stored[name]]
    assert not stale, f"{stale} differ from the generator; run `python -m conformance.generated.regenerate`"
