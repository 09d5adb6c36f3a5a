"""The suite's detection power, in CI: a subset of the model mutants of ``benchmarks/mutants.py`` must die.

``benchmarks/mutation.py --fast`` plants fourteen of the mutants (PIP-379 draining, replay hashes, a stall, each
selector, replication snapshots, remote cursors never or late updated, the classic dispatcher, a failed write
that keeps its pushed id, an ack timeout that never fires, a redelivery count never raised), runs each against
only the cases built to see it (after the same cases passed on the unmutated model), and exits 1 if any
survives.  The full run (every mutant, the whole suite) is the measurement: ``python benchmarks/mutation.py``
(docs/conformance.md, "Detection power").
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


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
    killed = re.search(r"killed (\d+) of (\d+) mutants: 100\.0%", proc.stdout)
    assert killed is not None and killed.group(1) == killed.group(2) and int(killed.group(1)) >= 14, proc.stdout
    # the baselines (the same cases on the unmutated model) fail nothing: a kill is a new failure
    assert "baseline model -k" in proc.stdout and ": 0 failing case(s)" in proc.stdout, proc.stdout
