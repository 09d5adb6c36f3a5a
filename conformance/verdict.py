"""The verdict on a trace: valid or not under a profile, with every violation explained.

Validity has three states (Jepsen's ``merge-valid``: invalid > unknown > valid):

* ``invalid`` — a violation of a kind the profile forbids;
* ``unknown`` — none, but a forbidden kind could not be judged (``undelivered`` on a run that was not
  drained; ``misassigned`` when the membership could not be rebuilt), or a check crashed (Jepsen's
  ``check-safe``: the check is named in ``crashed`` and the exception in the notes); the ``strict`` profile
  counts an unjudged kind as invalid;
* ``valid`` — otherwise.

``valid`` (a bool) is ``validity != "invalid"`` — except under ``strict``, where unknown is invalid too, and
after a crashed check, which is never a pass.  The ``keyshared`` commands exit 4 on ``unknown``
(:attr:`Verdict.exit_code`), whatever the profile.
Violations of permitted kinds are kept apart in ``allowed``; ``counts`` covers both.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from conformance.profiles import Profile
from conformance.violations import KINDS, Kind, Violation

__all__ = ["MAX_RENDERED_PER_KIND", "Validity", "Verdict", "build_verdict", "cut_line", "headline"]

#: Explanations rendered per kind in the readable summary (all of them are in the JSON output).
MAX_RENDERED_PER_KIND = 5


class Validity(str, Enum):
    VALID = "valid"
    INVALID = "invalid"
    UNKNOWN = "unknown"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


def _order(v: Violation) -> tuple[Any, ...]:
    return (v.events, KINDS.index(v.kind), v.subscription or "", v.key or "", v.consumers)


@dataclass(frozen=True)
class Verdict:
    """What the checker concluded about one trace."""

    validity: Validity
    violations: tuple[Violation, ...]  #: kinds the profile forbids
    allowed: tuple[Violation, ...]  #: kinds the profile permits (reported, not failures)
    counts: Mapping[str, int]  #: every kind -> how many were found (forbidden and allowed)
    events: int  #: events checked
    profile: Profile
    notes: tuple[str, ...] = ()
    unjudged: tuple[Kind, ...] = ()  #: kinds that could not be judged on this trace
    engine: str = "python"
    #: what the engine adds about how it judged (JSON values): the Spark engine's ``split`` of the trace ("key",
    #: "plan", "whole" or "one part") and its ``parts``
    extra: Mapping[str, Any] = field(default_factory=dict)
    crashed: tuple[str, ...] = ()  #: checks that raised (their findings are incomplete); see the notes

    @property
    def valid(self) -> bool:
        return self.validity is Validity.VALID or (
            self.validity is Validity.UNKNOWN and not self.profile.unknown_is_invalid and not self.crashed
        )

    @property
    def exit_code(self) -> int:
        """The ``keyshared`` commands' exit code for this verdict: 0 valid, 1 invalid, 4 unknown."""
        if self.validity is Validity.INVALID:
            return 1
        return 4 if self.validity is Validity.UNKNOWN else 0

    def all_violations(self) -> tuple[Violation, ...]:
        return tuple(sorted((*self.violations, *self.allowed), key=_order))

    def identities(self) -> set[tuple[str, str | None, str | None, tuple[int, ...]]]:
        """The identities of every violation found (forbidden and allowed): what the engines agree on."""
        return {v.identity() for v in (*self.violations, *self.allowed)}

    def to_json(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "validity": self.validity.value,
            "violations": [v.to_dict() for v in self.violations],
            "allowed": [v.to_dict() for v in self.allowed],
            "counts": dict(self.counts),
            "events": self.events,
            "profile": self.profile.to_dict(),
            "unjudged": [k.value for k in self.unjudged],
            "notes": list(self.notes),
            "engine": self.engine,
            "crashed": list(self.crashed),
            **({"extra": dict(self.extra)} if self.extra else {}),
        }

    def to_json_text(self, indent: int | None = None) -> str:
        return json.dumps(self.to_json(), indent=indent, ensure_ascii=False)

    def render(self, max_per_kind: int = MAX_RENDERED_PER_KIND, *, listed_in: str = "--json") -> str:
        """A readable summary: the verdict line, counts, notes, then the explanations (capped per kind).

        A kind with more than ``max_per_kind`` is cut with one line saying how many more and where they are
        all listed (``listed_in``: ``--json`` for ``keyshared check``, the ``verdict.json`` of a run)."""
        found = {k: n for k, n in self.counts.items() if n}
        lines = [
            headline(
                valid=self.valid,
                validity=self.validity.value,
                crashed=self.crashed,
                events=self.events,
                profile=self.profile.name,
                engine=self.engine,
            )
        ]
        if found:
            lines.append("found: " + ", ".join(f"{k}={n}" for k, n in found.items()))
        if self.profile.permitted:
            lines.append("permitted by the profile: " + ", ".join(sorted(k.value for k in self.profile.permitted)))
        lines += [f"note: {note}" for note in self.notes]
        for title, group in (("violation", self.violations), ("allowed", self.allowed)):
            shown: dict[Kind, int] = {}
            for v in group:
                shown[v.kind] = shown.get(v.kind, 0) + 1
                if shown[v.kind] > max_per_kind:
                    continue
                lines.append("")
                lines.append(f"[{title}] " + v.explanation)
            for kind, n in shown.items():
                if n > max_per_kind:
                    lines.append("")
                    lines.append(cut_line(n - max_per_kind, kind.value, title, listed_in))
        return "\n".join(lines)


