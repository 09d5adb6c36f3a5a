"""The keyshared terminal summary, rendered as plain lines from case records (no terminal I/O here).

Three parts: a table of contracts with passed / failed / expected-to-fail counts; one block per failure
with its explained violations and the paths of its trace and scenario; and, with a baseline, the new
failures and fixes.  The plugin writes the lines through pytest's terminal reporter.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from pytest_keyshared.contracts import CONTRACTS
from pytest_keyshared.results import BaselineComparison, CaseRecord, contract_outcomes

__all__ = [
    "COLUMNS",
    "baseline_lines",
    "contract_counts",
    "contract_table",
    "expected_failure_lines",
    "failure_blocks",
]

#: Table columns, in order: (heading, outcomes counted in it).
COLUMNS: tuple[tuple[str, frozenset[str]], ...] = (
    ("passed", frozenset({"passed"})),
    ("failed", frozenset({"failed", "error"})),
    ("xfailed", frozenset({"xfailed"})),
    ("xpassed", frozenset({"xpassed"})),
    ("skipped", frozenset({"skipped"})),
)

#: Explanations longer than this many lines are cut in the summary (the trace and pytest's report have all).
MAX_EXPLANATION_LINES = 12


def contract_counts(records: Iterable[CaseRecord]) -> dict[str, dict[str, int]]:
    """contract -> column -> number of cases; every contract appears, in ``CONTRACTS`` order."""
    counts = {c: dict.fromkeys((h for h, _ in COLUMNS), 0) for c in CONTRACTS}
    for record in records:
        for contract, outcome in contract_outcomes(record).items():
            row = counts.setdefault(contract, dict.fromkeys((h for h, _ in COLUMNS), 0))
            for heading, outcomes in COLUMNS:
                if outcome in outcomes:
                    row[heading] += 1
    return counts


def contract_table(records: Sequence[CaseRecord]) -> list[str]:
    """The table of contracts; a case checking several contracts counts once under each."""
    counts = contract_counts(records)
    width = max(len("contract"), *(len(c) for c in counts))
    head = "contract".ljust(width) + "".join(f"  {h:>7}" for h, _ in COLUMNS)
    lines = [head, "-" * len(head)]
    totals = dict.fromkeys((h for h, _ in COLUMNS), 0)
    for contract, row in counts.items():
        lines.append(contract.ljust(width) + "".join(f"  {row[h]:>7}" for h, _ in COLUMNS))
        for h in totals:
            totals[h] += row[h]
    lines.append("-" * len(head))
    by_case = dict.fromkeys((h for h, _ in COLUMNS), 0)
    for record in records:
        for heading, outcomes in COLUMNS:
            if record.outcome in outcomes:
                by_case[heading] += 1
    lines.append(f"{'cases':<{width}}" + "".join(f"  {by_case[h]:>7}" for h, _ in COLUMNS))
    return lines


def _indent(text: str, prefix: str = "    ") -> list[str]:
    lines = text.rstrip().splitlines() or [""]
    if len(lines) > MAX_EXPLANATION_LINES:
        cut = len(lines) - MAX_EXPLANATION_LINES
        lines = [*lines[:MAX_EXPLANATION_LINES], f"... ({cut} more lines in the verdict file)"]
    return [prefix + line for line in lines]


def failure_blocks(records: Sequence[CaseRecord]) -> list[str]:
    """One block per failed case: what broke, why, and where its trace and scenario are saved."""
    lines: list[str] = []
    for record in records:
        if record.outcome not in ("failed", "error"):
            continue
        broken = ", ".join(record.broken) if record.broken else "no contract violation"
        lines.append(f"FAILED {record.case} [{broken}]  seed={record.seed}")
        if record.note:
            lines.append(f"  note: {record.note}")
        if record.reason:
            lines.append(f"  expectation: {record.reason}")
        if record.error and not record.violations:
            lines.append(f"  error: {record.error}")
        shown = len(record.violations)
        total = sum(record.counts.values())
        for violation in record.violations:
            lines.append(
                f"  {violation.kind} ({violation.contract})" + (f" key={violation.key}" if violation.key else "")
            )
            lines.extend(_indent(violation.explanation))
        if total > shown:
            more = ", ".join(f"{k}={n}" for k, n in sorted(record.counts.items()))
            lines.append(f"  ... {total - shown} more violation(s); all counts: {more}")
        for trace in record.traces:
            lines.append(f"  trace:    {trace}")
        for scenario in record.scenarios:
            lines.append(f"  scenario: {scenario}")
        lines.append("")
    return lines


def expected_failure_lines(records: Sequence[CaseRecord]) -> list[str]:
    """One line per expected failure (x) and unexpected pass (X), with the expectation's reason."""
    lines = []
    for record in records:
        if record.outcome == "xfailed":
            broken = ", ".join(record.broken) or "error"
            lines.append(f"XFAIL  {record.case} [{broken}]: {record.reason}")
        elif record.outcome == "xpassed":
            lines.append(f"XPASS  {record.case}: {record.reason}")
    return lines


def baseline_lines(comparison: BaselineComparison) -> list[str]:
    """New failures and fixes against the baseline, then what could not be compared."""
    base = comparison.baseline
    lines = [f"baseline: {base.source} (target={base.target} version={base.pulsar_version})"]
    lines.append(f"new failures: {len(comparison.new_failures)}   fixes: {len(comparison.fixes)}")
    for change in comparison.new_failures:
        lines.append(f"  NEW FAILURE {change.case} [{change.contract}]: {change.before} -> {change.after}")
    for change in comparison.fixes:
        lines.append(f"  FIXED       {change.case} [{change.contract}]: {change.before} -> {change.after}")
    if comparison.only_in_baseline:
        lines.append(f"  not run now ({len(comparison.only_in_baseline)}): {_short(comparison.only_in_baseline)}")
    if comparison.only_in_run:
        lines.append(f"  not in baseline ({len(comparison.only_in_run)}): {_short(comparison.only_in_run)}")
    return lines


def _short(names: Sequence[str], limit: int = 6) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f", ... ({len(names) - limit} more)" if len(names) > limit else "")


def skip_reasons(records: Sequence[CaseRecord]) -> Mapping[str, int]:
    """Skip reason -> number of cases, so the summary can say why parts of the suite did not run."""
    reasons: dict[str, int] = {}
    for record in records:
        if record.outcome == "skipped" and record.note:
            reasons[record.note] = reasons.get(record.note, 0) + 1
    return reasons
