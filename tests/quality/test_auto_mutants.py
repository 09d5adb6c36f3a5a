"""The automatic mutator of ``benchmarks/ast_mutants.py``: deterministic points, each one change, every one runs.

The measurement itself (``python benchmarks/auto_mutation.py``: 300 sampled mutants against the suite) is a
documented long command, not a CI test; these tests keep the mutator honest so that its figures mean what
they say: a point names one place, applying it changes that place only, and the result is valid Python.
"""

from __future__ import annotations

import ast
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from ast_mutants import apply_point, points_of, points_under  # noqa: E402

SAMPLE = '''
"""A docstring is never mutated."""

__all__ = ["f"]
LIMIT = 10


class Gate:
    def __init__(self, n: int) -> None:
        self.n = n

    def __repr__(self) -> str:
        return f"Gate({self.n == 1})"

    def opens(self, x: int, ready: bool) -> bool:
        if x < LIMIT and ready:
            self.n += 1
            return max(x, self.n) >= 3
        raise ValueError(x == 2)
'''


def _ops(points: list) -> list[str]:
    return [p.operator for p in points]


def test_points_cover_the_operators_and_skip_what_describes() -> None:
    points = points_of(SAMPLE, "m.py")
    described = {(p.operator, p.original) for p in points}
    assert ("const", "10") in described  # a module constant
    assert ("if", "if x < LIMIT and ready") in described
    assert ("bool", "x < LIMIT and ready") in described
    assert ("cmp0", "x < LIMIT") in described
    assert ("aug", "self.n += 1") in described and ("delete", "self.n += 1") in described
    assert ("minmax", "max(x, self.n)") in described
    assert ("cmp0", "max(x, self.n) >= 3") in described
    # never: the docstring, __all__, __init__'s attribute set-up, __repr__, a raise's message
    assert not any(p.line in (2, 4) for p in points)
    assert not any(p.original == "self.n = n" for p in points)
    assert not any("== 1" in p.original or "x == 2" in p.original for p in points)


def test_the_same_source_gives_the_same_points() -> None:
    assert points_of(SAMPLE, "m.py") == points_of(SAMPLE, "m.py")
    ids = [p.id for p in points_of(SAMPLE, "m.py")]
    assert len(ids) == len(set(ids))


def test_applying_a_point_changes_that_node_only() -> None:
    base = ast.dump(ast.parse(SAMPLE))
    for point in points_of(SAMPLE, "m.py"):
        mutated = apply_point(SAMPLE, point)
        assert ast.dump(ast.parse(mutated)) != base, point.describe()
        assert point.replacement.split("(")[0] in mutated or point.operator in ("if", "delete"), point.describe()
    boundary = next(p for p in points_of(SAMPLE, "m.py") if p.original == "x < LIMIT")
    assert "x <= LIMIT" in apply_point(SAMPLE, boundary)
    negated = next(p for p in points_of(SAMPLE, "m.py") if p.operator == "if")
    assert "if not (x < LIMIT and ready)" in apply_point(SAMPLE, negated)


def test_a_point_from_other_source_is_refused() -> None:
    point = points_of(SAMPLE, "m.py")[0]
    with pytest.raises(ValueError, match="does not match"):
        apply_point("x = 1\n", point)


def test_every_point_of_the_model_applies_and_compiles() -> None:
    points = points_under(ROOT)
    assert len(points) > 1000  # the model's decision code: dispatchers, selectors, dedup, replication, storage
    sources: dict[str, str] = {}
    for point in points[::50]:  # one in fifty: most modules, in about a second
        source = sources.setdefault(point.path, (ROOT / point.path).read_text(encoding="utf-8"))
        compile(apply_point(source, point), point.path, "exec")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _child_and_grandchild(tmp_path: Path) -> list[str]:
    """A suite-run stand-in: a shell that starts a grandchild, writes both pids, and waits."""
    pids = tmp_path / "pids"
    return ["/bin/sh", "-c", f"sleep 60 & echo $$ $! > {pids}; wait"]


def _pids(tmp_path: Path) -> list[int]:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        text = (tmp_path / "pids").read_text() if (tmp_path / "pids").exists() else ""
        if len(text.split()) == 2:
            return [int(p) for p in text.split()]
        time.sleep(0.02)
    raise AssertionError("the stand-in did not start")


def _gone(pids: list[int]) -> bool:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.02)
    return not any(_alive(p) for p in pids)


def test_a_suite_run_that_times_out_is_ended_with_everything_it_started(tmp_path: Path) -> None:
    from auto_mutation import _run_child

    with pytest.raises(subprocess.TimeoutExpired):
        _run_child(_child_and_grandchild(tmp_path), tmp_path, dict(os.environ), 0.5)
    assert _gone(_pids(tmp_path))


def test_the_first_interrupt_ends_the_suite_run_and_its_children_at_once(tmp_path: Path) -> None:
    """^C reaches only the script (the child runs in its own session), which ends the child's group by pid and
    lets KeyboardInterrupt go on, well before the child would have finished."""
    from auto_mutation import _run_child

    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    started = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            _run_child(_child_and_grandchild(tmp_path), tmp_path, dict(os.environ), 30.0)
    finally:
        timer.cancel()
    assert time.monotonic() - started < 10
    assert _gone(_pids(tmp_path))


def test_show_prints_the_mutant_as_a_diff(capsys: pytest.CaptureFixture[str]) -> None:
    from auto_mutation import _show

    points = points_under(ROOT, ("reference_model/keyshared/consumer.py",))
    point = next(p for p in points if p.operator == "cmp0")
    assert _show(point.id, points) == 0
    out = capsys.readouterr().out
    assert out.startswith(point.describe())
    assert sum(line.startswith("-") and not line.startswith("---") for line in out.splitlines()) == 1
    assert _show("reference_model/nowhere.py:1:0:cmp0:0", points) == 2


def test_the_classification_file_names_sampled_points_with_a_class_and_a_reason() -> None:
    import tomllib
    from auto_mutation import SET_ASIDE

    data = tomllib.loads((ROOT / "benchmarks" / "auto_mutation_classified.toml").read_text())
    ids = {p.id for p in points_under(ROOT)}
    for pid, entry in data["mutant"].items():
        assert entry["class"] in (*SET_ASIDE, "dimension"), pid
        assert len(entry["reason"]) > 20, pid
        assert entry["class"] != "dimension" or entry.get("missing"), pid
        assert pid in ids or entry["digest"], pid
