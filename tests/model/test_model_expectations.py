"""The whole conformance suite against the model at the newest patch of every release line, and with the classic
dispatcher, each with its shipped expectations file (``conformance/expectations/model-*.toml``).

Every file must say exactly what Apache Pulsar's fix history says that release still breaks
(``conformance/known_bugs.py`` and ``conformance/gated_cases.py``, asked through the model's own gates), and a
run of the suite must agree: the cases listed fail as expected (a strict ``fails`` that passes fails the run),
every other case passes.  Each run is a subprocess (a fresh pytest session per target, as a user runs it);
about 4 s of CPU per target.  The root seed is fixed (1) so that ``generated/model-programs`` draws the same
programs on every CI run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import conformance.expectations
from conformance.gated_cases import GATED_CASES
from conformance.known_bugs import KNOWN_BUGS
from pytest_keyshared.expectations import bundled_expectations, load_expectations
from reference_model.versions import MIN_MODEL_VERSION, RELEASES, has_classic_dispatcher

FOLDER = Path(conformance.expectations.__file__).parent
#: (target, its file or None when the target passes everything)
TARGETS = [
    ("model:2.8", "model-2.8.toml"),
    ("model:2.10", "model-2.10.toml"),
    ("model:3.0", "model-3.0.toml"),
    ("model:3.3", "model-3.3.toml"),
    ("model:4.0", "model-4.0.toml"),
    ("model:4.1", "model-4.1.toml"),
    ("model:4.0:classic", "model-4.0-classic.toml"),
    ("model:5.0", None),
]


def _expected_failures(major: int, minor: int, implementation: str) -> set[str]:
    release = f"{major}.{minor}.{RELEASES[(major, minor)]}"
    bugs = {f"known-bugs/{b.case}" for b in KNOWN_BUGS if b.shown is None and b.affects(release, implementation)}
    return bugs | {c.case for c in GATED_CASES if c.affects(release, implementation)}


@pytest.mark.parametrize("path", sorted(FOLDER.glob("model-*.toml")), ids=lambda p: p.name)
def test_each_model_file_says_what_the_fix_history_says(path: Path) -> None:
    expectations = load_expectations(path)
    line = path.stem.removeprefix("model-").removesuffix("-classic")
    major, minor = (int(p) for p in line.split("."))
    assert expectations.target == f"model:{line}" + (":classic" if path.stem.endswith("-classic") else "")
    implementation = "classic" if path.stem.endswith("-classic") or major < 4 else "pip379"
    assert set(expectations.cases) == _expected_failures(major, minor, implementation)
    assert all(e.strict and e.contracts for e in expectations.cases.values())
    assert bundled_expectations(expectations.target) == path


@pytest.mark.parametrize("line", sorted(RELEASES), ids=lambda line: f"{line[0]}.{line[1]}")
def test_every_line_with_a_known_bug_at_its_newest_patch_ships_a_file(line: tuple[int, int]) -> None:
    major, minor = line
    if (major, minor) < MIN_MODEL_VERSION.line:
        return
    for implementation in ("classic", "pip379") if major >= 4 else ("classic",):
        if implementation == "classic" and not has_classic_dispatcher(f"{major}.{minor}"):
            continue  # 5.0 removed it (apache/pulsar#26687): model:5.0:classic is refused
        target = f"model:{major}.{minor}" + (":classic" if implementation == "classic" and major >= 4 else "")
        expected = _expected_failures(major, minor, implementation)
        found = bundled_expectations(target)
        assert (found is not None) == bool(expected), target


@pytest.mark.parametrize(("target", "file"), TARGETS, ids=[t for t, _ in TARGETS])
def test_the_suite_runs_clean_with_the_expectations(target: str, file: str | None, tmp_path: Path) -> None:
    results = tmp_path / "results.json"
    command = [
        sys.executable, "-m", "pytest", "-p", "pytest_keyshared", "--pyargs", "conformance",
        f"--keyshared-target={target}", f"--keyshared-results={results}",
        f"--keyshared-artifacts={tmp_path / 'artifacts'}", "--keyshared-seed=1",
        "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
    ]  # fmt: skip
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    cases = json.loads(results.read_text(encoding="utf-8"))["cases"]
    failed = {case for case, record in cases.items() if record["outcome"] not in ("passed", "skipped")}
    expected = set(load_expectations(FOLDER / file).cases) if file else set()
    assert failed == expected
    assert all(cases[case]["outcome"] == "xfailed" for case in expected)
