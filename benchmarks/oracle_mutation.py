"""How many selector mutants the model-vs-oracle comparison kills.

For each selector mutant (``mutants.py``, area ``selectors``, and this project's ``oracle_mutants.py``) a fresh
process plants the mutant in the model and runs the differential test
``tests/oracles/test_selector_oracle_differential.py`` (the CI test, its bounded examples, stopping at the first
failure); a mutant is killed when the test fails.  The unmutated model must pass first (the baseline).

    python benchmarks/oracle_mutation.py              # every selector mutant, both sets
    python benchmarks/oracle_mutation.py --mutants ring-ignores-name-index,name-index-never-released

Prints each mutant's fate and the figures per set; exit 0 when every mutant is killed, 1 otherwise, 2 when the
baseline fails.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TEST = ROOT / "tests" / "oracles" / "test_selector_oracle_differential.py"
sys.path[:0] = [str(HERE), str(ROOT)]  # this checkout's model, not an installed one

from mutants import MUTANTS, Mutant  # noqa: E402
from oracle_mutants import ORACLE_MUTANTS  # noqa: E402

SETS: dict[str, list[Mutant]] = {
    "mutants.py": [m for m in MUTANTS if m.area == "selectors"],
    "oracle_mutants.py": ORACLE_MUTANTS,
}


def child(name: str) -> int:
    """In the child process: plant ``name`` (none for ``-``) and run the differential test."""
    import pytest

    if name != "-":
        next(m for group in SETS.values() for m in group if m.name == name).apply()
    return int(pytest.main([str(TEST), "-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]))


def run(name: str, timeout_s: float) -> tuple[int, float, str]:
    started = time.monotonic()
    path = os.pathsep.join([str(ROOT), str(HERE), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env = dict(os.environ, KEYSHARED_PURE="1", PYTHONPATH=path)
    try:
        proc = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--child", name],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return -1, time.monotonic() - started, f"timed out after {timeout_s:.0f} s"
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("E ") and "disagreements" not in ln]
    return proc.returncode, time.monotonic() - started, (lines[0][2:].strip()[:150] if lines else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mutants", help="comma-separated names (default: every selector mutant)")
    parser.add_argument("--timeout", type=float, default=240.0, help="bound on one run, seconds")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(args.child)
    wanted = None if not args.mutants else {n.strip() for n in args.mutants.split(",") if n.strip()}
    plan = {s: [m for m in group if wanted is None or m.name in wanted] for s, group in SETS.items()}
    if not any(plan.values()):
        print(f"no selector mutant named {sorted(wanted or ())}", file=sys.stderr)
        return 2
    code, secs, note = run("-", args.timeout)
    print(f"baseline (unmutated model): {'passes' if code == 0 else 'FAILS'} ({secs:.1f} s) {note}", flush=True)
    if code != 0:
        return 2
    started = time.monotonic()
    survivors = 0
    for source, group in plan.items():
        killed = 0
        for m in group:
            code, secs, note = run(m.name, args.timeout)
            disagreed = code == 1 and note.startswith("assert [")  # the comparison failed, not the mutant
            fate = "KILLED  " if disagreed else "SURVIVED" if code == 0 else f"ERROR {code}"
            killed += disagreed
            survivors += not disagreed
            print(f"{fate} {m.name:40} {secs:5.1f} s  {note or m.bug}", flush=True)
        if group:
            print(f"  {source}: {killed} of {len(group)} selector mutants killed by the oracle comparison", flush=True)
    print(f"total time {time.monotonic() - started:.1f} s")
    return 0 if survivors == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
