"""The selector oracle is a second implementation only if it shares no code with the model: it imports nothing
from ``reference_model`` (nor from ``conformance`` or ``pytest_keyshared``, which import the model).

Read from the source (every ``import``, also inside functions), as ``tests/quality/test_import_direction.py``
reads the packages, and checked again at run time in a fresh interpreter.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ORACLE = Path(__file__).resolve().parent / "selector_oracle"
FORBIDDEN = {"reference_model", "conformance", "pytest_keyshared"}


def imported_packages(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in {
            "import_module",
            "__import__",
        }:
            out.add("<dynamic import>")
    return out


def test_the_oracle_imports_nothing_from_the_model() -> None:
    files = sorted(ORACLE.rglob("*.py"))
    assert files, f"no oracle source under {ORACLE}"
    bad = {p.name: sorted(imported_packages(p) & (FORBIDDEN | {"<dynamic import>"})) for p in files}
    assert {name: found for name, found in bad.items() if found} == {}


def test_importing_the_oracle_loads_no_model_module() -> None:
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import selector_oracle;"
        " print(sorted(m for m in sys.modules if m.split('.')[0] in {'reference_model', 'conformance',"
        " 'pytest_keyshared'}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(ORACLE.parent)], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"