def headline(*, valid: bool, validity: str, crashed: Iterable[str], events: int, profile: str, engine: str) -> str:
    """The verdict's first line (``INVALID: 904 events checked, profile pip379 (python engine)``), from the fields
    :meth:`Verdict.to_json` keeps, so a stored ``verdict.json`` gets the same line as a fresh verdict."""
    crashed = tuple(crashed)
    word = "VALID" if valid else "INVALID"
    if crashed:
        word = f"UNKNOWN (check {', '.join(crashed)} crashed)"
    elif validity == Validity.UNKNOWN.value:
        word = "UNKNOWN (treated as invalid)" if not valid else "UNKNOWN (no violation, not all judged)"
    return f"{word}: {events} events checked, profile {profile} ({engine} engine)"


def cut_line(more: int, kind: str, title: str, listed_in: str) -> str:
    """The line closing a kind cut short: how many more, of what kind, and where they are all listed."""
    return f"... and {more} more {kind} ({title}); {listed_in} lists them all"


def build_verdict(
    found: Iterable[Violation],
    profile: Profile,
    *,
    events: int,
    notes: Iterable[str] = (),
    unjudged: Iterable[Kind] = (),
    engine: str = "python",
    crashed: Iterable[str] = (),
) -> Verdict:
    """Split ``found`` by the profile and decide validity (invalid > unknown > valid)."""
    crashed_t = tuple(crashed)
    ordered = sorted(found, key=_order)
    forbidden = tuple(v for v in ordered if profile.forbids(v.kind))
    allowed = tuple(v for v in ordered if not profile.forbids(v.kind))
    counts = {k.value: 0 for k in KINDS}
    for v in ordered:
        counts[v.kind.value] += 1
    unjudged_t = tuple(k for k in KINDS if k in set(unjudged))
    if forbidden:
        validity = Validity.INVALID
    elif crashed_t or any(profile.forbids(k) for k in unjudged_t):
        validity = Validity.UNKNOWN
    else:
        validity = Validity.VALID
    return Verdict(
        validity=validity,
        violations=forbidden,
        allowed=allowed,
        counts=counts,
        events=events,
        profile=profile,
        notes=tuple(notes),
        unjudged=unjudged_t,
        engine=engine,
        crashed=crashed_t,
    )
