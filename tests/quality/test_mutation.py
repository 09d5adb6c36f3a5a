"""The suite's detection power, in CI: a subset of the model mutants of ``benchmarks/mutants.py`` must die.

``benchmarks/mutation.py --fast`` plants a subset of the mutants, one or two per feature (its ``FAST`` table: PIP-379
draining, replay hashes, a stall, each selector, replication snapshots and remote cursors, the classic dispatcher,
deduplication, ack timeout, non-persistent topics, delayed delivery, maxUnackedMessagesPerConsumer, message expiry,
dead letters on a partitioned topic, ...), runs each against only the cases built to see it
(after the same cases passed on the unmutated model), and exits 1 if any survives.  The full run (every mutant,
the whole suite) is the measurement: ``python benchmarks/mutation.py`` (docs/conformance.md, "Detection power").
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def fast_subset_size() -> int:
    """How many mutants ``--fast`` plants: the length of ``FAST``, read without importing the script."""
    import ast

    tree = ast.parse((ROOT / "benchmarks" / "mutation.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == "FAST":
            assert isinstance(node.value, ast.Tuple)
            return len(node.value.elts)
    raise AssertionError("benchmarks/mutation.py has no FAST table")


def test_the_fast_mutants_are_all_killed(tmp_path: Path) -> None:
    # from a directory other than the checkout: the script finds its mutants and the suite by itself
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "mutation.py"), "--fast", "--min-rate", "1.0"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    n = fast_subset_size()
    assert n >= 14, "the fast subset shrank"
    assert f"killed {n} of {n} mutants: 100.0%" in proc.stdout, proc.stdout
    # the baselines (the same cases on the unmutated model) fail nothing: a kill is a new failure
    assert "baseline model -k" in proc.stdout and ": 0 failing case(s)" in proc.stdout, proc.stdout
