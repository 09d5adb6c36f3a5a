"""One verdict whichever way a trace reaches the streaming engine: live events, JSON Lines (plain or gzip,
on the columnar fast path) or Parquet."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from trace_synth import PLANTABLE, SynthConfig, fuzz, synthesize

from conformance.checks import StreamingChecker, check_trace
from conformance.trace.builder import TraceBuilder
from conformance.trace.parquet import write_parquet
from conformance.violations import Kind


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32), kind=st.sampled_from([None, *sorted(PLANTABLE)]), fuzzed=st.booleans())
def test_live_file_and_parquet_paths_agree(seed: int, kind: Kind | None, fuzzed: bool) -> None:
    if fuzzed:
        run = fuzz(seed, faults=seed % 2 == 0)
    else:
        run = synthesize(seed, SynthConfig(partitions=seed % 3), plant=set() if kind is None else {kind})
    checker = StreamingChecker(run.header)
    live = set()
    for event in run.events:
        live |= {v.identity() for v in checker.feed(event)}
    final = checker.finish()
    assert live <= final.identities()
    with tempfile.TemporaryDirectory() as tmp:
        b = TraceBuilder(run.header)
        b.events = run.events
        paths = [
            b.write(Path(tmp) / "t.jsonl"),
            b.write(Path(tmp) / "t.jsonl.gz"),
            write_parquet(Path(tmp) / "t.parquet", run.header, run.events),
        ]
        for path in paths:
            verdict = check_trace(path)
            assert verdict.identities() == final.identities(), path
            assert verdict.events == len(run.events)
