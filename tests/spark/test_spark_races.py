"""Both engines on the traces of the reference differential (``tests/support/raced_traces.py``): correct and
broken brokers with acks by non-holders, duplicate and late acks, scoped faults, duplicate receipts and one
timestamp for every event.  One Spark job for all of them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from raced_traces import FAMILIES, generate

from conformance.checks import check_trace
from conformance.spark import check_many

pytestmark = pytest.mark.spark

PER_FAMILY = 20


def test_both_engines_agree_on_raced_traces(spark: Any) -> None:
    traces = [generate(family, 5000 + 100 * n + k) for n, family in enumerate(FAMILIES) for k in range(PER_FAMILY)]
    for (header, events), verdict in zip(traces, check_many(spark, traces), strict=True):
        python = check_trace(events, header=header)
        assert verdict.identities() == python.identities(), header.seed
        assert verdict.validity == python.validity


def test_a_model_trace_with_one_delivery_deleted_is_undelivered_on_spark(spark: Any, tmp_path: Path) -> None:
    """Issue 11, part 1, on the Spark engine: a stored model trace, one message's receive and ack deleted."""
    import json

    from conformance.spark import check_with_spark
    from conformance.trace.reader import open_trace
    from pytest_keyshared.cli import main

    assert main(["run", "--target", "model", "--scenario", "join-while-pending", "--out", str(tmp_path), "-q"]) == 0
    lines = (tmp_path / "trace.jsonl").read_text().splitlines()
    kept = [lines[0]]
    for line in lines[1:]:
        event = json.loads(line)
        if not (event["op"] in ("receive", "ack") and event.get("msg_id") == "0:5:-1:-1"):
            kept.append(line)
    lost = tmp_path / "lost.jsonl"
    lost.write_text("\n".join(kept) + "\n")
    intact = check_with_spark(open_trace(tmp_path / "trace.jsonl"), spark=spark)
    assert intact.valid and intact.violations == ()
    verdict = check_with_spark(open_trace(lost), spark=spark)
    assert [v.facts["msg"] for v in verdict.violations if v.kind.value == "undelivered"] == ["0:5:-1:-1"]
    assert verdict.identities() == check_trace(lost).identities()
