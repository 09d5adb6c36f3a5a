"""Peak memory of the Python engine on one trace, flat against the bucketed layout (issue 27).

    python benchmarks/bench_buckets.py                          # 1M events, 16 buckets (generates into /tmp)
    python benchmarks/bench_buckets.py --events 3000000 --buckets 8 32

Generates a trace (``benchmarks/gen_trace.py --seed 7``: a clean run with violations of every kind planted,
deduplication on) as one Parquet file, converts it (``keyshared convert --buckets N``, timed), and runs
``keyshared check --json`` on each form in a fresh process, printing its wall time, its peak RSS (``wait4``'s
``ru_maxrss`` of that process alone) in MB and in bytes per event, the verdict's violation counts (which must
be the same in every form) and how the bucketed trace was split (the verdict's ``split``: ``bucket``, each
bucket checked on its own; ``whole``, a bucket's verdict could depend on another bucket's events, so the trace
was checked again in one part, as the Spark engine does).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def run(args: list[str]) -> tuple[float, float, str]:
    """``(seconds, peak RSS in MB, stdout)`` of ``python -m pytest_keyshared.cli ARGS`` in a fresh process."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest_keyshared.cli", *args], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    out = proc.stdout.read()
    _pid, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"keyshared {' '.join(args)} exited {proc.returncode}")
    return time.perf_counter() - started, usage.ru_maxrss / 1024, out


def without_dedup(flat: Path) -> Path:
    """A copy of the trace whose header says deduplication is off."""
    import pyarrow.parquet as pq

    out = flat.with_name(flat.stem + "-nodedup.parquet")
    if out.exists():
        return out
    table = pq.read_table(flat)
    metadata = dict(table.schema.metadata or {})
    header = json.loads(metadata[b"keyshared.header"])
    header["deduplication"] = False
    metadata[b"keyshared.header"] = json.dumps(header).encode()
    pq.write_table(table.replace_schema_metadata(metadata), out)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--buckets", type=int, nargs="*", default=[16])
    parser.add_argument("--dir", type=Path, default=Path("/tmp/keyshared-bench-buckets"))
    parser.add_argument(
        "--no-dedup",
        action="store_true",
        help="the same trace with deduplication off in its header (no identity rule then reaches across buckets)",
    )
    args = parser.parse_args(argv)
    args.dir.mkdir(parents=True, exist_ok=True)
    flat = args.dir / f"trace-{args.events}.parquet"
    if not flat.exists():
        subprocess.run(
            [
                sys.executable,
                str(HERE / "gen_trace.py"),
                "--events",
                str(args.events),
                "--out",
                str(flat),
                "--seed",
                "7",
            ],
            check=True,
        )
    if args.no_dedup:
        flat = without_dedup(flat)
    rows: list[tuple[str, float, float, dict[str, Any]]] = []
    seconds, mb, out = run(["check", str(flat), "--json"])
    rows.append(("flat Parquet", seconds, mb, json.loads(out)))
    for n in args.buckets:
        target = args.dir / f"{flat.stem}-b{n}"
        if not (target / "manifest.json").exists():
            started = time.perf_counter()
            subprocess.run([sys.executable, "-m", "pytest_keyshared.cli", "convert", str(flat), str(target),
                            "--buckets", str(n)], cwd=ROOT, check=True)  # fmt: skip
            print(f"converted into {n} buckets in {time.perf_counter() - started:.1f} s")
        seconds, mb, out = run(["check", str(target), "--json"])
        rows.append((f"{n} buckets", seconds, mb, json.loads(out)))
    events = rows[0][3]["events"]
    print(f"Python engine, {events:,} events (load {' '.join(f'{x:.1f}' for x in os.getloadavg())}):")
    for name, seconds, mb, verdict in rows:
        per_event = mb * 1024 * 1024 / events
        split = verdict.get("extra", {}).get("split", "")
        print(
            f"  {name:>14}: {seconds:6.1f} s, peak RSS {mb:7.0f} MB = {per_event:5.0f} bytes/event,"
            f" counts {verdict['counts']}{', split ' + split if split else ''}"
        )
    same = all(r[3]["counts"] == rows[0][3]["counts"] and r[3]["violations"] == rows[0][3]["violations"] for r in rows)
    print(f"  identical violations and counts: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
