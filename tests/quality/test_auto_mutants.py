"""The automatic mutator of ``benchmarks/ast_mutants.py``: deterministic points, each one change, every one runs.

The measurement itself (``python benchmarks/auto_mutation.py``: 300 sampled mutants against the suite) is a
documented long command, not a CI test; these tests keep the mutator honest so that its figures mean what
they say: a point names one place, applying it changes that place only, and the result is valid Python.
"""

from __future__ import annotations

import ast
import sys
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
