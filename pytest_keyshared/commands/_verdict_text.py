"""The one readable summary of a verdict every ``keyshared`` command prints (``check``, ``run``, ``replay``,
``soak``; ``report`` prints its first line).

So a user reads the same words whichever command judged the trace: the verdict line, the counts, the notes,
the first explanations of each kind, and for a kind cut short ``... and 108 more misassigned (violation);
run1/verdict.json lists them all``: how many were cut, of which kind, and where every one is listed (``--json``
for ``check``; the run's ``verdict.json`` for the commands that write one).  The wording itself is
:meth:`conformance.verdict.Verdict.render`'s; this module decides what each command passes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_keyshared.commands._errors import EXIT_UNKNOWN, EXIT_VALID, verdict_exit

__all__ = ["RUN_EXAMPLES", "verdict_headline", "verdict_lines", "verdict_summary"]

#: Explanations shown per kind in the summary of a command that ran a workload (its verdict.json has them all).
RUN_EXAMPLES = 3


def verdict_summary(verdict: Any, *, listed_in: str | Path, max_per_kind: int) -> str:
    """The verdict rendered for people, each kind cut after ``max_per_kind`` explanations with the count cut and
    ``listed_in`` (where all of them are) named on the line that says so."""
    return str(verdict.render(max_per_kind=max(max_per_kind, 0), listed_in=str(listed_in)))


def verdict_lines(
    verdict: Any, allowed: list[str], verdict_path: str | Path, *, max_per_kind: int = RUN_EXAMPLES
) -> list[str]:
    """The verdict part of a run's summary (``run``, ``replay``, ``soak``): the word the exit code gives (VALID,
    INVALID or UNKNOWN: never VALID for a trace not fully judged), then :func:`verdict_summary`, indented."""
    if verdict is None:
        return ["  verdict: unknown (no checker available to judge the trace)"]
    counts: dict[str, int] = {}
    for v in verdict.violations:
        kind = str(getattr(v.kind, "value", v.kind))
        counts[kind] = counts.get(kind, 0) + 1
    code = verdict_exit(verdict)
    if code == EXIT_UNKNOWN:  # the run did not let every contract be judged: never shown as VALID
        lines = ["  verdict: UNKNOWN (no violation found, but not every contract could be judged)"]
    elif code == EXIT_VALID:
        lines = ["  verdict: VALID" + (f" (allowed: {', '.join(allowed)})" if allowed else "")]
    else:
        lines = [f"  verdict: INVALID: {', '.join(f'{k} x{n}' for k, n in sorted(counts.items()))}"]
    if hasattr(verdict, "render"):
        rendered = verdict_summary(verdict, listed_in=verdict_path, max_per_kind=max_per_kind)
        lines.extend(f"    {line}" if line else "" for line in rendered.rstrip().splitlines())
    return lines


def verdict_headline(verdict: Mapping[str, Any]) -> str:
    """The first line of :func:`verdict_summary` for a verdict as its JSON (a stored ``verdict.json``), with the
    counts found: what ``keyshared report`` prints."""
    from conformance.verdict import headline

    line = headline(
        valid=bool(verdict.get("valid", True)),
        validity=str(verdict.get("validity", "valid")),
        crashed=verdict.get("crashed", ()) or (),
        events=int(verdict.get("events", 0) or 0),
        profile=str((verdict.get("profile") or {}).get("name", "?")),
        engine=str(verdict.get("engine", "python")),
    )
    found = {k: n for k, n in (verdict.get("counts") or {}).items() if n}
    return line + ("; found: " + ", ".join(f"{k}={n}" for k, n in found.items()) if found else "")
