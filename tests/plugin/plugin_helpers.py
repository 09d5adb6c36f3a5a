"""Helpers the plugin tests import by name.

They live here, not in ``conftest.py``: every test directory has its own ``conftest.py``, all imported as the
module ``conftest``, so ``from conftest import ...`` finds whichever directory's conftest pytest loaded last and
breaks collection when several test directories are named in one call (``pytest tests/plugin tests/report``).
A conftest holds fixtures and hooks only.
"""

from __future__ import annotations

import pytest


def assert_in_order(result: pytest.RunResult, *fragments: str) -> None:
    """Each fragment appears, literally, in a line after the line of the previous one (no glob patterns:
    the summary is full of ``[contract]`` brackets, which fnmatch reads as character classes)."""
    lines = result.outlines
    at = 0
    for fragment in fragments:
        for index in range(at, len(lines)):
            if fragment in lines[index]:
                at = index + 1
                break
        else:
            shown = "\n".join(lines)
            raise AssertionError(f"{fragment!r} not found after line {at} of the output:\n{shown}")
