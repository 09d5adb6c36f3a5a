"""``received_beyond_unacked_limit`` on the Spark engine: the traces of ``tests/support/unacked_traces.py`` in one
job, in one part and split in two, with the Python engine's verdicts.  The count spans keys (``over-across-keys``
holds three keys), so a part that judged the rule sends its trace to be checked whole."""

from __future__ import annotations

from typing import Any

import pytest
from unacked_traces import UNACKED_CASES

from conformance.checks import check_trace
from conformance.spark import check_many

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("parts", [1, 2])
def test_both_engines_judge_the_unacked_limit_alike(spark: Any, parts: int) -> None:
    cases = [(name, UNACKED_CASES[name][0]()) for name in sorted(UNACKED_CASES)]
    verdicts = check_many(spark, [(b.header, b.events) for _, b in cases], parts=parts)
    for (name, b), verdict in zip(cases, verdicts, strict=True):
        python = check_trace(b.events, header=b.header)
        assert verdict.identities() == python.identities(), name
        assert sorted(v.kind.value for v in verdict.violations) == UNACKED_CASES[name][1], name
