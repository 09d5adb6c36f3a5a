"""The engine alone over a trace, shaped for counting its instructions with callgrind (noise-free on a busy machine).

On the shared 2-core machine one CPU-time run can differ from the next by a fifth; an instruction count does not
(``PYTHONHASHSEED=0``: the same count, run after run).  Each batch is decoded first, then checked inside
``builtins.map``, so callgrind can count only the engine: from source, collection on while inside ``map_next``;
compiled, while inside the compiled ``_run``.  A tree of ``trees.py`` (``bench_checker.py --compare-ref`` leaves
them in its ``--dir``) on ``PYTHONPATH``:

    T=/tmp/keyshared-bench/tree-after  # or tree-before
    PYTHONHASHSEED=0 PYTHONPATH=$T KEYSHARED_PURE=1 valgrind --tool=callgrind --collect-atstart=no \\
        --toggle-collect=map_next --callgrind-out-file=/tmp/cg.source python benchmarks/engine_instructions.py TRACE
    PYTHONHASHSEED=0 PYTHONPATH=$T valgrind --tool=callgrind --collect-atstart=no \\
        --toggle-collect=CPyDef_streaming___StreamingChecker____run --callgrind-out-file=/tmp/cg.compiled \\
        python benchmarks/engine_instructions.py TRACE
    callgrind_annotate /tmp/cg.source | grep 'PROGRAM TOTALS'

Under valgrind a 100,000-event trace (``gen_trace.py --events 100000 --seed 7``) takes a minute or two of CPU,
most of it importing pyarrow.  It prints the violations found and which build ran.
"""

from __future__ import annotations

import collections
import gc
import sys
from typing import Any


def main(path: str) -> int:
    from conformance.checks._build import running_build
    from conformance.checks.streaming import StreamingChecker
    from conformance.trace.decode import RowDecoder
    from conformance.trace.reader import open_trace

    source = open_trace(path)
    decoder = RowDecoder()
    batches = []
    for batch in source.row_batches(read_ahead=False):
        decoded = decoder.decode(batch)
        batches.append((decoded.extras, decoded.columns, decoded.count))
    gc.disable()  # as bench_checker.py's engine-alone runs
    checker = StreamingChecker(source.header)

    def check(batch: tuple[Any, list[list[Any]], int]) -> None:
        checker._extras = batch[0]
        checker._run(batch[1], 0, batch[2])

    collections.deque(map(check, batches), 0)  # the engine, inside map_next
    verdict = checker.finish()
    print(f"{running_build()}: {len(verdict.all_violations())} violations over {checker.events:,} events")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: engine_instructions.py TRACE")
    sys.exit(main(sys.argv[1]))
