"""What the Spark engine's driver pays for a flat trace whose acks carry no key: before, it read the trace's plan
columns whole and planned the split (``plan_trace``); now the tasks resolve the acks' keys themselves and the
driver reads nothing of the trace.

    python benchmarks/bench_spark_driver.py --path TRACE.parquet [--parts 2] [--master 'local[2]'] [--python]

Each measure runs in a fresh process (peak RSS by ``getrusage``, the driver's own CPU — its threads, not the
JVM's or the Python workers'):

* ``plan``: the driver's plan alone, as ``keyshared check`` made it before (the old path's driver cost);
* ``spark``: ``check_with_spark`` on a local master, parts given: the driver process's peak RSS and CPU with its
  SparkContext (pyspark and py4j included), the wall of the check, the split it took and its verdict;
* ``--python``: the Python engine's verdict on the same trace, which the Spark verdict must equal (violations,
  counts, validity).

Use ``benchmarks/gen_trace.py`` and strip the keys of its acks and nacks for such a trace (its acks carry their
key): ``--strip-keys OUT`` writes that copy of ``--path`` first.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _usage() -> dict[str, float]:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {"cpu_s": usage.ru_utime + usage.ru_stime, "peak_rss_mb": usage.ru_maxrss / 1024}


def measure_plan(path: str, parts: int) -> dict[str, Any]:
    from conformance.spark.engine import plan_trace
    from conformance.trace.reader import open_trace

    start = time.perf_counter()
    plan = plan_trace(open_trace(path), parts)
    return {"wall_s": time.perf_counter() - start, "events": plan.events if plan else None, **_usage()}


def measure_spark(path: str, parts: int, master: str) -> dict[str, Any]:
    from conformance.spark import check_with_spark
    from conformance.spark.session import build_context, stop

    context = build_context(master, class_cache=True)
    try:
        start = time.perf_counter()
        verdict = check_with_spark(path, spark=context, parts=parts)
        wall = time.perf_counter() - start
    finally:
        stop(context)
    return {"wall_s": wall, "split": verdict.extra.get("split"), **_usage(), "verdict": _summary(verdict)}


def measure_python(path: str) -> dict[str, Any]:
    from conformance.checks.api import check_source
    from conformance.trace.reader import open_trace

    start = time.perf_counter()
    verdict = check_source(open_trace(path))
    return {"wall_s": time.perf_counter() - start, **_usage(), "verdict": _summary(verdict)}


def _summary(verdict: Any) -> dict[str, Any]:
    return {
        "validity": str(verdict.validity),
        "counts": {str(k): v for k, v in sorted(verdict.counts.items(), key=lambda kv: str(kv[0]))},
        "violations": sorted(str(v.identity()) for v in verdict.all_violations()),
    }


def strip_keys(path: str, out: str, *, no_dedup: bool = False) -> None:
    """``path`` with the keys of its acks and nacks removed (as recorders that write none), row groups kept;
    ``no_dedup``: its header saying deduplication is off (with it on, a part that judges ``stored_below_highest``
    sends the trace to be checked whole, which is not what this measures)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    source = pq.ParquetFile(path)
    rows = source.metadata.row_group(0).num_rows
    writer = None
    for batch in source.iter_batches(batch_size=rows):
        table = pa.Table.from_batches([batch])
        released = pc.is_in(table.column("op"), value_set=pa.array(["ack", "nack"]))
        keys = pc.if_else(released, pa.scalar(None, pa.string()), table.column("key"))
        table = table.set_column(table.schema.get_field_index("key"), "key", keys)
        if no_dedup:
            metadata = dict(table.schema.metadata or {})
            header = json.loads(metadata[b"keyshared.header"])
            header["deduplication"] = False
            table = table.replace_schema_metadata({**metadata, b"keyshared.header": json.dumps(header).encode()})
        if writer is None:
            writer = pq.ParquetWriter(out, table.schema, compression="snappy")
        writer.write_table(table, row_group_size=rows)
    if writer is not None:
        writer.close()


def _in_fresh_process(kind: str, args: argparse.Namespace) -> dict[str, Any]:
    command = [sys.executable, __file__, "--path", args.path, "--parts", str(args.parts), "--master", args.master]
    if kind == "strip":
        command += ["--strip-keys", args.strip_keys, *(["--no-dedup"] if args.no_dedup else [])]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KEYSHARED_BENCH_ONE": kind}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=3600, check=False)
    if done.returncode != 0:
        raise SystemExit(f"bench_spark_driver.py: the {kind} run failed:\n{done.stderr[-2000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--path", required=True, help="a Parquet trace whose acks carry no key")
    parser.add_argument("--parts", type=int, default=2)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--python", action="store_true", help="also the Python engine's verdict, to compare")
    parser.add_argument("--strip-keys", default=None, metavar="OUT", help="write --path without ack keys to OUT")
    parser.add_argument("--no-dedup", action="store_true", help="with --strip-keys: deduplication off in OUT")
    args = parser.parse_args(argv)
    one = os.environ.get("KEYSHARED_BENCH_ONE")
    if one:
        run = {"plan": lambda: measure_plan(args.path, args.parts), "python": lambda: measure_python(args.path)}
        run["spark"] = lambda: measure_spark(args.path, args.parts, args.master)
        if one == "strip":
            strip_keys(args.path, args.strip_keys, no_dedup=args.no_dedup)
            run["strip"] = lambda: {}
        print(json.dumps(run[one]()))
        return 0
    if args.strip_keys:  # in a process of its own: a child forked from a large parent starts with its peak RSS
        _in_fresh_process("strip", args)
        args.path = args.strip_keys
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    plan = _in_fresh_process("plan", args)
    print(f"driver plan (before): {plan['wall_s']:.1f} s wall, {plan['cpu_s']:.1f} s CPU, {plan['peak_rss_mb']:.0f} MB")
    spark = _in_fresh_process("spark", args)
    print(
        f"spark {args.master}, {args.parts} parts, split {spark['split']}: check {spark['wall_s']:.1f} s wall;"
        f" driver process {spark['cpu_s']:.1f} s CPU, {spark['peak_rss_mb']:.0f} MB peak"
    )
    if args.python:
        python = _in_fresh_process("python", args)
        same = python["verdict"] == spark["verdict"]
        print(f"python engine: {python['wall_s']:.1f} s, {python['peak_rss_mb']:.0f} MB; same verdict: {same}")
        if not same:
            print(json.dumps({"python": python["verdict"], "spark": spark["verdict"]}, indent=1))
            return 1
    print(f"load before: {load}, after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
