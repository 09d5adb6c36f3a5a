"""The plugin's per-session state (kept in ``config.stash``) and per-case state (kept in ``item.stash``).

Standard library and pytest only: created in ``pytest_configure`` of every pytest run.  Everything costly
(the expectations file, the target) is loaded on first use, so a session without keyshared cases pays for
nothing but the header line.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_keyshared.options import Resolved

if TYPE_CHECKING:
    from pytest_keyshared.expectations import Expectations
    from pytest_keyshared.results import CaseRecord, StoredResults

__all__ = ["CASE_KEY", "STATE_KEY", "CaseState", "SessionState", "case_seed"]


def case_seed(root_seed: int, case: str) -> int:
    """A case's own seed: the root seed plus ``crc32(case id)`` (pytest-randomly's rule, on stable ids).

    Deselecting or adding cases shifts no other case's seed, and the same root seed gives every case the
    same workload on every machine.
    """
    return (root_seed + zlib.crc32(case.encode("utf-8"))) & 0xFFFFFFFF


@dataclass
class SessionState:
    """Resolved settings, the root seed, and what the controller aggregates."""

    settings: dict[str, Resolved]
    seed: int
    seed_note: str
    artifacts: Path
    is_worker: bool
    records: list[CaseRecord] = field(default_factory=list)
    baseline: StoredResults | None = None
    claimed_version: str | None = None  #: what the target declared, once it started (for the results file)
    _expectations: Expectations | None = None

    def value(self, name: str) -> Any:
        return self.settings[name].value

    @property
    def target(self) -> str:
        return str(self.value("target"))

    @property
    def expectations(self) -> Expectations:
        """The expectations for this target, loaded once (``auto`` picks the file shipped for the target)."""
        if self._expectations is None:
            from pytest_keyshared.expectations import (
                NO_EXPECTATIONS,
                bundled_expectations,
                load_expectations,
            )

            chosen = self.value("expectations")
            if chosen == "none":
                self._expectations = NO_EXPECTATIONS
            elif chosen == "auto":
                path = bundled_expectations(self.target)
                self._expectations = NO_EXPECTATIONS if path is None else load_expectations(path)
            else:
                self._expectations = load_expectations(chosen)
        return self._expectations

    def expectations_label(self) -> str:
        """How the header names the expectations without loading them: ``auto``, ``none`` or the file name."""
        chosen = self.value("expectations")
        return chosen if isinstance(chosen, str) else str(chosen)


@dataclass
class CaseState:
    """What the keyshared fixtures learn about one running case."""

    record: CaseRecord
    seed: int
    artifacts: Path
    settings: dict[str, Any]  #: per-test settings after the marker was applied
    runs: int = 0

    def next_run_dir(self, label: str | None = None) -> Path:
        self.runs += 1
        name = label or f"run-{self.runs}"
        return self.artifacts / name


STATE_KEY = pytest.StashKey[SessionState]()
CASE_KEY = pytest.StashKey[CaseState]()
