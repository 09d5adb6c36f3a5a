"""Both engines on the traces of the reference differential (``tests/quality``): correct and broken brokers with
acks by non-holders, duplicate and late acks, scoped faults, duplicate receipts and one timestamp for every event.
One Spark job for all of them."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from conformance.checks import check_trace
from conformance.spark import check_many

sys.path.insert(0, str(Path(__file__).parent.parent / "quality"))
from raced_traces import FAMILIES, generate

pytestmark = pytest.mark.spark

PER_FAMILY = 20


def test_both_engines_agree_on_raced_traces(spark: Any) -> None:
    traces = [generate(family, 5000 + 100 * n + k) for n, family in enumerate(FAMILIES) for k in range(PER_FAMILY)]
    for (header, events), verdict in zip(traces, check_many(spark, traces), strict=True):
        python = check_trace(events, header=header)
        assert verdict.identities() == python.identities(), header.seed
        assert verdict.validity == python.validity
