"""docs/coverage.md has one honest row per listed Pulsar test method, names only real cases, and prints true figures.

The methods are data beside the doc (``docs/coverage-methods.toml``: class -> path, commit, methods). The case ids
come from collecting the suite (``--collect-only`` in a subprocess, a few seconds) with the rule that names cases
everywhere (``pytest_keyshared.caseid``); a unit test a row names must be a test function in that file.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest
from case_ids_plugin import OUT_ENV

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "coverage.md"
METHODS = ROOT / "docs" / "coverage-methods.toml"
STATUSES = ("covered", "partial", "not covered", "not applicable")
CASE_RE = re.compile(r"^[a-z0-9-]+/[A-Za-z0-9._-]+$")
UNIT_RE = re.compile(r"^(tests/[\w/]+\.py)::(\w+)$")
FIGURES_RE = re.compile(
    r"\*\*(\d+) of (\d+) applicable methods covered \((\d+\.\d)%\)\*\*; (\d+) partial, (\d+) not covered;"
    r" (\d+) of (\d+) methods not applicable\."
)


@cache
def listed() -> dict[str, list[str]]:
    data = tomllib.loads(METHODS.read_text(encoding="utf-8"))
    return {name: list(entry["methods"]) for name, entry in data["classes"].items()}


@cache
def rows() -> list[tuple[str, str, str, str]]:
    text = DOC.read_text(encoding="utf-8").split("## Rows", 1)[1]
    out = []
    for line in text.splitlines():
        if not line.startswith("| ") or line.startswith(("| class |", "|---")):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        assert len(cells) == 4, f"a row needs 4 cells: {line}"
        out.append((cells[0], cells[1], cells[2], cells[3]))
    return out


@cache
def case_ids(tmp: str) -> frozenset[str]:
    out = Path(tmp) / "case-ids.txt"
    support = str(ROOT / "tests" / "support")
    path = os.pathsep.join(p for p in (support, os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, OUT_ENV: str(out), "KEYSHARED_PURE": "1", "PYTHONPATH": path}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "pytest_keyshared", "-p", "case_ids_plugin",
         "--pyargs", "conformance", "--keyshared-target=model", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    ids = frozenset(out.read_text(encoding="utf-8").split())
    assert len(ids) > 50, ids
    return ids


def references(reason: str) -> list[str]:
    return re.findall(r"`([^`]+)`", reason)


def test_one_row_per_listed_method_and_no_other() -> None:
    seen = [(cls, method) for cls, method, _s, _r in rows()]
    assert len(seen) == len(set(seen)), "a method has two rows"
    expected = {(cls, m) for cls, methods in listed().items() for m in methods}
    assert set(seen) - expected == set(), "rows for methods coverage-methods.toml does not list"
    assert expected - set(seen) == set(), "listed methods without a row"


def test_every_status_is_one_of_four_and_says_what_is_missing_or_why() -> None:
    for cls, method, status, reason in rows():
        where = f"{cls}.{method}"
        assert status in STATUSES, where
        refs = [r for r in references(reason) if CASE_RE.match(r) or UNIT_RE.match(r)]
        if status == "covered":
            assert any(CASE_RE.match(r) for r in refs), f"{where}: covered names no case"
        if status == "partial":
            assert refs and "missing:" in reason, f"{where}: a partial row names what it has and what is missing"
        if status == "not covered":
            assert "missing:" in reason, f"{where}: an uncovered row says what is missing"
        if status == "not applicable":
            assert len(reason) > 20, f"{where}: a not-applicable row says why"


def test_every_case_and_unit_test_a_row_names_exists(tmp_path_factory: pytest.TempPathFactory) -> None:
    ids = case_ids(str(tmp_path_factory.mktemp("cases")))
    missing = []
    for cls, method, _status, reason in rows():
        for ref in references(reason):
            unit = UNIT_RE.match(ref)
            if unit:
                path = ROOT / unit.group(1)
                if not path.is_file() or f"def {unit.group(2)}(" not in path.read_text(encoding="utf-8"):
                    missing.append(f"{cls}.{method}: {ref}")
            elif CASE_RE.match(ref) and ref not in ids:
                missing.append(f"{cls}.{method}: {ref}")
    assert not missing, "rows name cases or tests that do not exist:\n" + "\n".join(missing)


def test_the_printed_figures_follow_from_the_rows() -> None:
    text = DOC.read_text(encoding="utf-8")
    found = FIGURES_RE.search(text)
    assert found, "docs/coverage.md prints no figures line"
    count = {s: sum(1 for r in rows() if r[2] == s) for s in STATUSES}
    total = len(rows())
    applicable = total - count["not applicable"]
    expected = (
        count["covered"], applicable, f"{100 * count['covered'] / applicable:.1f}", count["partial"],
        count["not covered"], count["not applicable"], total,
    )  # fmt: skip
    assert tuple(int(g) if g.isdigit() else g for g in found.groups()) == expected
    for cls, methods in listed().items():
        per = [r[2] for r in rows() if r[0] == cls]
        line = re.search(rf"^\| `{cls}` \| [^|]+ \| (\d+) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \|$", text, re.MULTILINE)
        if not methods:
            assert line is None or line.group(1) == "0", cls
            continue
        assert line, f"no figures row for {cls}"
        assert [int(g) for g in line.groups()] == [len(per), *(per.count(s) for s in STATUSES)], cls
