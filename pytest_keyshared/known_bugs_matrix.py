"""The known-bug matrix: each known-bug case run against the reference model at the releases around its fix.

For every case of :data:`conformance.known_bugs.KNOWN_BUGS` and every release line of its fix history, the case
runs against ``model:<release>`` at the line's first patch, the last patch before the fix and the fix release
(one seed, the suite's case seed for seed 0).  ``python -m pytest_keyshared.known_bugs_matrix`` prints
``docs/known-bugs.md``; ``--write`` replaces the page; ``--check`` exits 1 when the page is out of date.

A run that breaks a contract is ``fails``; one that passes is ``passes``.  What Pulsar's history expects is
``fails`` before the fix and ``passes`` from it; :func:`disagreements` lists the cells where the model differs
(none may, except for bugs the table marks as not shown, whose reason the page prints).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from conformance.known_bugs import KNOWN_BUGS, KnownBug
from reference_model.versions import MIN_MODEL_VERSION, RELEASES, has_classic_dispatcher, parse_version

__all__ = ["Cell", "cells", "disagreements", "main", "render", "run_cell"]

PAGE = Path(__file__).resolve().parents[1] / "docs" / "known-bugs.md"
ROOT_SEED = 0


@dataclass(frozen=True, slots=True)
class Cell:
    """One run of the matrix: a case at a release, what Pulsar's history expects and what the model did."""

    bug: KnownBug
    line: str
    role: str  #: "first patch", "last before fix", "fix release", "newest (classic)"
    release: str
    implementation: str  #: pip379 or classic
    expected: str  #: fails / passes
    observed: str = ""  #: fails / passes, filled by run_cell
    broken: tuple[str, ...] = ()

    @property
    def target(self) -> str:
        return f"model:{self.release}:{self.implementation}"


#: Lines whose newest release a case with no fix in the model's range runs on.
PINNED_LINES: tuple[tuple[int, int], ...] = ((2, 8), (2, 9), (2, 10), (3, 0), (3, 3), (4, 0), (4, 1), (5, 0))
#: The newest release line: every case also runs on its newest release (5.0 has no classic dispatcher,
#: apache/pulsar#26687, so a classic bug's case runs there on the PIP-379 dispatcher and must pass).
NEWEST_LINE: tuple[int, int] = max(RELEASES)


def _pinned_implementation(bug: KnownBug, major: int, minor: int) -> str:
    """The dispatcher a case runs on at a line's newest release: the bug's own where the line has it."""
    classic = bug.implementation == "classic" or major < 4
    return "classic" if classic and has_classic_dispatcher(f"{major}.{minor}") else "pip379"


def _line(text: str) -> tuple[int, int]:
    major, minor = text.split(".")
    return int(major), int(minor)


def _expected(bug: KnownBug, release: str, implementation: str) -> str:
    return "fails" if bug.affects(release, implementation) else "passes"


def _implementation(bug: KnownBug, release: str, *, fixed_release: bool) -> str:
    v = parse_version(release)
    if not v.at_least(4, 0):
        return "classic"
    if bug.implementation == "classic" and not (bug.fixed_by_pip379 and fixed_release):
        return "classic"
    return "pip379"


def cells(bugs: Sequence[KnownBug] = KNOWN_BUGS) -> Iterator[Cell]:
    """The runs of the matrix, without results: per line, first patch, last before the fix, fix release."""
    for bug in bugs:
        in_range = [line for line in bug.fixed_in if _line(line) >= MIN_MODEL_VERSION.line]
        if not in_range:  # fixed before the model's oldest release, or never fixed: the case must pass today
            for major, minor in PINNED_LINES:
                release = f"{major}.{minor}.{RELEASES[(major, minor)]}"
                impl = _pinned_implementation(bug, major, minor)
                yield Cell(bug, f"{major}.{minor}", "newest", release, impl, _expected(bug, release, impl))
            continue
        for line, fix in bug.fixed_in.items():
            major, minor = _line(line)
            if (major, minor) < MIN_MODEL_VERSION.line:
                continue
            newest = RELEASES[(major, minor)]
            fix_patch = parse_version(fix).patch if fix else None
            last_before = (fix_patch - 1) if fix_patch is not None else newest
            rows: list[tuple[str, int, str]] = []
            if last_before >= 0:
                rows.append(("first patch", 0, "fails"))
                if last_before > 0:
                    rows.append(("last before fix", last_before, "fails"))
            if fix_patch is not None:
                rows.append(("fix release", fix_patch, "passes"))
            for role, patch, _ in rows:
                release = f"{line}.{patch}"
                impl = _implementation(bug, release, fixed_release=role == "fix release")
                yield Cell(bug, line, role, release, impl, _expected(bug, release, impl))
            if bug.fixed_by_pip379 and fix_patch is not None:
                release = f"{line}.{newest}"
                yield Cell(bug, line, "newest, classic", release, "classic", _expected(bug, release, "classic"))
        if NEWEST_LINE not in {_line(line) for line in bug.fixed_in}:
            major, minor = NEWEST_LINE
            release = f"{major}.{minor}.{RELEASES[NEWEST_LINE]}"
            impl = _pinned_implementation(bug, major, minor)
            yield Cell(bug, f"{major}.{minor}", "newest", release, impl, _expected(bug, release, impl))


