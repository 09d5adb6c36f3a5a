"""docs/known-bugs.md is current, and the model agrees with Apache Pulsar's fix history of every known bug."""

from __future__ import annotations

import pytest

from conformance.cases._support import area_scenarios
from conformance.known_bugs import KNOWN_BUGS
from pytest_keyshared.known_bugs_matrix import PAGE, Cell, disagreements, render, run_all


@pytest.fixture(scope="module")
def results() -> list[Cell]:
    return run_all()


def test_every_known_bug_case_has_a_fix_history() -> None:
    assert {b.case for b in KNOWN_BUGS} == {s.name for s in area_scenarios("known_bugs")}


def test_the_model_agrees_with_the_fix_history(results: list[Cell]) -> None:
    """Before the fix the case fails, from the fix it passes; a bug the model cannot show still passes when fixed."""
    assert [(c.bug.case, c.release, c.implementation, c.observed) for c in disagreements(results)] == []


def test_bugs_shown_fail_before_their_fix_on_every_line(results: list[Cell]) -> None:
    shown = {c.bug.case for c in results if c.expected == "fails" and c.observed == "fails"}
    assert shown == {b.case for b in KNOWN_BUGS if b.shown is None}
    assert len(shown) >= 10


def test_the_page_is_current(results: list[Cell]) -> None:
    assert PAGE.read_text(encoding="utf-8") == render(results) + "\n", (
        "docs/known-bugs.md is out of date: run python -m pytest_keyshared.known_bugs_matrix --write"
    )
