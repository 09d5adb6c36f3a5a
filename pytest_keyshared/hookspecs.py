"""Hooks other plugins and ``conftest.py`` files can implement to extend pytest-keyshared.

Registered by the plugin's ``pytest_addhooks``.  Example, a team testing its own broker build::

    # conftest.py
    import contextlib

    def pytest_keyshared_make_target(config, spec, artifacts_dir):
        if spec == "my-broker":
            return contextlib.nullcontext(MyBrokerTarget(...))   # anything with the Target surface
        return None                                             # let the next implementation decide
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_keyshared.results import CaseRecord

__all__ = ["pytest_keyshared_case_finished", "pytest_keyshared_make_target"]

hookspec = pytest.hookspec


@hookspec(firstresult=True)
def pytest_keyshared_make_target(
    config: pytest.Config, spec: str, artifacts_dir: Path
) -> AbstractContextManager[Any] | None:
    """Return a context manager that starts the target named ``spec`` and yields it, or ``None``.

    Called once per session (once per xdist worker) by the ``keyshared_target`` fixture, before the
    built-in targets (``pytest_keyshared.targets.open_target``) are tried.  The context manager must stop
    whatever it started on exit, also when the run fails.  ``artifacts_dir`` is where the target's logs go.
    """


@hookspec
def pytest_keyshared_case_finished(config: pytest.Config, record: CaseRecord) -> None:
    """Called on the controller (the only process under xdist) once a conformance case is done.

    ``record`` holds the case id, its contracts and their outcomes, the violations found (explained) and the
    paths of the saved traces and scenarios: enough to feed a dashboard or a ticket.
    """
