"""The Spark engine's split plan alone: CPU and wall of ``plan_trace`` on a stored trace, against the plan as it
was made before it worked on distinct values (``tests/support/split_reference.py``: row by row, read plain).

    python benchmarks/bench_plan.py --path /tmp/spark2-bench/trace-3000000.parquet [--parts 2] [--repeat 3]

Each figure is the best of ``--repeat`` runs in this process (CPU of every thread, and wall), old and new taken
in turn so that a busy machine weighs on both alike.  The old plan runs in one thread (its driver used as many
as it had cores: about 1.6x the CPU of one thread on a quiet 2-core machine, for little wall); the new one as
``plan_trace`` runs it (a thread per core) and in one thread, to weigh the CPU threads cost against the wall
they save.  The machine's load average is printed beside every line.  The plans are compared: they must be
equal.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def timed(run: Callable[[], Any]) -> tuple[float, float, Any]:
    """``(CPU seconds of every thread, wall seconds, result)`` of one run."""
    c, w = cpu(), time.perf_counter()
    result = run()
    return cpu() - c, time.perf_counter() - w, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--path", required=True, help="a Parquet trace (or a directory of chunks)")
    parser.add_argument("--parts", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    if args.parts < 2 or args.repeat < 1:
        print("bench_plan.py: --parts must be at least 2 and --repeat at least 1", file=sys.stderr)
        return 2

    import numpy as np
    import pyarrow.parquet as pq

    sys.path.insert(0, str(ROOT / "tests" / "support"))
    from split_reference import reference_plan  # type: ignore[import-not-found]

    from conformance.spark.engine import _readers, plan_trace
    from conformance.spark.split import PLAN_COLUMNS, plan_source
    from conformance.trace.reader import open_trace

    source = open_trace(args.path)
    if source.format != "parquet":
        print(f"bench_plan.py: {args.path} is not a Parquet trace", file=sys.stderr)
        return 2
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    _full, columns = _readers(("path", str(source.path.resolve())), plan_batch=1 << 18)

    def old() -> Any:
        batches = (
            batch
            for path in source.files
            for batch in pq.ParquetFile(path).iter_batches(
                batch_size=1 << 18, columns=list(PLAN_COLUMNS), use_threads=False
            )
        )
        return reference_plan(batches, args.parts)

    runs: dict[str, tuple[float, float, Any]] = {}
    for _round in range(args.repeat):  # in turn: the same load on both
        for name, run in (
            ("before (one thread)", old),
            (f"plan_trace ({cores} threads)", lambda: plan_trace(source, args.parts)),
            ("plan (one thread)", lambda: plan_source(columns, args.parts, threads=1)),
        ):
            c, w, result = timed(run)
            was = runs.get(name)
            runs[name] = (min(c, was[0]), min(w, was[1]), result) if was else (c, w, result)
    want = runs["before (one thread)"][2]
    for name, (c, w, plan) in runs.items():
        same = (
            plan is not None
            and all(np.array_equal(getattr(plan, f), getattr(want, f)) for f in ("scope", "identity"))
            and (plan.mixed, plan.one_pass) == (want.mixed, want.one_pass)
        )
        print(json.dumps({"plan": name, "cpu": round(c, 2), "wall": round(w, 2), "same_plan": same, "load": load()}))
    before = runs["before (one thread)"][0]
    now = runs[f"plan_trace ({cores} threads)"][0]
    ratio = before / now
    print(f"plan CPU, {args.parts} parts: before {before:.2f} s, plan_trace {now:.2f} s: {ratio:.2f}x (load {load()})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
