"""Which known bug explains a generated program that fails on an older release of the model.

The model reproduces every release line, known bugs included: a generated program may well break a contract on
``model:2.10`` because 2.10 has a bug Pulsar fixed later.  Such a failure is expected, and only such a failure:
a program that fails for any other reason is a finding (a model bug, a checker false positive, or a Pulsar bug
nobody listed).  The rule, applied by :func:`attribute`:

0. a known bug that is open in Pulsar (no release fixed it) and affects the failing release explains the failure
   when the program passes on the failing release with that bug's proposed fix applied
   (:attr:`conformance.known_bugs.KnownBug.proposed`, ``passes_with(spec, reference)``): apache/pulsar#23803's
   replay read dispatched during a pending rewind, which #10662 proposed to drop;
1. run the program at the newest patch of each later release line, with the same implementation (the classic
   dispatcher runs on 4.x too), oldest first, until it passes there: the fixes that release has and neither the
   failing one nor the newest release that still failed has (:data:`FIXES`, the model's gates) are what made
   the difference; a later line whose newest patch lacks a fix the failing release has is skipped (3.1 and 3.2
   ended before 3.0.x took later fixes: a program passing on 3.1 but failing on 3.0.17 says nothing about a fix);
2. a classic program that fails on every classic release and passes on the PIP-379 dispatcher of 4.0 is
   explained by the PIP-379 gate (the classic dispatcher's bugs fixed only by PIP-379);
3. the failure is *expected* when known bugs of :data:`conformance.known_bugs.KNOWN_BUGS` (or gated cases of
   :data:`conformance.gated_cases.GATED_CASES`: behaviour changes with a case of their own, such as the ring's
   removal by identity) that affect the failing release have their gates among those fixes, and it names them
   (a case whose gate is a :data:`MASKING` change only when its contracts cover the ones the program broke);
   when none does and they include a change that hides a classic bug without fixing it (:data:`MASKING`), rule 2
   judges it as if no classic release passed; otherwise rule 4 is tried.
   The PIP-379 gate of rule 2 changes the whole dispatcher, so there the contracts the program broke must also
   be among those the classic bugs' cases break (``contract:`` tags of
   ``conformance/cases/scenarios/known_bugs/``): a classic program that delivers an acknowledged message again
   (``redelivery``) is not explained by bugs that stall or reorder.
4. when none of that explains it, or only rule 2 does (the whole PIP-379 dispatcher), a known bug (or gated
   case) of the failing release whose fix is a gate explains it if the program passes on the failing release
   with only that gate backported (``passes_backported``): the first release that passes may bring another change
   that hides the bug without fixing it (apache/pulsar#22245's read filtering, 3.0.5 and 3.3.0, hides a STICKY
   gap hash delivered to a consumer, #24730, fixed in 3.0.14);
   otherwise it is *unexplained*.

Pure: the runs are callables the caller gives (``passes(spec) -> bool``, a target spec such as
``model:3.0:classic``; ``passes_with(spec, proposed_fix_reference) -> bool``; ``passes_backported(spec,
gate_name) -> bool``), so this module imports no target.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from importlib import resources

from conformance.gated_cases import GATED_CASES
from conformance.known_bugs import KNOWN_BUGS
from conformance.scenarios import loads_scenario
from reference_model import versions
from reference_model.versions import PIP_379, RELEASES, Fix, PulsarVersion, newest_patch, parse_version

__all__ = ["FIXES", "MASKING", "Attribution", "attribute", "bug_contracts", "later_specs", "line_spec"]

#: Gates that change what the classic dispatcher reads without fixing an ordering or delivery bug, and so can hide
#: one: apache/pulsar#22245 ("Avoid repeated Read-and-discard", an improvement; 3.0.5, 3.3.0) issues no normal read
#: for a recently joined consumer, so a program that #23307 reorders on 3.2 may pass on 3.3.0 although #23307
#: stays in every classic release (fixed only by PIP-379). A failure whose first passing release gains one of these
#: and no gate that names a known bug (3.0.5's other gains are deduplication gates) is judged by rule 2, the PIP-379
#: dispatcher, as one that no classic release passes.
MASKING: frozenset[Fix] = frozenset({versions.CLASSIC_REPLAY_FILTER})

#: Every behaviour change the model gates on (``reference_model.versions``), by name.
#: The gates a later release may bring that explain a program passing there (the classic dispatcher's removal in
#: 5.0 fixes nothing: a classic program never runs on 5.0, and a PIP-379 one runs the same dispatcher).
FIXES: tuple[Fix, ...] = tuple(
    v for v in vars(versions).values() if isinstance(v, Fix) and v is not versions.CLASSIC_REMOVED
)


@dataclass(frozen=True, slots=True)
class Attribution:
    """Why a program failed on ``spec``: ``bugs`` (known-bug case names) when expected, else ``note`` says."""

    spec: str
    expected: bool
    bugs: tuple[str, ...]
    passes_on: str | None  #: the first release the program passes on, if any
    fixes: tuple[str, ...]  #: the model's gates that release has and the failing one lacks
    note: str

    def render(self) -> str:
        if self.expected:
            return f"expected on {self.spec}: known bug(s) {', '.join(self.bugs)} (passes on {self.passes_on})"
        return f"UNEXPLAINED on {self.spec}: {self.note}"


def line_spec(line: tuple[int, int], implementation: str) -> str:
    """The model target of a release line's newest patch (``model:3.0:classic``, ``model:4.0``)."""
    name = f"model:{line[0]}.{line[1]}"
    return f"{name}:classic" if implementation == "classic" and line >= (4, 0) else name


