"""A pytest plugin for one collection-only subprocess: write the id of every collected conformance case to a file.

``tests/quality/test_coverage_doc.py`` loads it with ``-p case_ids_plugin`` (``tests/support`` on the path), so the
ids come from the same rule that names cases everywhere else (``pytest_keyshared.caseid.case_id``), not a copy of it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

#: the environment variable naming the file to write (one case id a line)
OUT_ENV = "KEYSHARED_CASE_IDS_OUT"


def pytest_collection_finish(session: Any) -> None:
    from pytest_keyshared.caseid import case_id

    out = os.environ.get(OUT_ENV)
    if out:
        Path(out).write_text("".join(case_id(item) + "\n" for item in session.items), encoding="utf-8")
