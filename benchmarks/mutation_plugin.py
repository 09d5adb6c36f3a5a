"""A pytest plugin that plants one mutant of the reference model (``KEYSHARED_MUTANT=<name>``) before the run.

Loaded with ``-p mutation_plugin`` (``benchmarks/`` on ``PYTHONPATH``) by :mod:`mutation`; without the
variable it does nothing.  The mutant is applied at configure time, in the process that runs the model target
and the checker, so the ``model`` target of that run is the mutated broker.
"""

from __future__ import annotations

import os

import pytest


def pytest_configure(config: pytest.Config) -> None:
    name = os.environ.get("KEYSHARED_MUTANT")
    if name:
        from mutants import apply

        apply(name)


def pytest_report_header(config: pytest.Config) -> str | None:
    name = os.environ.get("KEYSHARED_MUTANT")
    return f"keyshared mutant: {name}" if name else None
