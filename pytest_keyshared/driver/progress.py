"""Progress of a run, reported at each step and about once a second while the run waits."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_keyshared.driver.recorder import Counters

__all__ = ["Progress"]


@dataclass(frozen=True, slots=True)
class Progress:
    step: int  #: 1-based index of the step running (the drain counts as the last step)
    steps: int
    label: str  #: the step's ``do``, ``drain``, ``starting`` or ``done``
    elapsed_s: float
    counters: Counters
    final: bool = False

    def line(self) -> str:
        """One status line: ``[4/7 wait_quiet] 12.3s published 200 received 187 acked 150/200``."""
        c = self.counters
        return (
            f"[{self.step}/{self.steps} {self.label}] {self.elapsed_s:.1f}s published {c.published_ok}"
            f" received {c.received} acked {c.acked_expected}/{c.expected_uids}"
        )
