"""Issues 24 and 26 on the Spark engine: the traces of ``tests/support/exemption_traces.py`` in one job, split in
two parts (the scope pass and the identity pass each judge their share), with the Python engine's verdicts.

An ack that may never have taken effect does not end or prevent an ``out_of_order`` exemption (each case VALID,
its mirror without the nack INVALID ``out_of_order``); a ``-1:-1`` answer to a gapped sequence id is valid, one
above every stored id is ``lost_write``; a gapped id stored after a higher one is ``stored_below_highest`` and a
producer told less than its highest stored id ``last_sequence_id_behind`` (both checked whole: they compare ids
the identity pass splits apart), and Pulsar's answers are valid.
"""

from __future__ import annotations

from typing import Any

import pytest
from exemption_traces import (
    EXEMPTION_CASES,
    batch_answered_below_its_highest,
    batch_stored_below_its_pushed_id,
    gapped_id_stored,
    gapped_sequence,
    lost_write_above_the_highest,
    producer_answered,
)

from conformance.checks import check_trace
from conformance.spark import check_many

pytestmark = pytest.mark.spark


def test_both_engines_judge_the_exemption_and_lost_write_traces_alike(spark: Any) -> None:
    cases = [(f"{name} {released}", EXEMPTION_CASES[name](released)) for name in sorted(EXEMPTION_CASES)
             for released in (True, False)]  # fmt: skip
    cases += [("gapped", gapped_sequence()), ("lost", lost_write_above_the_highest()),
              ("lost then 7", lost_write_above_the_highest(then_higher=True)),
              ("batch below its highest", batch_answered_below_its_highest()),
              ("batch lost", batch_answered_below_its_highest(second_send=6)),
              ("batch lost, equal t", batch_answered_below_its_highest(second_send=6, step=0))]  # fmt: skip
    verdicts = check_many(spark, [(b.header, b.events) for _, b in cases], parts=2)
    for (name, b), verdict in zip(cases, verdicts, strict=True):
        python = check_trace(b.events, header=b.header)
        assert verdict.identities() == python.identities(), name
        kinds = sorted(v.kind.value for v in verdict.violations)
        if name.endswith("True") or name in ("gapped", "batch below its highest"):
            assert kinds == [] and verdict.valid, name
        elif name.startswith("batch lost"):
            assert kinds == ["lost_write"] * 3 and not verdict.valid, name
        elif name.endswith("False"):
            assert kinds == ["out_of_order"] and not verdict.valid, name
        else:
            assert kinds == ["lost_write"] and not verdict.valid, name


def test_both_engines_judge_stored_ids_below_the_highest_and_the_producers_answer_alike(spark: Any) -> None:
    cases = [
        ("gapped stored", gapped_id_stored(), ["stored_below_highest"]),
        ("gapped stored, equal t", gapped_id_stored(step=0), ["stored_below_highest"]),
        ("gapped answered -1:-1", gapped_sequence(), []),
        ("answered 4", producer_answered(4), ["last_sequence_id_behind"]),
        ("answered 5", producer_answered(5), []),
        ("answered 4, equal t", producer_answered(4, step=0), ["last_sequence_id_behind"]),
        ("batch under 4 stored", batch_stored_below_its_pushed_id(send=4), ["stored_below_highest"]),
        ("batch under 6 stored", batch_stored_below_its_pushed_id(send=6), []),
        ("lone 0 after the batch", batch_stored_below_its_pushed_id(send=6, then_alone=0), ["stored_below_highest"]),
    ]
    verdicts = check_many(spark, [(b.header, b.events) for _, b, _k in cases], parts=2)
    for (name, b, kinds), verdict in zip(cases, verdicts, strict=True):
        assert verdict.identities() == check_trace(b.events, header=b.header).identities(), name
        assert sorted(v.kind.value for v in verdict.violations) == kinds, name
