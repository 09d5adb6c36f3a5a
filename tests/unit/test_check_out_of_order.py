"""The ``allowOutOfOrderDelivery`` contract, proven both ways on the model's own traces.

With ``allowOutOfOrderDelivery`` Pulsar's dispatcher tracks no draining hashes (``drainingHashesRequired`` is
``AUTO_SPLIT && !allowOutOfOrderDelivery``; the classic one keeps no recently-joined consumers) and its replay
filter blocks nothing for ordering, so a key moves to a joining consumer at once, while the old owner still holds
its messages: ``key_overlap`` and ``out_of_order`` are permitted (the ``out-of-order`` profile).  Routing is not
relaxed ("Out-of-order delivery relaxes ordering, not routing", ``ReplayPositionFilter``): every delivery goes to
the key's owner at dispatch (``misassigned``), so while the membership stands still no two consumers hold a key;
nothing is lost (``undelivered``) and nothing acknowledged comes back (``redelivered_after_ack``).

A correct run (the model, a join while the first consumer holds everything) passes, also with every timestamp
equal and with every acknowledgement logged late (at the end, as a buffered ack that may never have arrived in
time); the same trace with a planted fault fails.
"""

from __future__ import annotations

import json
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

from conformance.checks import Kind


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Rows]:
    return model_run(tmp_path_factory.mktemp("ooo"))


def test_the_header_records_the_setting_and_picks_the_out_of_order_profile(run: tuple[str, Rows]) -> None:
    header, rows = run
    assert json.loads(header)["subscription"]["allow_out_of_order_delivery"] is True
    opens = [row for row in rows if row["op"] == "open"]
    assert all(row["policy"]["allow_out_of_order_delivery"] is True for row in opens)


@pytest.mark.parametrize("form", [list, equal_timestamps, late_acks], ids=["as-run", "equal-t", "late-acks"])
def test_a_correct_run_passes_with_keys_moving_while_held(
    run: tuple[str, Rows], form: Callable[[Rows], Rows], tmp_path: Path
) -> None:
    header, rows = run
    verdict = check(header, form(rows), tmp_path)
    assert verdict.valid and verdict.validity.value == "valid", verdict.render()
    assert verdict.profile.name == "out-of-order"
    allowed = {v.kind for v in verdict.allowed}
    assert {Kind.KEY_OVERLAP, Kind.OUT_OF_ORDER} <= allowed  # the relaxation is really exercised
    ordered = check(header, form(rows), tmp_path, profile="pip379")
    assert {v.kind for v in ordered.violations} == {Kind.KEY_OVERLAP, Kind.OUT_OF_ORDER}


@pytest.mark.parametrize(
    ("plant", "kind"),
    [(misassign, Kind.MISASSIGNED), (redeliver_after_ack, Kind.REDELIVERED_AFTER_ACK), (lose, Kind.UNDELIVERED)],
    ids=["misassigned", "redelivered-after-ack", "undelivered"],
)
@pytest.mark.parametrize("form", [list, equal_timestamps], ids=["as-run", "equal-t"])
def test_a_planted_fault_still_fails_under_out_of_order_delivery(
    run: tuple[str, Rows], plant: Callable[[Rows], Rows], kind: Kind, form: Callable[[Rows], Rows], tmp_path: Path
) -> None:
    header, rows = run
    verdict = check(header, form(plant(rows)), tmp_path)
    assert verdict.profile.name == "out-of-order"
    assert not verdict.valid and kind in {v.kind for v in verdict.violations}, verdict.render()
