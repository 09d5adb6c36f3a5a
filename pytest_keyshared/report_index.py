"""``--keyshared-report DIR``: a page per case and the suite run's ``index.html``.

Runs on the controller at the end of the session, from the case records (each names its traces).  A case's
page draws the verdict the run saved beside its trace (``verdict.json``), or checks the trace again when there
is none.  The index holds the terminal's contract table, one row per case (outcome, contracts broken, the
expectation's reason, links to its pages) and, with a baseline, what changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_keyshared.report import report_name, write_index, write_report
from pytest_keyshared.results import CaseRecord

__all__ = ["suite_rows", "write_suite_report"]


def write_suite_report(out_dir: Path, state: Any, comparison: Any = None) -> Path:
    """Write every case's pages and ``index.html`` into ``out_dir``; return the index's path."""
    from pytest_keyshared.summary import baseline_lines, contract_table

    records = sorted(state.records, key=lambda r: r.case)
    pages = {record.case: _write_pages(out_dir, record) for record in records}
    title = f"keyshared conformance: target={state.target} seed={state.seed}"
    return write_index(
        out_dir,
        suite_rows(records, pages, comparison),
        title=title,
        contract_lines=contract_table(records),
        baseline_lines=baseline_lines(comparison) if comparison is not None else (),
    )


def _write_pages(out_dir: Path, record: CaseRecord) -> tuple[list[str], list[str]]:
    """The case's page file names, and a note per trace that could not be drawn."""
    names: list[str] = []
    problems: list[str] = []
    for n, trace in enumerate(record.traces):
        path = Path(trace)
        verdict = path.with_name("verdict.json")  # the driver's pair: trace.jsonl and verdict.json in one run dir
        saved = verdict if path.name == "trace.jsonl" and verdict.is_file() else None
        name = report_name(record.case, n)
        try:
            write_report(path, out_dir / name, saved, title=record.case, writer="pytest --keyshared-report")
        except Exception as exc:  # one case's page must not cost the others theirs
            problems.append(f"no page for {trace}: {type(exc).__name__}: {exc}")
            continue
        names.append(name)
    return names, problems


def suite_rows(
    records: Sequence[CaseRecord], pages: dict[str, tuple[list[str], list[str]]], comparison: Any = None
) -> list[dict[str, Any]]:
    """One index row per case (pure): outcome, broken contracts, reason, notes and what changed since the baseline."""
    changes: dict[str, list[str]] = {}
    if comparison is not None:
        for change in comparison.new_failures:
            changes.setdefault(change.case, []).append(
                f"NEW FAILURE [{change.contract}]: {change.before} -> {change.after}"
            )
        for change in comparison.fixes:
            changes.setdefault(change.case, []).append(f"FIXED [{change.contract}]: {change.before} -> {change.after}")
    rows = []
    for record in records:
        names, problems = pages.get(record.case, ([], []))
        notes = [n for n in (record.note, record.error) if n] + problems + changes.get(record.case, [])
        rows.append(
            {
                "case": record.case,
                "outcome": record.outcome,
                "broken": list(record.broken),
                "reason": record.reason,
                "note": "; ".join(notes),
                "pages": names,
                "changed": changes.get(record.case, []),
            }
        )
    return rows
