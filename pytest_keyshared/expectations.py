"""Expectations: the cases known to fail on a target, and how a case's outcome is judged against them.

One TOML file per target (``conformance/expectations/<target>.toml``)::

    target = "pulsar-lite"
    measured = "how and when the entries were measured"

    [cases."builtin/join-while-pending"]
    status = "fails"                       # fails every run; passing is reported and fails the run (strict)
    contracts = ["key-exclusivity"]        # optional: the contracts it is known to break
    reason = "no draining hashes: a joining consumer gets keys the old owner still holds"

    [cases."builtin/stuck-consumer"]
    status = "may-fail"                    # nondeterministic: failing or passing is fine
    reason = "..."

    [contracts.redelivery]                 # a contract any case may break on this target, now and then
    status = "may-fail"
    reason = "spurious duplicate deliveries"

A failing case is *expected* when every contract the run found broken is allowed: by the case's entry (all
contracts when it lists none, else the listed ones) or by a ``[contracts.<name>]`` entry (``may-fail`` only:
a target-wide nondeterministic deviation).  A failure of another contract, or a harness error where the
case's entry lists contracts or where only contract entries apply, is a new failure.  Pure: parsing and
judging take values and return values.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_keyshared.contracts import check_contract
from reference_model.errors import InvalidArgument, did_you_mean

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = [
    "NO_EXPECTATIONS",
    "STATUSES",
    "Expectation",
    "Expectations",
    "Judgement",
    "bundled_expectations",
    "judge",
    "load_expectations",
    "parse_expectations",
]

STATUSES: tuple[str, ...] = ("fails", "may-fail")


@dataclass(frozen=True, slots=True)
class Expectation:
    """A case known to fail on a target: ``fails`` (every run) or ``may-fail`` (nondeterministic)."""

    case: str
    status: str
    reason: str
    contracts: tuple[str, ...] = ()

    @property
    def strict(self) -> bool:
        return self.status == "fails"


@dataclass(frozen=True, slots=True)
class Expectations:
    """The parsed file: entries by case id, target-wide entries by contract, and the file they came from."""

    cases: Mapping[str, Expectation]
    source: str | None = None
    target: str | None = None
    contracts: Mapping[str, Expectation] = field(default_factory=dict)  #: contract -> may-fail entry

    def get(self, case: str) -> Expectation | None:
        return self.cases.get(case)

    def __len__(self) -> int:
        return len(self.cases)


NO_EXPECTATIONS = Expectations({}, None)


def _fail(source: str, where: str, problem: str) -> InvalidArgument:
    return InvalidArgument(f"Invalid expectations file {source}: {where}: {problem}")


def parse_expectations(data: Mapping[str, Any], *, source: str) -> Expectations:
    """Validate the decoded TOML; every problem names the file, the entry and what would work."""
    allowed_top = {"target", "measured", "cases", "contracts"}
    for key in data:
        if key not in allowed_top:
            raise _fail(source, f"top-level key {key!r}", f"unknown key; expected {', '.join(sorted(allowed_top))}")
    target = data.get("target")
    if target is not None and not isinstance(target, str):
        raise _fail(source, "target", f"expected a string but got {target!r}")
    raw_cases = data.get("cases", {})
    if not isinstance(raw_cases, Mapping):
        raise _fail(source, "cases", 'expected a table of [cases."<case id>"] entries')
    cases = {case: _entry(source, f"[cases.{case!r}]", case, entry) for case, entry in raw_cases.items()}
    raw_contracts = data.get("contracts", {})
    if not isinstance(raw_contracts, Mapping):
        raise _fail(source, "contracts", "expected a table of [contracts.<contract>] entries")
    contracts: dict[str, Expectation] = {}
    for name, entry in raw_contracts.items():
        where = f"[contracts.{name}]"
        try:
            contract = check_contract(name, source="the table name")
        except InvalidArgument as exc:
            raise _fail(source, where, str(exc)) from None
        expectation = _entry(source, where, f"contract:{contract}", entry)
        if expectation.status != "may-fail" or expectation.contracts:
            raise _fail(
                source,
                where,
                'a contract entry takes status = "may-fail" and a reason only; a deviation every run shows'
                " belongs to the cases that show it",
            )
        contracts[contract] = Expectation(expectation.case, "may-fail", expectation.reason, (contract,))
    return Expectations(cases, source, target, contracts)


def _entry(source: str, where: str, case: str, entry: object) -> Expectation:
    """One ``status`` / ``reason`` / ``contracts`` table, validated."""
    if not isinstance(entry, Mapping):
        raise _fail(source, where, "expected a table with status and reason")
    for key in entry:
        if key not in ("status", "reason", "contracts"):
            raise _fail(source, where, f"unknown key {key!r}; expected status, reason, contracts")
    status = entry.get("status")
    if status not in STATUSES:
        hint = did_you_mean(status, STATUSES) if isinstance(status, str) else ""
        raise _fail(source, where, f"status {status!r} is not one of {', '.join(STATUSES)}.{hint}".rstrip("."))
    reason = entry.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise _fail(source, where, 'expected a non-empty reason = "why it fails on this target"')
    raw_contracts = entry.get("contracts", [])
    if not isinstance(raw_contracts, list):
        raise _fail(source, where, f"contracts must be a list of contract names, got {raw_contracts!r}")
    try:
        contracts = tuple(check_contract(c, source="contracts") for c in raw_contracts)
    except InvalidArgument as exc:
        raise _fail(source, where, str(exc)) from None
    return Expectation(case=case, status=str(status), reason=reason.strip(), contracts=contracts)


def load_expectations(path: str | Path) -> Expectations:
    """Read and validate an expectations file; a missing or malformed file is one :class:`InvalidArgument`."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidArgument(f"Cannot read expectations file {path}: {exc.strerror or exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidArgument(f"Invalid expectations file {path}: not valid TOML ({exc})") from None
    return parse_expectations(data, source=str(path))


def bundled_expectations(target: str) -> Path | None:
    """The shipped file for a target string: ``pulsar-lite`` -> ``pulsar-lite.toml``; ``None`` when none ships.

    The file is chosen by the target's kind (the part before the first ``:``); a URL target
    (``pulsar://...``) has no shipped file.  A model target picks its release line's file:
    ``model:3.0`` -> ``model-3.0.toml``, ``model:4.0:classic`` -> ``model-4.0-classic.toml``; a line with no
    file (``model``, ``model:4.2``) passes everything.  The files describe the newest patch of each line: an
    older patch also fails the known-bug cases fixed since (``docs/known-bugs.md``).
    """
    if "://" in target:
        return None
    import conformance.expectations

    folder = Path(conformance.expectations.__file__).parent
    kind = target.split(":", 1)[0]
    if kind == "model":
        return _model_expectations(folder, target)
    candidate = folder / f"{kind}.toml"
    return candidate if kind and candidate.is_file() else None


def _model_expectations(folder: Path, target: str) -> Path | None:
    from pytest_keyshared.targets.model import parse_model_spec
    from reference_model.keyshared.factory import check_implementation
    from reference_model.versions import parse_version

    try:
        version_text, implementation = parse_model_spec(target)
        version = parse_version(version_text)
        implementation = check_implementation(implementation, version)
    except InvalidArgument:
        return None  # the target itself reports the problem when it is opened
    name = f"model-{version.major}.{version.minor}"
    if implementation == "classic" and version.at_least(4, 0):
        name += "-classic"
    candidate = folder / f"{name}.toml"
    return candidate if candidate.is_file() else None


@dataclass(frozen=True, slots=True)
class Judgement:
    """The outcome a case gets after its expectation is applied (pytest's vocabulary)."""

    outcome: str  #: passed, failed, xfailed, xpassed
    reason: str | None = None  #: the expectation's reason, for x-outcomes and strict xpass failures
    note: str | None = None  #: why a failure was *not* the expected one


def judge(
    passed: bool,
    broken: Iterable[str],
    expectation: Expectation | None,
    contract_expectations: Mapping[str, Expectation] | None = None,
) -> Judgement:
    """Apply the expectations to a case's raw result.

    ``broken`` is the set of contracts the run found violated (empty for a harness error or a plain assert).
    ``contract_expectations`` are the target-wide ``may-fail`` entries; they excuse failures of their
    contracts in any case, but never turn a pass into an ``xpassed``.
    """
    broken_set = set(broken)
    target_wide = dict(contract_expectations or {})
    if passed:
        if expectation is None:
            return Judgement("passed")
        if expectation.strict:
            return Judgement("failed", expectation.reason, 'expected to fail (status = "fails") but passed')
        return Judgement("xpassed", expectation.reason)
    if expectation is not None and not expectation.contracts:
        return Judgement("xfailed", expectation.reason)  # any failure is the expected one
    own = set(expectation.contracts) if expectation is not None else set()
    if not broken_set:
        if expectation is None:
            return Judgement("failed")
        return Judgement(
            "failed",
            expectation.reason,
            f"expected to break {', '.join(expectation.contracts)}, but failed without a contract violation",
        )
    unexpected = sorted(broken_set - own - set(target_wide))
    if unexpected:
        if expectation is None and not (broken_set & set(target_wide)):
            return Judgement("failed")
        allowed = sorted(own | (broken_set & set(target_wide)))
        reason = expectation.reason if expectation is not None else None
        return Judgement(
            "failed", reason, f"expected to break only {', '.join(allowed)}, but also broke {', '.join(unexpected)}"
        )
    reasons = [expectation.reason] if expectation is not None and broken_set & own else []
    reasons += [target_wide[c].reason for c in sorted(broken_set - own) if c in target_wide]
    return Judgement("xfailed", "; ".join(reasons))
