"""Imports flow one way: ``pytest_keyshared`` -> ``conformance`` -> ``reference_model`` (docs/architecture.md).

Read from the source (every ``import``, also inside functions), so a lazy upward import is caught too.  The
target seam (``conformance.target``) is what lets ``conformance`` name targets without the plugin.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ORDER = ("reference_model", "conformance", "pytest_keyshared")


def imported_packages(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module.split(".")[0])
    return out


def test_no_package_imports_a_package_above_it() -> None:
    upward = []
    for rank, package in enumerate(ORDER):
        above = set(ORDER[rank + 1 :])
        for path in sorted((ROOT / package).rglob("*.py")):
            bad = imported_packages(path) & above
            if bad:
                upward.append(f"{path.relative_to(ROOT)} imports {', '.join(sorted(bad))}")
    assert upward == []


def test_the_target_is_the_seam() -> None:
    """Cases use the target through its protocol (no ``getattr`` probing); the driver never switches on a
    target's kind (each target opens its own session)."""
    cases = [p for p in sorted((ROOT / "conformance" / "cases").glob("*.py")) if "getattr(" in p.read_text()]
    assert cases == []
    driver = [
        p.name for p in sorted((ROOT / "pytest_keyshared" / "driver").glob("*.py")) if "target.kind" in p.read_text()
    ]
    assert driver == []
