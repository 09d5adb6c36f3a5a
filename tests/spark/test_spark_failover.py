"""Failover runs on the Spark engine: one verdict with the Python engine, from the same stored traces.

The delivery checks run on Spark; the replication check (``skipped_after_failover``,
``replicated_cursor_ahead``) is one pure function
of the events both engines call (``conformance.checks.api``).  A correct model and a model whose replicated
cursor moves past unacknowledged messages (the planted bug of ``tests/quality/test_planted_failover.py``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from failover_runs import across_two_regions, cursor_never_replicated, cursor_past_unacked, switch_to_standby

from conformance.checks import Kind, Validity, check_trace

pytestmark = pytest.mark.spark


def test_both_engines_give_one_verdict_on_failover_traces(spark: Any, tmp_path: Path) -> None:
    good = switch_to_standby(tmp_path / "good.jsonl")
    with cursor_past_unacked():
        bad = switch_to_standby(tmp_path / "bad.jsonl")
    for path, validity in ((good, Validity.VALID), (bad, Validity.INVALID)):
        python = check_trace(path)
        on_spark = check_trace(path, engine="spark", spark=spark)
        assert python.validity is on_spark.validity is validity, on_spark.render()
        assert python.identities() == on_spark.identities()
    kinds = {v.kind for v in check_trace(bad, engine="spark", spark=spark).violations}
    assert kinds == {Kind.SKIPPED_AFTER_FAILOVER, Kind.REPLICATED_CURSOR_AHEAD}


def test_a_snapshot_ahead_of_the_acknowledgements_is_found_on_both_engines(spark: Any, tmp_path: Path) -> None:
    """The correct run's trace with r2's settled backlog lowered below the 10 messages held on r1 (all
    timestamps equal, to show the rule reads order only): ``replicated_cursor_ahead`` alone, on both engines."""
    lines = switch_to_standby(tmp_path / "good.jsonl").read_text().splitlines()
    edited = [lines[0]]
    for line in lines[1:]:
        event = json.loads(line)
        event["t"] = 0
        if event.get("t0") is not None:
            event["t0"] = 0
        if event["op"] == "snapshot" and event["cluster"] == "r2":
            event["backlog"] = 9
        edited.append(json.dumps(event))
    bad = tmp_path / "ahead.jsonl"
    bad.write_text("\n".join(edited) + "\n")
    python, on_spark = check_trace(bad), check_trace(bad, engine="spark", spark=spark)
    assert python.identities() == on_spark.identities()
    assert [v.kind for v in on_spark.violations] == [Kind.REPLICATED_CURSOR_AHEAD], on_spark.render()


def test_a_cursor_never_replicated_is_found_on_both_engines(spark: Any, tmp_path: Path) -> None:
    """``redelivered_after_failover`` from model runs: the correct model's trace is valid, the one whose remote
    never applies the cursor update redelivers the 3 covered messages, on both engines alike."""
    good = across_two_regions(tmp_path / "good.jsonl")
    with cursor_never_replicated():
        bad = across_two_regions(tmp_path / "bad.jsonl")
    assert check_trace(good, engine="spark", spark=spark).validity is Validity.VALID
    python, on_spark = check_trace(bad), check_trace(bad, engine="spark", spark=spark)
    assert {v.kind for v in on_spark.violations} == {Kind.REDELIVERED_AFTER_FAILOVER}, on_spark.render()
    assert on_spark.identities() == python.identities() and len(python.violations) == 3
