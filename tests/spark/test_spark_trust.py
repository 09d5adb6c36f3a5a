"""The Spark engine on the traces that prove the batch-copy rule and ``gone``: the same verdicts as the Python
engine, split into parts (``gone`` is copied into every part, like every event not about one message)."""

from __future__ import annotations

from typing import Any

import batch_traces as batch
import crash_traces as crashes

from conformance.checks import check_trace
from conformance.spark import check_many
from conformance.trace.builder import TraceBuilder


def _traces() -> list[TraceBuilder]:
    out: list[TraceBuilder] = []
    for step in (10, 0):
        out += [
            batch.handed_over_twice(step=step),
            batch.handed_over_twice(step=step, planted=True),
            batch.nacked_and_back(step=step),
            batch.nacked_and_back(step=step, nack_first=True, planted=True),
            batch.acked_across_a_reconnect(step=step),
            batch.whole_then_again(step=step, raced=True),
        ]
    wrong = crashes.wrong_receiver()
    out += [crashes.many_crashes(gone=gone, deliver_to=wrong) for gone in (True, False)]
    out += [crashes.crashed_then_join(gone=g, to=to) for g in ("before-join", "after-join") for to in ("late", "early")]
    return out


def test_both_engines_agree_on_the_batch_copy_and_gone_traces(spark: Any) -> None:
    traces = _traces()
    python = [check_trace(b.events, header=b.header) for b in traces]
    assert any(v.violations for v in python) and any(v.valid for v in python)
    assert any(v.kind.value == "misassigned" for verdict in python for v in verdict.violations)
    for parts in (2, 3):
        spark_verdicts = check_many(spark, [(b.header, b.events) for b in traces], parts=parts)
        for got, want in zip(spark_verdicts, python, strict=True):
            assert got.identities() == want.identities()
            assert (got.validity, got.counts, got.notes, got.unjudged) == (
                want.validity,
                want.counts,
                want.notes,
                want.unjudged,
            )
