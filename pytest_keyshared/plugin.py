"""The pytest plugin (entry point ``pytest_keyshared``).

Kept import-light: only the standard library and pytest at module level; targets, pulsar-client and
pyspark are imported inside the fixtures and hooks that need them.
"""

from __future__ import annotations

import pytest

__all__ = ["pytest_addoption"]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("keyshared", "Key_Shared conformance (pytest-keyshared)")
