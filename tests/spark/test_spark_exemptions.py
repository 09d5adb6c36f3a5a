"""Issues 24 and 26 on the Spark engine: the traces of ``tests/support/exemption_traces.py`` in one job, split in
two parts (the scope pass and the identity pass each judge their share), with the Python engine's verdicts.

An ack that may never have taken effect does not end or prevent an ``out_of_order`` exemption (each case VALID,
its mirror without the nack INVALID ``out_of_order``); a ``-1:-1`` answer to a gapped sequence id is valid, one
above every stored id is ``lost_write``.
"""

from __future__ import annotations

from typing import Any

import pytest
from exemption_traces import EXEMPTION_CASES, gapped_sequence, lost_write_above_the_highest

from conformance.checks import check_trace
from conformance.spark import check_many

pytestmark = pytest.mark.spark


def test_both_engines_judge_the_exemption_and_lost_write_traces_alike(spark: Any) -> None:
    cases = [(f"{name} {released}", EXEMPTION_CASES[name](released)) for name in sorted(EXEMPTION_CASES)
             for released in (True, False)]  # fmt: skip
    cases += [("gapped", gapped_sequence()), ("lost", lost_write_above_the_highest()),
              ("lost then 7", lost_write_above_the_highest(then_higher=True))]  # fmt: skip
    verdicts = check_many(spark, [(b.header, b.events) for _, b in cases], parts=2)
    for (name, b), verdict in zip(cases, verdicts, strict=True):
        python = check_trace(b.events, header=b.header)
        assert verdict.identities() == python.identities(), name
        kinds = sorted(v.kind.value for v in verdict.violations)
        if name.endswith("True") or name == "gapped":
            assert kinds == [] and verdict.valid, name
        elif name.endswith("False"):
            assert kinds == ["out_of_order"] and not verdict.valid, name
        else:
            assert kinds == ["lost_write"] and not verdict.valid, name
