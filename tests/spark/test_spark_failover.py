"""Failover runs on the Spark engine: one verdict with the Python engine, from the same stored traces.

The delivery checks run on Spark; the replication check (``skipped_after_failover``) is one pure function
of the events both engines call (``conformance.checks.api``).  A correct model and a model whose replicated
cursor moves past unacknowledged messages (the planted bug of ``tests/quality/test_planted_failover.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from failover_runs import cursor_past_unacked, switch_to_standby

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
    assert {v.kind for v in check_trace(bad, engine="spark", spark=spark).violations} == {Kind.SKIPPED_AFTER_FAILOVER}
