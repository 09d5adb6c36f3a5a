"""Automatic mutants of the reference model: operator mutations found by walking the source's syntax tree.

The hand-written mutants of ``mutants.py`` were chosen by the people who wrote the cases, so they measure the
cases' intent.  These are chosen by nobody: every place in the model's dispatchers, selectors, deduplication,
replication and broker bookkeeping where a classic mutation operator applies (a comparison's boundary, a
boolean connective, a negated condition, an off-by-one constant, a deleted update, min for max, ...) is a
mutation point, and a seeded sample of them is run against the suite by ``auto_mutation.py``.

Pure and deterministic: the same source gives the same points in the same order, and a point's id
(``path:line:col:operator:index``) names it stably across runs of the same source, so a fates file written by
one run can be compared with the next.  Applying a point re-parses the source, changes that one node and
unparses the module (comments and layout are lost; the semantics of every other line are kept).
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DEFAULT_MODULES", "Point", "apply_point", "points_of", "points_under"]

#: The model's decision code: where a plausible broker bug lives.  Versions, errors, the clock and the
#: read-only views are left out (their mutants change what is reported, not what a broker does).
DEFAULT_MODULES: tuple[str, ...] = (
    "reference_model/hashing.py",
    "reference_model/selectors",
    "reference_model/keyshared",
    "reference_model/dedup",
    "reference_model/replication",
    "reference_model/storage",
    "reference_model/broker/subscription.py",
    "reference_model/broker/topic.py",
    "reference_model/broker/consumer.py",
    "reference_model/broker/producer.py",
    "reference_model/broker/model_broker.py",
    "reference_model/broker/housekeeping.py",
)

_SWAP_CMP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
_SWAP_ARITH: dict[type[ast.operator], type[ast.operator]] = {ast.Add: ast.Sub, ast.Sub: ast.Add}
#: Functions whose bodies only describe (messages, reprs): mutating them changes no behaviour a client sees.
_DESCRIPTIVE = ("__repr__", "__str__", "describe", "explain", "__rich_repr__")


@dataclass(frozen=True)
class Point:
    """One mutation: ``operator`` applied to the ``index``-th candidate node of ``path`` (walk order)."""

    path: str  #: relative to the project root, with forward slashes
    line: int
    col: int
    end_line: int
    operator: str  #: cmp, bool, not, arith, aug, const, bool-const, if, delete, minmax, loop
    index: int
    original: str  #: the node's source, shortened
    replacement: str  #: what it becomes, shortened

    @property
    def id(self) -> str:
        return f"{self.path}:{self.line}:{self.col}:{self.operator}:{self.index}"

    @property
    def area(self) -> str:
        parts = self.path.split("/")
        return parts[1].removesuffix(".py") if len(parts) > 2 else parts[-1].removesuffix(".py")

    def describe(self) -> str:
        return f"{self.id}: {self.original} -> {self.replacement}"


def _short(node: ast.AST | None) -> str:
    text = "pass" if node is None else ast.unparse(node)
    text = " ".join(text.split())
    return text if len(text) <= 60 else text[:57] + "..."


class _Walker:
    """Visits a module in a fixed order and yields (node, operator, replacement maker) for each candidate.

    ``apply`` uses the same walk on a fresh parse, so the index of a candidate is its identity.
    """

    def __init__(self) -> None:
        #: one entry per enclosing function: True inside ``__init__``, whose attribute assignments are not
        #: deleted (a missing attribute fails every test at once: a crash, not a plausible broker bug)
        self.in_init: list[bool] = []

    def candidates(self, tree: ast.Module) -> Iterator[tuple[ast.AST, str, ast.AST | None, ast.AST | None]]:
        """(node, operator, parent statement list holder or None, the replacement node or None for delete)."""
        yield from self._visit_body(tree.body, top=True)

    def _visit_body(self, body: list[ast.stmt], *, top: bool = False) -> Iterator[tuple]:  # type: ignore[type-arg]
        for i, stmt in enumerate(body):
            if i == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                continue  # a docstring
            yield from self._visit_stmt(stmt, body, i, top=top)

    def _visit_stmt(self, stmt: ast.stmt, body: list[ast.stmt], i: int, *, top: bool) -> Iterator[tuple]:  # type: ignore[type-arg]
        if isinstance(stmt, ast.Import | ast.ImportFrom | ast.Raise | ast.Assert | ast.Global | ast.Nonlocal):
            return
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            if stmt.name in _DESCRIPTIVE or stmt.name.startswith(("describe", "explain", "_describe", "_explain")):
                return
            self.in_init.append(stmt.name == "__init__")
            yield from self._visit_body(stmt.body)
            self.in_init.pop()
            return
        if isinstance(stmt, ast.ClassDef):
            yield from self._visit_body(stmt.body)
            return
        if isinstance(stmt, ast.If):
            if _is_type_checking(stmt.test):
                return
            yield stmt, "if", None, None
            yield from self._visit_expr(stmt.test)
            yield from self._visit_body(stmt.body)
            yield from self._visit_body(stmt.orelse)
            return
        if isinstance(stmt, ast.AnnAssign):
            if top and isinstance(stmt.target, ast.Name) and stmt.target.id == "__all__":
                return
            if stmt.value is not None:
                yield from self._visit_expr(stmt.value)
            return
        if isinstance(stmt, ast.Assign):
            if top and any(isinstance(t, ast.Name) and t.id == "__all__" for t in stmt.targets):
                return
            if (
                not top
                and not (self.in_init and self.in_init[-1])
                and all(isinstance(t, ast.Attribute | ast.Subscript) for t in stmt.targets)
            ):
                yield stmt, "delete", None, None
            yield from self._visit_expr(stmt.value)
            return
        if isinstance(stmt, ast.AugAssign):
            yield stmt, "delete", None, None
            if type(stmt.op) in _SWAP_ARITH:
                yield stmt, "aug", None, None
            yield from self._visit_expr(stmt.value)
            return
        if isinstance(stmt, ast.Expr):
            if isinstance(stmt.value, ast.Call) and not top:
                yield stmt, "delete", None, None
            yield from self._visit_expr(stmt.value)
            return
        if isinstance(stmt, ast.Break | ast.Continue):
            yield stmt, "loop", None, None
            return
        # for, while, with, try, return, match...: visit their expressions and bodies
        for field_name, value in ast.iter_fields(stmt):
            if field_name in ("body", "orelse", "finalbody") and isinstance(value, list):
                yield from self._visit_body(value)
            elif field_name == "handlers":
                for handler in value:
                    yield from self._visit_body(handler.body)
            elif field_name == "cases":
                for case in value:
                    yield from self._visit_body(case.body)
            elif isinstance(value, ast.expr):
                yield from self._visit_expr(value)
            elif field_name == "items":
                for item in value:
                    yield from self._visit_expr(item.context_expr)

    def _visit_expr(self, expr: ast.expr) -> Iterator[tuple]:  # type: ignore[type-arg]
        for node in _expr_walk(expr):
            if isinstance(node, ast.Compare):
                for k, op in enumerate(node.ops):
                    if type(op) in _SWAP_CMP:
                        yield node, f"cmp{k}", None, None
            elif isinstance(node, ast.BoolOp):
                yield node, "bool", None, None
            elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
                yield node, "not", None, None
            elif isinstance(node, ast.BinOp) and type(node.op) in _SWAP_ARITH:
                yield node, "arith", None, None
            elif isinstance(node, ast.Constant) and type(node.value) is int:
                yield node, "const", None, None
            elif isinstance(node, ast.Constant) and type(node.value) is bool:
                yield node, "bool-const", None, None
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("min", "max")
                and len(node.args) >= 2
            ):
                yield node, "minmax", None, None


def _expr_walk(expr: ast.expr) -> Iterator[ast.AST]:
    """Pre-order over an expression, not into strings, f-strings, lambdas' defaults or keyword names."""
    stack: list[ast.AST] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.JoinedStr):
            continue
        yield node
        children = [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr | ast.keyword)]
        flat: list[ast.AST] = []
        for c in children:
            flat.append(c.value if isinstance(c, ast.keyword) else c)
        stack.extend(reversed(flat))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _mutate(node: ast.AST, operator: str) -> ast.AST | None:
    """The mutated copy of ``node`` (``None``: delete the statement)."""
    if operator.startswith("cmp"):
        assert isinstance(node, ast.Compare)
        k = int(operator[3:])
        ops = list(node.ops)
        ops[k] = _SWAP_CMP[type(ops[k])]()
        return ast.Compare(left=node.left, ops=ops, comparators=node.comparators)
    if operator == "bool":
        assert isinstance(node, ast.BoolOp)
        return ast.BoolOp(op=ast.Or() if isinstance(node.op, ast.And) else ast.And(), values=node.values)
    if operator == "not":
        assert isinstance(node, ast.UnaryOp)
        return node.operand
    if operator == "arith":
        assert isinstance(node, ast.BinOp)
        return ast.BinOp(left=node.left, op=_SWAP_ARITH[type(node.op)](), right=node.right)
    if operator == "aug":
        assert isinstance(node, ast.AugAssign)
        return ast.AugAssign(target=node.target, op=_SWAP_ARITH[type(node.op)](), value=node.value)
    if operator == "const":
        assert isinstance(node, ast.Constant)
        return ast.Constant(value=node.value + 1)
    if operator == "bool-const":
        assert isinstance(node, ast.Constant)
        return ast.Constant(value=not node.value)
    if operator == "if":
        assert isinstance(node, ast.If)
        return ast.If(test=ast.UnaryOp(op=ast.Not(), operand=node.test), body=node.body, orelse=node.orelse)
    if operator == "minmax":
        assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        other = "max" if node.func.id == "min" else "min"
        return ast.Call(func=ast.Name(id=other, ctx=ast.Load()), args=node.args, keywords=node.keywords)
    if operator == "loop":
        return ast.Continue() if isinstance(node, ast.Break) else ast.Break()
    if operator == "delete":
        return None
    raise ValueError(f"unknown operator {operator!r}")


