"""Every test directory collects in one pytest call, from any working directory.

A test module must not import from ``conftest``: each test directory has its own ``conftest.py``, all loaded as
the module ``conftest``, so such an import finds whichever one pytest loaded last.  Naming several directories
in one call (``pytest tests/plugin tests/report``) then fails at collection, while each directory alone, and
the whole suite in its usual order, still collect.  Shared helpers live in a named module (``tests/support/``,
or ``<dir>/<dir>_helpers.py``).  Collecting only: a few seconds.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_every_test_directory_collects_in_one_call_from_elsewhere(tmp_path: Path) -> None:
    # Reverse order, so no directory can lean on one collected before it; absolute paths from a foreign cwd.
    directories = sorted((str(d) for d in TESTS.iterdir() if d.is_dir() and d.name != "__pycache__"), reverse=True)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *directories],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    tail = "\n".join(done.stdout.splitlines()[-30:])
    assert done.returncode == 0, f"collection failed (exit {done.returncode}):\n{tail}\n{done.stderr[-2000:]}"
    assert " collected" in tail and "error" not in tail.lower(), tail
