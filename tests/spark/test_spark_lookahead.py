"""``received_beyond_lookahead`` on the Spark engine: the traces of ``tests/unit/test_check_lookahead.py`` (a
broker reading past its look-ahead limit, one stopping at it) in one job, in one part and split in two, with the
Python engine's verdicts.  The count spans keys (k0's entries wait below k11's), so a part that judged a receive
sends its trace to be checked whole, where each open's receiver queue is read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from lookahead_traces import BEYOND, WITHIN, _header, _trace

from conformance.checks import check_trace
from conformance.spark import check_many
from conformance.trace.reader import open_trace

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("parts", [1, 2])
def test_both_engines_judge_the_lookahead_alike(spark: Any, parts: int, tmp_path: Path) -> None:
    traces = []
    for name, order in (("beyond", BEYOND), ("within", WITHIN)):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("\n".join(json.dumps(x) for x in [_header(), *_trace(order)]) + "\n")
        source = open_trace(path)
        traces.append((name, source.header, list(source.events())))
    verdicts = check_many(spark, [(h, e) for _, h, e in traces], parts=parts)
    for (name, header, events), verdict in zip(traces, verdicts, strict=True):
        python = check_trace(events, header=header)
        assert verdict.identities() == python.identities(), name
        expected = ["received_beyond_lookahead"] if name == "beyond" else []
        assert sorted(v.kind.value for v in verdict.violations) == expected, name