def _describe_replacement(node: ast.AST, operator: str) -> str:
    if operator == "if":
        assert isinstance(node, ast.If)
        return f"if not ({_short(node.test)})"
    if operator == "delete":
        return "pass"
    mutated = _mutate(node, operator)
    return _short(mutated)


def _describe_original(node: ast.AST, operator: str) -> str:
    if operator == "if":
        assert isinstance(node, ast.If)
        return f"if {_short(node.test)}"
    return _short(node)


def points_of(source: str, path: str) -> list[Point]:
    """Every mutation point of one module's source, in walk order."""
    tree = ast.parse(source)
    points: list[Point] = []
    for index, (node, operator, _, _) in enumerate(_Walker().candidates(tree)):
        points.append(
            Point(
                path=path,
                line=getattr(node, "lineno", 0),
                col=getattr(node, "col_offset", 0),
                end_line=getattr(node, "end_lineno", getattr(node, "lineno", 0)) or 0,
                operator=operator,
                index=index,
                original=_describe_original(node, operator),
                replacement=_describe_replacement(node, operator),
            )
        )
    return points


def points_under(root: Path, modules: tuple[str, ...] = DEFAULT_MODULES) -> list[Point]:
    """The points of every module named (files, or folders walked for ``*.py``), sorted by path."""
    files: list[Path] = []
    for name in modules:
        where = root / name
        files.extend(sorted(where.rglob("*.py")) if where.is_dir() else [where])
    points: list[Point] = []
    for file in sorted(set(files)):
        rel = file.relative_to(root).as_posix()
        points.extend(points_of(file.read_text(encoding="utf-8"), rel))
    return points


class _Replace(ast.NodeTransformer):
    def __init__(self, target: ast.AST, operator: str) -> None:
        self.target = target
        self.operator = operator

    def visit(self, node: ast.AST) -> ast.AST | None:
        if node is self.target:
            mutated = _mutate(node, self.operator)
            if mutated is None:
                return ast.copy_location(ast.Pass(), node)
            return ast.copy_location(mutated, node)
        return super().visit(node)


def apply_point(source: str, point: Point) -> str:
    """``source`` with ``point`` applied; raises ``ValueError`` if the point does not belong to this source."""
    tree = ast.parse(source)
    found = None
    for index, (node, operator, _, _) in enumerate(_Walker().candidates(tree)):
        if index == point.index:
            found = (node, operator)
            break
    if found is None or found[1] != point.operator or getattr(found[0], "lineno", 0) != point.line:
        raise ValueError(f"point {point.id} does not match this source")
    mutated = _Replace(found[0], found[1]).visit(tree)
    ast.fix_missing_locations(mutated)
    return ast.unparse(mutated) + "\n"


def source_digest(source: str) -> str:
    """A short digest of a module's source: a fates file is comparable only with points of the same source."""
    return hashlib.sha256(source.encode()).hexdigest()[:12]
