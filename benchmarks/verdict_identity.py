"""Verdicts byte-identical before and after a change of the engine: this checkout against a commit, trace by trace.

    python benchmarks/verdict_identity.py --ref 777ac4b                       # stored + builders + 2,000 generated
    python benchmarks/verdict_identity.py --ref 777ac4b --quick               # stored + builders only (seconds)
    python benchmarks/verdict_identity.py --ref 777ac4b --generated 0 --bench 3000000 10000000
    python benchmarks/verdict_identity.py --ref 777ac4b --compiled            # both trees built with mypyc first

The traces are written once, by this checkout, into ``--dir``, then checked by both trees (``trees.py``: the
commit's tree exported, this checkout copied), each in a child process with its own engine; every verdict's JSON
text is hashed and the two lists must be equal line for line.  The traces:

* *stored*: every trace file under ``tests/`` (``*.jsonl``, ``*.jsonl.gz``, ``*.parquet``);
* *builders*: every trace the test helpers of ``tests/support/`` build (their public functions that return a
  ``TraceBuilder``, or a list of ``(name, builder, ...)``, called with each combination of their ``bool``
  arguments and ``step`` 0 and 10), written as JSON Lines;
* *generated*: ``--generated N`` traces of the reference-vs-engine differential (``raced_traces.generate``,
  the four families in turn, seeds from ``--seed``);
* *bench*: ``--bench SIZE ...`` traces of ``gen_trace.py`` (Parquet; 3M events take about 15 s to write).

Each trace up to ``--live-max`` events is checked twice per tree: stored (``check_trace(path)``, the batch path)
and live (``StreamingChecker.feed`` event by event); larger ones by the batch path only.  The engine runs from
source (``KEYSHARED_PURE=1``) unless ``--compiled`` builds both trees with mypyc (minutes each) and runs those.
Exit 0 when every verdict is identical, 1 with the first differences listed.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from trees import ROOT, build, env_for, export_checkout, export_ref, running_build  # noqa: E402

SUPPORT = ROOT / "tests" / "support"
#: the test helpers whose public builder functions make traces (tests/support/)
BUILDER_MODULES = ("ack_timeout_traces", "batch_traces", "chunk_traces", "crash_traces", "exemption_traces",
                   "small_traces")  # fmt: skip


def stored_traces() -> list[Path]:
    """Every trace file kept under ``tests/``."""
    found: list[Path] = []
    for pattern in ("*.jsonl", "*.jsonl.gz", "*.parquet"):
        found += (ROOT / "tests").rglob(pattern)
    return sorted(set(found))


def _calls(fn: Any) -> list[dict[str, Any]]:
    """The argument combinations a builder is called with: each bool both ways, ``step`` 0 and 10."""
    combos: list[dict[str, Any]] = [{}]
    for name, param in inspect.signature(fn).parameters.items():
        if param.annotation in (bool, "bool"):
            combos = [dict(c, **{name: v}) for c in combos for v in (False, True)]
        elif name == "step":
            combos = [dict(c, **{name: v}) for c in combos for v in (0, 10)]
        elif param.default is inspect.Parameter.empty:
            return []  # an argument we cannot choose
    return combos


def write_builders(out: Path) -> list[Path]:
    """Every trace the helpers of ``tests/support/`` build, as JSON Lines in ``out``."""
    import importlib

    from conformance.trace.builder import TraceBuilder

    sys.path.insert(0, str(SUPPORT))
    paths = []
    for module_name in BUILDER_MODULES:
        module = importlib.import_module(module_name)
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if fn.__module__ != module_name or name.startswith("_"):
                continue
            for kwargs in _calls(fn):
                try:
                    made = fn(**kwargs)
                except Exception:
                    continue
                items = made if isinstance(made, list) else [("", made)]
                for n, item in enumerate(items):
                    builder = item[1] if isinstance(item, tuple) else item
                    if not isinstance(builder, TraceBuilder):
                        continue
                    tag = "-".join(f"{k}={v}" for k, v in sorted(kwargs.items())) or "default"
                    paths.append(builder.write(out / f"{module_name}.{name}.{tag}.{n}.jsonl"))
    return paths


def write_generated(out: Path, count: int, seed: int) -> list[Path]:
    """``count`` traces of the differential's generator (the four families in turn), as JSON Lines in ``out``."""
    sys.path.insert(0, str(SUPPORT))
    from raced_traces import FAMILIES, generate

    paths = []
    for n in range(count):
        family = FAMILIES[n % len(FAMILIES)]
        header, events = generate(family, seed * 1000 + n)
        path = out / f"generated-{n:05d}-{family}.jsonl"
        path.write_text("\n".join([header.to_json(), *(e.to_json() for e in events)]) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


def write_bench(out: Path, sizes: list[int]) -> list[Path]:
    from gen_trace import generate

    paths = []
    for size in sizes:
        path = out / f"bench-{size}.parquet"
        if not path.exists():
            generate(size, path)
        paths.append(path)
    return paths


def run_child(listing: Path, live_max: int) -> None:
    """In a tree: one line per trace of ``listing``, ``path<TAB>batch hash<TAB>live hash`` (``-`` when not run)."""
    from conformance.checks import check_trace
    from conformance.checks.streaming import StreamingChecker
    from conformance.trace.reader import open_trace

    def digest(verdict: Any) -> str:
        return hashlib.sha256(verdict.to_json_text().encode()).hexdigest()[:20]

    for line in listing.read_text().splitlines():
        path, _, size = line.partition("\t")
        batch = digest(check_trace(path))
        live = "-"
        if int(size) <= live_max:
            source = open_trace(path)
            checker = StreamingChecker(source.header)
            try:
                for event in source.events():
                    checker.feed(event)
                live = digest(checker.finish())
            except Exception as exc:
                live = f"raised {type(exc).__name__}: {str(exc)[:80]}"
        print(f"{path}\t{batch}\t{live}", flush=True)


def _events_in(path: Path) -> int:
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return int(pq.ParquetFile(path).metadata.num_rows)
    if path.name.endswith(".gz"):
        import gzip

        with gzip.open(path, "rt") as fh:
            return sum(1 for _ in fh) - 1
    with path.open() as fh:
        return sum(1 for _ in fh) - 1


def verdicts(tree: Path, listing: Path, *, pure: bool, live_max: int) -> list[str]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", str(listing), "--live-max", str(live_max)], cwd=tree,
        env=env_for(tree, pure=pure), capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"verdict_identity: the check in {tree} failed:\n{done.stderr[-3000:]}")
    return done.stdout.splitlines()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ref", default="777ac4b", help="the commit to compare with (default: before issue 29)")
    parser.add_argument("--generated", type=int, default=2000, help="differential traces to generate")
    parser.add_argument("--seed", type=int, default=20261129)
    parser.add_argument("--bench", type=int, nargs="*", default=[], help="gen_trace.py sizes (events)")
    parser.add_argument("--quick", action="store_true", help="stored and builder traces only")
    parser.add_argument("--compiled", action="store_true", help="build both trees with mypyc and run those")
    parser.add_argument("--live-max", type=int, default=20_000, help="also check live up to this many events")
    parser.add_argument("--dir", type=Path, default=None, help="where traces and trees go (default: a temp dir)")
    parser.add_argument("--child", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        run_child(args.child, args.live_max)
        return 0
    sys.path.insert(0, str(ROOT))  # the traces are written by this checkout (the child imports its own tree)
    work = args.dir or Path(tempfile.mkdtemp(prefix="verdict-identity-"))
    traces = work / "traces"
    traces.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    paths = stored_traces() + write_builders(traces / "builders")
    if not args.quick:
        (traces / "generated").mkdir(exist_ok=True)
        paths += write_generated(traces / "generated", args.generated, args.seed)
        paths += write_bench(traces, args.bench)
    listing = work / "traces.txt"
    listing.write_text("".join(f"{p}\t{_events_in(p)}\n" for p in paths))
    print(f"{len(paths)} traces written in {time.perf_counter() - started:.0f}s ({work})", flush=True)
    before, after = export_ref(args.ref, work / "before"), export_checkout(work / "after")
    if args.compiled:
        for tree in (before, after):
            started = time.perf_counter()
            build(tree, work / f"build-{tree.name}.log")
            print(f"built {tree.name} with mypyc in {time.perf_counter() - started:.0f}s", flush=True)
    results = {}
    for tree in (before, after):
        what = running_build(tree, pure=not args.compiled)
        started = time.perf_counter()
        results[tree.name] = verdicts(tree, listing, pure=not args.compiled, live_max=args.live_max)
        name = (tree / ".tree").read_text().strip()
        print(f"{tree.name}: {name}, engine {what}: {len(results[tree.name])} verdicts in"
              f" {time.perf_counter() - started:.0f}s", flush=True)  # fmt: skip
    differ = [(b, a) for b, a in zip(results["before"], results["after"], strict=True) if b != a]
    live = sum(1 for line in results["after"] if not line.endswith("\t-"))
    summary = {"traces": len(paths), "checked live too": live, "differ": len(differ)}
    print(json.dumps(summary))
    for b, a in differ[:20]:
        print(f"before {b}\nafter  {a}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
