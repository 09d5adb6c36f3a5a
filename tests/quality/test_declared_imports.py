"""Every third-party module the product packages import is a declared dependency (pyproject.toml).

A test venv holds more than a user's (the ``test`` and ``spark`` extras bring pandas, numpy, ...), so an
undeclared import passes every other test and fails only after ``pip install .``: here it fails first.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("reference_model", "conformance", "pytest_keyshared")
#: Distribution name -> the top-level modules it provides (where they differ from the name).
PROVIDES = {
    "pulsar-client": {"pulsar", "_pulsar"},
    "pulsar-lite": {"pulsar_lite"},
    "pytest": {"pytest", "_pytest", "pluggy"},
    "pyspark": {"pyspark", "py4j"},
}


def _declared() -> dict[str, str]:
    """Top-level module -> where pyproject declares it (``dependencies`` or ``extra NAME``)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    groups = {"dependencies": project["dependencies"]}
    groups |= {f"extra {name}": deps for name, deps in project["optional-dependencies"].items()}
    out: dict[str, str] = {}
    for where, deps in groups.items():
        for dep in deps:
            dist = re.split(r"[<>=!~;\[ ]", dep, maxsplit=1)[0].strip().lower()
            for module in PROVIDES.get(dist, {dist.replace("-", "_")}):
                out.setdefault(module, where)
    return out


def _imports() -> dict[str, Path]:
    """Top-level module -> the first product file importing it (lazy imports inside functions included)."""
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    found.setdefault(name.split(".")[0], path)
    return found


def test_every_third_party_import_is_declared() -> None:
    declared = _declared()
    ours = set(PACKAGES)
    undeclared = {
        module: str(path.relative_to(ROOT))
        for module, path in _imports().items()
        if module not in ours and module not in sys.stdlib_module_names and module not in declared
    }
    assert undeclared == {}, f"imported but not declared in pyproject.toml: {undeclared}"


def test_the_base_install_covers_what_every_command_imports() -> None:
    """numpy is used by the report page, which `keyshared run` writes: it must come with the base install."""
    assert _declared()["numpy"] == "dependencies"
