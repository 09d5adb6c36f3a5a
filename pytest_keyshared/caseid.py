"""Stable case ids: the names that key the expectations and results files.

A pytest node id depends on where pytest was started (``conformance/cases/test_builtin.py::...`` from a
checkout, ``../site-packages/conformance/...`` from elsewhere), so it cannot key a file shipped with the
suite.  A case id depends only on the case:

* ``@pytest.mark.keyshared_case("my-id")`` names it explicitly;
* a test in ``conformance.cases.test_<area>`` is ``<area>/<name>``: a parametrized ``test_case`` is named by
  its parameter id (``builtin/join-while-pending``), any other test by its function name without ``test_``,
  plus ``[param]`` when parametrized (``dedup/resend[batched]``); underscores become hyphens;
* any other test (a team's own) keeps its node id.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CASES_PACKAGE", "case_id", "case_slug"]

CASES_PACKAGE = "conformance.cases"


def _hyphenate(name: str) -> str:
    return name.removeprefix("test_").replace("_", "-")


def case_id(item: Any) -> str:
    """The stable id of a collected test item (see the module docstring)."""
    marker = item.get_closest_marker("keyshared_case")
    if marker is not None and marker.args:
        return str(marker.args[0])
    module = getattr(getattr(item, "module", None), "__name__", "")
    if not module.startswith(CASES_PACKAGE + "."):
        return str(item.nodeid)
    area = _hyphenate(module.rsplit(".", 1)[-1])
    callspec = getattr(item, "callspec", None)
    function = getattr(item, "originalname", None) or item.name.split("[", 1)[0]
    if function == "test_case" and callspec is not None:
        return f"{area}/{callspec.id}"
    name = _hyphenate(function)
    return f"{area}/{name}" + (f"[{callspec.id}]" if callspec is not None else "")


def case_slug(case: str) -> str:
    """A directory name for a case's artifacts: ``builtin/join-while-pending`` -> ``builtin--join-while-pending``.

    ``/`` and ``::`` become ``--``; anything but letters, digits, ``-``, ``_`` and ``.`` becomes ``_``.
    """
    out = []
    for ch in case.replace("::", "/"):
        if ch.isalnum() or ch in "-_.":
            out.append(ch)
        elif ch == "/":
            out.append("--")
        else:
            out.append("_")
    slug = "".join(out).strip("._") or "case"
    return slug[:150]