def _patch_spec(version: PulsarVersion, implementation: str) -> str:
    name = f"model:{version}"
    return f"{name}:classic" if implementation == "classic" and version.line >= (4, 0) else name


def later_specs(version: PulsarVersion, implementation: str) -> list[tuple[str, PulsarVersion]]:
    """The newest patch of each release line after ``version``'s, same implementation, oldest first."""
    out = []
    for line in sorted(RELEASES):
        if line <= version.line or parse_version(f"{line[0]}.{line[1]}") < versions.MIN_MODEL_VERSION:
            continue
        if implementation != "classic" and line < (4, 0):
            continue
        if implementation == "classic" and not versions.has_classic_dispatcher(f"{line[0]}.{line[1]}"):
            continue  # 5.0 removed the classic dispatcher (apache/pulsar#26687): no later classic release to try
        out.append((line_spec(line, implementation), newest_patch(f"{line[0]}.{line[1]}")))
    return out


@cache
def bug_contracts() -> dict[str, frozenset[str]]:
    """Known-bug case -> the contracts its case checks (the ``contract:`` tags of its scenario file)."""
    folder = resources.files("conformance.cases.scenarios").joinpath("known_bugs")
    out: dict[str, frozenset[str]] = {}
    for entry in folder.iterdir():
        if entry.name.endswith(".toml"):
            scenario = loads_scenario(entry.read_text(encoding="utf-8"), "toml", source=entry.name)
            out[scenario.name] = frozenset(t[len("contract:") :] for t in scenario.tags if t.startswith("contract:"))
    return out


@dataclass(frozen=True, slots=True)
class _Explanation:
    """A known bug or a gated case that a release lacks: its case and the contracts its case breaks."""

    case: str
    contracts: frozenset[str]


def _bugs_with(fixes: set[Fix], version: PulsarVersion, implementation: str) -> list[_Explanation]:
    known = [
        _Explanation(b.case, bug_contracts().get(b.case, frozenset()))
        for b in KNOWN_BUGS
        if b.gate in fixes and b.affects(version, implementation)
    ]
    gated = [
        _Explanation(g.case, frozenset(g.contracts))
        for g in GATED_CASES
        if g.gate in fixes and g.affects(version, implementation)
    ]
    return known + gated


def _covers(bugs: list[_Explanation], broken: frozenset[str] | None) -> bool:
    if broken is None:
        return True
    return broken <= frozenset().union(*(b.contracts for b in bugs))


def attribute(
    spec: str,
    version: str,
    implementation: str,
    passes: Callable[[str], bool],
    broken: Iterable[str] | None = None,
    passes_with: Callable[[str, str], bool] | None = None,
    passes_backported: Callable[[str, str], bool] | None = None,
) -> Attribution:
    """Explain a program failing on ``spec`` (release ``version``, ``implementation``); ``passes`` reruns it.
    ``broken``: the contracts the failure broke (None: not compared); ``passes_with(spec, reference)`` reruns it
    on ``spec`` with a proposed fix of an open bug applied (None: open bugs explain nothing);
    ``passes_backported(spec, gate_name)`` reruns it on ``spec`` with one gate as if backported (rule 4; None: not
    tried)."""
    failing = newest_patch(version)
    if passes_with is not None:
        for bug in KNOWN_BUGS:
            proposed = bug.proposed if bug.unfixed and bug.affects(failing, implementation) else None
            if proposed is not None and passes_with(spec, proposed.reference):
                with_fix = f"{spec} with {proposed.reference}"
                return Attribution(spec, True, (bug.case,), with_fix, (proposed.name,), "")
    found = _by_releases(spec, version, implementation, passes, broken)
    if passes_backported is None or (found.expected and found.fixes != (PIP_379.name,)):
        return found
    # unexplained, or explained only by the whole PIP-379 dispatcher: one backported fix is the sharper reading
    for explanation, gate in _backportable(failing, implementation):
        if passes_backported(spec, gate.name):
            return Attribution(spec, True, (explanation,), f"{spec} with {gate.name} backported", (gate.name,), "")
    return found


