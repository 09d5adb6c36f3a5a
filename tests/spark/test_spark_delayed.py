"""Delayed delivery on the Spark engine: the traces of ``tests/support/delayed_traces.py`` in one job, split in two
parts, with the Python engine's verdicts (``deliver_after_ms`` reaches the parts' checkers)."""

from __future__ import annotations

from typing import Any

import pytest
from delayed_traces import DELAYED_CASES

from conformance.checks import check_trace
from conformance.spark import check_many

pytestmark = pytest.mark.spark


def test_both_engines_judge_the_delayed_traces_alike(spark: Any) -> None:
    cases = [(name, DELAYED_CASES[name][0]()) for name in sorted(DELAYED_CASES)]
    verdicts = check_many(spark, [(b.header, b.events) for _, b in cases], parts=2)
    for (name, b), verdict in zip(cases, verdicts, strict=True):
        python = check_trace(b.events, header=b.header)
        assert verdict.identities() == python.identities(), name
        assert sorted(v.kind.value for v in verdict.violations) == DELAYED_CASES[name][1], name


def test_both_engines_judge_the_expiry_traces_alike(spark: Any) -> None:
    from expiry_traces import EXPIRY_CASES

    cases = [(name, EXPIRY_CASES[name][0]()) for name in sorted(EXPIRY_CASES)]
    verdicts = check_many(spark, [(b.header, b.events) for _, b in cases], parts=2)
    for (name, b), verdict in zip(cases, verdicts, strict=True):
        python = check_trace(b.events, header=b.header)
        assert verdict.identities() == python.identities(), name
        assert sorted(v.kind.value for v in verdict.violations) == EXPIRY_CASES[name][1], name
