"""The out-of-order contract read twice: the streaming engine and the reference checker
(:mod:`reference_checker`, written from ``docs/checker.md``) agree on a model run with ``allowOutOfOrderDelivery``
where keys move while held, in every form and with every planted fault of :mod:`out_of_order_traces`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from out_of_order_traces import (
    Rows,
    check,
    equal_timestamps,
    late_acks,
    lose,
    misassign,
    model_run,
    redeliver_after_ack,
)
from reference_checker import engine_identities, forbidden, reference_check

from conformance.trace import open_trace


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Rows]:
    return model_run(tmp_path_factory.mktemp("ooo"))


@pytest.mark.parametrize(
    "plant", [list, misassign, redeliver_after_ack, lose], ids=["correct", "misassigned", "redelivered", "lost"]
)
@pytest.mark.parametrize("form", [list, equal_timestamps, late_acks], ids=["as-run", "equal-t", "late-acks"])
def test_the_reference_checker_reads_the_same_contract(
    run: tuple[str, Rows], plant: Callable[[Rows], Rows], form: Callable[[Rows], Rows], tmp_path: Path
) -> None:
    """``tests/quality/reference_checker.py`` (written from ``docs/checker.md``) finds the same violations and
    forbids the same ones under the header's out-of-order contract (``misassigned`` is the engine's alone)."""
    header, rows = run
    verdict = check(header, form(plant(rows)), tmp_path)
    source = open_trace(tmp_path / "trace.jsonl")
    events = list(source.events())
    found = reference_check(source.header, events)
    assert found == engine_identities(verdict.all_violations())
    assert forbidden(source.header, found) == engine_identities(verdict.violations)