def _backportable(failing: PulsarVersion, implementation: str) -> list[tuple[str, Fix]]:
    """Known bugs and gated cases of ``failing`` whose fix is a gate a release could take (not PIP-379)."""
    out = [(b.case, b.gate) for b in KNOWN_BUGS if b.gate is not None and b.gate is not PIP_379]
    out += [(g.case, g.gate) for g in GATED_CASES if g.gate is not PIP_379]
    known = {b.case: b for b in KNOWN_BUGS}
    gated = {g.case: g for g in GATED_CASES}
    return [
        (case, gate)
        for case, gate in out
        if (known[case] if case in known else gated[case]).affects(failing, implementation)
    ]


def _by_releases(
    spec: str, version: str, implementation: str, passes: Callable[[str], bool], broken: Iterable[str] | None
) -> Attribution:
    """Rules 1 to 3: the later releases, then the PIP-379 dispatcher."""
    broken_set = None if broken is None else frozenset(broken)
    failing = newest_patch(version)
    last_failing = failing  # the newest release known to fail: the fix lies between it and the first that passes

    def gained_between(before: PulsarVersion, after: PulsarVersion) -> set[Fix]:
        return {
            f
            for f in FIXES
            if f.present_in(after) and not f.present_in(before) and not f.present_in(failing) and f is not PIP_379
        }

    for later_spec, later in later_specs(failing, implementation):
        if any(f.present_in(failing) and not f.present_in(later) for f in FIXES):
            continue  # a line that ended before the failing release took a fix (3.1 and 3.2 for 3.0.17) tells nothing
        if not passes(later_spec):
            last_failing = later
            continue
        # narrow to the patch of that line that first passes, trying the releases that brought a candidate fix
        passed_spec, passed = later_spec, later
        patches = sorted(
            {
                parse_version(first)
                for fix in gained_between(last_failing, later)
                for first in fix.first_releases
                if parse_version(first).line == later.line and parse_version(first) < later
            }
        )
        for patch in patches:
            spec_patch = _patch_spec(patch, implementation)
            if passes(spec_patch):
                passed_spec, passed = spec_patch, patch
                break
            last_failing = patch
        gained = gained_between(last_failing, passed)
        bugs = _bugs_with(gained, failing, implementation)
        if gained & MASKING and implementation == "classic":
            # a change that hides bugs explains only what its own case breaks (#22245's gated case: a stall, not
            # the reordering or redelivery it may hide)
            masked = _bugs_with(gained & MASKING, failing, implementation)
            if masked and not _covers(masked, broken_set):
                hiding = {b.case for b in masked}
                bugs = [b for b in bugs if b.case not in hiding]
        names = tuple(sorted(f.name for f in gained))
        if bugs:  # the patch that fixed it is pinned down: its consequences may reach any contract
            return Attribution(spec, True, tuple(b.case for b in bugs), passed_spec, names, "")
        if gained & MASKING and implementation == "classic":
            hidden = _pip379_rule(spec, failing, implementation, passes, broken_set)
            if hidden is not None and hidden.expected:
                return hidden
        return Attribution(
            spec, False, (), passed_spec, names,
            f"fails up to {last_failing}, passes on {passed_spec}, which adds {', '.join(names) or 'no gated fix'}:"
            f" no known bug of {failing} ({implementation}) is among them",
        )  # fmt: skip
    found = _pip379_rule(spec, failing, implementation, passes, broken_set)
    if found is not None:
        return found
    return Attribution(
        spec, False, (), None, (),
        f"fails on every later {implementation} release"
        + (" and on the PIP-379 dispatcher of 4.0" if implementation == "classic" else ""),
    )  # fmt: skip


def _pip379_rule(
    spec: str,
    failing: PulsarVersion,
    implementation: str,
    passes: Callable[[str], bool],
    broken_set: frozenset[str] | None,
) -> Attribution | None:
    """Rule 2: a classic failure the PIP-379 dispatcher of 4.0 does not have, named by the classic dispatcher's bugs
    that PIP-379 fixed when their cases break the contracts it broke; None when it does not apply."""
    if implementation == "classic" and passes("model:4.0"):
        bugs = _bugs_with({PIP_379}, failing, implementation)
        if bugs and _covers(bugs, broken_set):
            return Attribution(spec, True, tuple(b.case for b in bugs), "model:4.0", (PIP_379.name,), "")
        if bugs:
            return Attribution(
                spec, False, (), "model:4.0", (PIP_379.name,),
                f"passes only on the PIP-379 dispatcher, but breaks {', '.join(sorted(broken_set or ()))}, which"
                f" none of the classic dispatcher's known bugs ({', '.join(b.case for b in bugs)}) breaks",
            )  # fmt: skip
    return None
