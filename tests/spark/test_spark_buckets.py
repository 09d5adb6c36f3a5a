"""The Spark engine on a trace in the bucketed layout (``conformance.trace.buckets``): one task per bucket, each
reading its own files and the shared one, no plan on the driver; the verdict is the streaming engine's on the
original trace (planted faults found, clean traces valid), as the Python engine's bucket by bucket is
(``tests/unit/test_trace_buckets.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from part_checks import same_verdicts
from trace_synth import PLANTABLE, SynthConfig, synthesize

from conformance.checks import check_trace
from conformance.spark import check_with_spark
from conformance.trace.buckets import convert_to_buckets
from conformance.trace.parquet import write_parquet
from conformance.verdict import Validity

pytestmark = pytest.mark.spark


def test_each_task_checks_its_bucket_and_the_verdict_is_the_streaming_engines(spark: Any, tmp_path: Path) -> None:
    kinds = sorted(PLANTABLE)
    splits, found = set(), set()
    for k in range(6):
        plant = {kinds[k % len(kinds)], kinds[(k + 3) % len(kinds)]} if k else set()
        cfg = SynthConfig(partitions=k % 3, messages=40, keys=5, churn=0.1, deduplication=k % 2 == 1)
        run = synthesize(100 + k, cfg, plant=plant)
        flat = write_parquet(tmp_path / f"t{k}.parquet", run.header, list(run.events))
        out = tmp_path / f"b{k}"
        convert_to_buckets(flat, out, 2 + k % 3)
        want = check_trace(list(run.events), header=run.header)
        got = check_with_spark(str(out), spark=spark)
        same_verdicts(got, want)
        assert got.engine == "spark" and got.extra["layout"] == "bucketed"
        splits.add(got.extra["split"])
        found |= {v.kind for v in want.all_violations()}
        if not plant:
            assert got.validity is Validity.VALID
    assert found and splits == {"bucket", "whole"}


def test_a_malformed_bucket_is_the_readers_one_line(spark: Any, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from conformance.trace.validation import TraceFormatError

    run = synthesize(5, SynthConfig(messages=30, keys=4))
    flat = write_parquet(tmp_path / "t.parquet", run.header, list(run.events))
    out = tmp_path / "b"
    convert_to_buckets(flat, out, 2)
    path = out / "bucket-0001.parquet"
    table = pq.read_table(path)
    pq.write_table(table.take(list(reversed(range(table.num_rows)))), path)
    with pytest.raises(TraceFormatError, match=r"bucket-0001\.parquet: holds its events out of order"):
        check_with_spark(str(out), spark=spark)
