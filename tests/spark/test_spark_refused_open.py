"""refused_open on the Spark engine: random membership traces (``tests/quality/test_refused_open_reference.py``)
in one job, split in two parts, with the Python engine's verdicts (``error`` and ``closed`` reach the parts)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from conformance.checks import check_trace
from conformance.spark import check_many

pytestmark = pytest.mark.spark

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "quality"))


def test_both_engines_judge_refused_opens_alike(spark: Any) -> None:
    from test_refused_open_reference import random_trace

    traces = [random_trace(seed) for seed in range(0, 400, 10)]
    verdicts = check_many(spark, [(b.header, b.events) for b in traces], parts=2)
    judged = 0
    for seed, b, verdict in zip(range(0, 400, 10), traces, verdicts, strict=True):
        python = check_trace(b.events, header=b.header)
        assert verdict.identities() == python.identities(), seed
        judged += sum(v.kind.value == "refused_open" for v in verdict.violations)
    assert judged > 5
