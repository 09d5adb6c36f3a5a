"""The pytest side of ``auto_mutation.py``: which model lines each case executes, and running only some cases.

Loaded with ``-p automut_plugin`` (``benchmarks/`` on ``PYTHONPATH``); without its variables it does nothing.

- ``KEYSHARED_AUTOMUT_REACH=FILE``: record, per test, the lines of ``reference_model`` it executed (lines run
  while no test runs, at import and collection, are recorded under ``"<import>"``), written to FILE as JSON
  ``{nodeid: {path: [line, ...]}}`` with paths relative to the package's parent.  It traces with
  ``sys.settrace``, only inside the model's files, so the suite runs a few times slower: once per target.
- ``KEYSHARED_AUTOMUT_SELECT=FILE``: a JSON list of node ids; every other collected test is deselected, so a
  mutant runs only the cases that reach its line.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

_MARK = os.sep + "reference_model" + os.sep


class _Reach:
    def __init__(self) -> None:
        self.current = "<import>"
        self.lines: dict[str, dict[str, set[int]]] = {}
        self._files: dict[str, str | None] = {}

    def _relative(self, filename: str) -> str | None:
        rel = self._files.get(filename)
        if rel is None and filename not in self._files:
            at = filename.rfind(_MARK)
            rel = filename[at + 1 :].replace(os.sep, "/") if at >= 0 else None
            self._files[filename] = rel
        return rel

    def tracer(self, frame: FrameType, event: str, arg: Any) -> Any:
        rel = self._relative(frame.f_code.co_filename)
        if rel is None:
            return None
        lines = self.lines.setdefault(self.current, {}).setdefault(rel, set())
        lines.add(frame.f_lineno)

        def local(frame: FrameType, event: str, arg: Any) -> Any:
            if event == "line":
                lines_now = self.lines.setdefault(self.current, {}).setdefault(rel, set())
                lines_now.add(frame.f_lineno)
            return local

        return local

    def dump(self, path: Path) -> None:
        data = {test: {f: sorted(ls) for f, ls in files.items()} for test, files in self.lines.items()}
        path.write_text(json.dumps(data, sort_keys=True))


_reach: _Reach | None = None


def pytest_configure(config: pytest.Config) -> None:
    global _reach
    if os.environ.get("KEYSHARED_AUTOMUT_REACH"):
        _reach = _Reach()
        sys.settrace(_reach.tracer)
        threading.settrace(_reach.tracer)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    if _reach is not None:
        _reach.current = item.nodeid
    try:
        return (yield)
    finally:
        if _reach is not None:
            _reach.current = "<import>"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    select = os.environ.get("KEYSHARED_AUTOMUT_SELECT")
    if not select:
        return
    wanted = set(json.loads(Path(select).read_text()))
    kept = [item for item in items if item.nodeid in wanted]
    dropped = [item for item in items if item.nodeid not in wanted]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = kept


def pytest_unconfigure(config: pytest.Config) -> None:
    target = os.environ.get("KEYSHARED_AUTOMUT_REACH")
    if _reach is not None and target:
        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]
        _reach.dump(Path(target))