def run_cell(cell: Cell, out_dir: Path) -> Cell:
    """Run the cell's case on its model target; ``fails`` when any contract is broken."""
    from dataclasses import replace

    from conformance.cases._support import area_scenarios, case_problems, profile_of
    from conformance.checks import check_trace
    from pytest_keyshared.driver import run_scenario
    from pytest_keyshared.state import case_seed
    from pytest_keyshared.targets import open_target

    scenario = next(s for s in area_scenarios("known_bugs") if s.name == cell.bug.case)
    case = f"known-bugs/{scenario.name}"
    work = out_dir / f"{scenario.name}@{cell.release}-{cell.implementation}"
    with open_target(cell.target, artifacts_dir=work / "target") as target:
        result = run_scenario(target, scenario, seed=case_seed(ROOT_SEED, case), out_dir=work, live_check=False)
    profile = profile_of(scenario)
    verdict = result.verdict if profile is None else check_trace(result.trace_path, profile=profile)
    kinds = {str(getattr(v.kind, "value", v.kind)) for v in verdict.violations} if verdict is not None else {"?"}
    kinds |= {kind for _, kind, _ in case_problems(scenario, result, progress=True)}
    broken = sorted(kinds)
    return replace(cell, observed="fails" if broken else "passes", broken=tuple(str(b) for b in broken))


def run_all(bugs: Sequence[KnownBug] = KNOWN_BUGS) -> list[Cell]:
    with tempfile.TemporaryDirectory(prefix="keyshared-known-bugs-") as tmp:
        return [run_cell(cell, Path(tmp)) for cell in cells(bugs)]


def disagreements(results: Sequence[Cell]) -> list[Cell]:
    """Cells where the model does not do what Pulsar's history says, for bugs the model claims to show.

    A bug marked not shown must still pass wherever Pulsar has the fix (no false alarm on a fixed release).
    """
    return [c for c in results if c.observed != c.expected and (c.bug.shown is None or c.expected == "passes")]


def render(results: Sequence[Cell]) -> str:
    """The Markdown page."""
    out = [
        "# Known bugs on the reference model, release by release",
        "",
        "Generated by `python -m pytest_keyshared.known_bugs_matrix --write` from `conformance/known_bugs.py` (Apache",
        "Pulsar's fix history of each known-bug case) and runs of each case against the model; do not edit by hand.",
        "`tests/model/test_known_bugs_matrix.py` fails when this page is out of date or when the model disagrees",
        "with the history.",
        "",
        "Each case runs at each release line's first patch, the last patch before the fix and the fix release.",
        "*Pulsar* is what the fix history says (a release before the fix has the bug, so the case `fails`); *model*",
        "is what the run against `model:RELEASE:IMPLEMENTATION` gave, with the violation kinds it found. Bugs fixed",
        "only by PIP-379 also run on the newest 4.x release with the classic dispatcher",
        "(`subscriptionKeySharedUseClassicPersistentImplementation=true`), which still has them. Every case also",
        "runs on the newest release of the newest line (5.0.0); 5.0 removed the classic dispatcher",
        "(apache/pulsar#26687), so a classic bug's case runs there on the PIP-379 dispatcher and passes.",
        "",
        "Generated programs that fail on the classic model fail through these bugs (#23307, #23803) or #10750 on",
        "2.8: `tests/model/test_generated_classic.py` matches each violation to the bug the dispatcher ran into,",
        'and docs/model.md ("Generated programs on the classic dispatcher") lists the programs.',
        "",
    ]
    shown_count = sum(
        1
        for bug in KNOWN_BUGS
        if any(c.bug is bug and c.expected == "fails" and c.observed == "fails" for c in results)
    )
    out += [f"{shown_count} of {len(KNOWN_BUGS)} known bugs fail on the model at a release before their fix.", ""]
    for bug in KNOWN_BUGS:
        rows = [c for c in results if c.bug is bug]
        fixes = ", ".join(f"{line}: {fix or 'never'}" for line, fix in bug.fixed_in.items())
        history = f"{bug.issue}, fixed by {bug.fix}" + (f" ({fixes})." if fixes else ".")
        out += [f"## known-bugs/{bug.case}", "", history, ""]
        if bug.unfixed:
            out += ["Open in Apache Pulsar: every release has it, so the case runs on each line's newest release.", ""]
        if bug.shown is not None:
            out += [f"Not shown on the model: {bug.shown}.", ""]
        out += ["| line | release | role | implementation | Pulsar | model | broken |", "|---|---|---|---|---|---|---|"]
        for c in rows:
            mark = "" if c.observed == c.expected else " (differs)"
            out.append(
                f"| {c.line} | {c.release} | {c.role} | {c.implementation} | {c.expected} | {c.observed}{mark} |"
                f" {', '.join(c.broken) or '-'} |"
            )
        out.append("")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_keyshared.known_bugs_matrix", description=__doc__)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help=f"replace {PAGE}")
    mode.add_argument("--check", action="store_true", help="exit 1 when the page is out of date")
    args = parser.parse_args(argv)
    page = render(run_all()) + "\n"
    if args.write:
        PAGE.write_text(page, encoding="utf-8")
        print(f"wrote {PAGE}")
        return 0
    if args.check:
        current = PAGE.read_text(encoding="utf-8") if PAGE.is_file() else ""
        if current != page:
            print(f"{PAGE} is out of date: run python -m pytest_keyshared.known_bugs_matrix --write", file=sys.stderr)
            return 1
        return 0
    sys.stdout.write(page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
