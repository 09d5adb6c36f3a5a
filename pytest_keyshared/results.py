"""What one conformance case produced, the results file of a run, and the comparison with a baseline.

A :class:`CaseRecord` is built on the process that ran the case (an xdist worker, perhaps), travels to the
controller as a JSON string on the test report, and is aggregated there.  A *results file*
(``--keyshared-results``) stores every case's outcome contract by contract; a later run given it as
``--keyshared-baseline`` reports, per (case, contract), what broke since (a *new failure*, which fails the
run) and what was fixed.  That is the upgrade-acceptance question: "does the new broker or version break a
promise the old one kept?"  Pure: values in, values out; reading and writing files is at the two ``*_file``
functions.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pytest_keyshared.contracts import CONTRACTS
from reference_model.errors import InvalidArgument

__all__ = [
    "BROKEN",
    "HOLDS",
    "RESULTS_FORMAT",
    "BaselineComparison",
    "CaseRecord",
    "Change",
    "RunResults",
    "StoredCase",
    "StoredResults",
    "ViolationSummary",
    "compare_with_baseline",
    "contract_outcomes",
    "read_results_file",
    "write_results_file",
]

RESULTS_FORMAT = "pytest-keyshared-results/1"
#: Outcomes meaning "the contract held" and "the contract was broken"; ``skipped`` is neither.
HOLDS = frozenset({"passed", "xpassed"})
BROKEN = frozenset({"failed", "xfailed", "error"})
#: How many violations a record carries to the controller (the trace has all of them).
MAX_VIOLATIONS_PER_CASE = 5


@dataclass(frozen=True, slots=True)
class ViolationSummary:
    """One violation as the summary shows it: kind, contract, key and the rendered explanation."""

    kind: str
    contract: str
    key: str | None
    explanation: str


@dataclass(slots=True)
class CaseRecord:
    """Everything the controller needs about one case, JSON-serialisable."""

    case: str
    nodeid: str
    contracts: list[str] = field(default_factory=list)  #: contracts the case declares it checks
    outcome: str = "passed"  #: passed, failed, xfailed, xpassed, skipped, error
    broken: list[str] = field(default_factory=list)  #: contracts found violated
    counts: dict[str, int] = field(default_factory=dict)  #: violation kind -> count, over all runs of the case
    violations: list[ViolationSummary] = field(default_factory=list)
    traces: list[str] = field(default_factory=list)
    scenarios: list[str] = field(default_factory=list)
    seed: int | None = None
    reason: str | None = None  #: the expectation's reason, when one applied
    note: str | None = None  #: why a failure was not the expected one, or a skip reason
    error: str | None = None  #: first line of a failure that was no contract violation
    duration: float = 0.0
    pulsar_version: str | None = None  #: the version the target that ran the case claimed

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> CaseRecord:
        data = json.loads(text)
        data["violations"] = [ViolationSummary(**v) for v in data.get("violations", [])]
        return cls(**data)

    def add_broken(self, contracts: Iterable[str]) -> None:
        for contract in contracts:
            if contract not in self.broken:
                self.broken.append(contract)
        self.broken.sort(key=lambda c: CONTRACTS.index(c) if c in CONTRACTS else len(CONTRACTS))

    def add_violation(self, violation: ViolationSummary) -> None:
        self.counts[violation.kind] = self.counts.get(violation.kind, 0) + 1
        if len(self.violations) < MAX_VIOLATIONS_PER_CASE:
            self.violations.append(violation)


def contract_outcomes(record: CaseRecord) -> dict[str, str]:
    """The outcome of each contract in one case.

    A contract the run found broken takes the case's failing outcome; the case's other declared contracts
    held (their checks ran in the same pass) unless the failure was no contract violation at all (a harness
    error), in which case every declared contract shares the failure.  Contracts the case broke without
    declaring them are included: the checker judges every contract on every trace.
    """
    contracts = list(dict.fromkeys([*record.contracts, *record.broken]))
    if record.outcome in ("failed", "xfailed", "error"):
        if not record.broken:
            return dict.fromkeys(contracts, record.outcome)
        return {c: (record.outcome if c in record.broken else "passed") for c in contracts}
    return dict.fromkeys(contracts, record.outcome)


@dataclass(slots=True)
class RunResults:
    """The results of one run: the target, the seed, and every case's record."""

    target: str
    pulsar_version: str | None
    seed: int | None
    cases: dict[str, CaseRecord] = field(default_factory=dict)

    def to_data(self) -> dict[str, Any]:
        return {
            "format": RESULTS_FORMAT,
            "target": self.target,
            "pulsar_version": self.pulsar_version,
            "seed": self.seed,
            "cases": {
                case: {
                    "outcome": rec.outcome,
                    "contracts": contract_outcomes(rec),
                    "broken": list(rec.broken),
                    "counts": dict(sorted(rec.counts.items())),
                    "reason": rec.reason,
                }
                for case, rec in sorted(self.cases.items())
            },
        }


def write_results_file(path: str | Path, results: RunResults) -> Path:
    """Write ``results`` as JSON (sorted keys, one stable layout so files diff well)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results.to_data(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


@dataclass(frozen=True, slots=True)
class StoredResults:
    """A results file as read back: per case, its outcome and the outcome of each contract."""

    source: str
    target: str | None
    pulsar_version: str | None
    cases: Mapping[str, StoredCase]


@dataclass(frozen=True, slots=True)
class StoredCase:
    outcome: str
    contracts: Mapping[str, str]  #: contract -> outcome
    broken: tuple[str, ...] = ()

    def status(self, contract: str) -> str | None:
        """The contract's outcome; one the case did not list held if the case held or failed on others."""
        if contract in self.contracts:
            return self.contracts[contract]
        if self.outcome in HOLDS or self.broken:
            return "passed"
        return None  # skipped, or a harness error: nothing is known about the other contracts


def read_results_file(path: str | Path) -> StoredResults:
    """Read a results file; anything unreadable is one :class:`InvalidArgument` naming the file and problem."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InvalidArgument(f"Cannot read baseline results file {path}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise InvalidArgument(f"Invalid baseline results file {path}: not JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != RESULTS_FORMAT:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise InvalidArgument(
            f'Invalid baseline results file {path}: expected "format": {RESULTS_FORMAT!r} but got {found!r};'
            " write one with --keyshared-results FILE"
        )
    raw_cases = data.get("cases")
    if not isinstance(raw_cases, dict):
        raise InvalidArgument(f'Invalid baseline results file {path}: "cases" must be an object')
    cases: dict[str, StoredCase] = {}
    for case, entry in raw_cases.items():
        contracts = entry.get("contracts") if isinstance(entry, dict) else None
        outcome = entry.get("outcome") if isinstance(entry, dict) else None
        broken = entry.get("broken", []) if isinstance(entry, dict) else None
        if (
            not isinstance(contracts, dict)
            or not all(isinstance(v, str) for v in contracts.values())
            or not isinstance(outcome, str)
            or not isinstance(broken, list)
        ):
            raise InvalidArgument(
                f'Invalid baseline results file {path}: case {case!r} needs "outcome": str,'
                ' "contracts": {contract: outcome} and "broken": [contract, ...]'
            )
        cases[case] = StoredCase(outcome, dict(contracts), tuple(broken))
    return StoredResults(str(path), data.get("target"), data.get("pulsar_version"), cases)


@dataclass(frozen=True, slots=True)
class Change:
    """One (case, contract) whose status differs between the baseline and this run."""

    case: str
    contract: str
    before: str
    after: str


@dataclass(frozen=True, slots=True)
class BaselineComparison:
    """New failures (held before, broken now), fixes (broken before, hold now), and what could not be compared."""

    baseline: StoredResults
    new_failures: Sequence[Change]
    fixes: Sequence[Change]
    only_in_baseline: Sequence[str]
    only_in_run: Sequence[str]


def compare_with_baseline(baseline: StoredResults, run: Mapping[str, CaseRecord]) -> BaselineComparison:
    """Compare per (case, contract).  Skipped on either side, or a case missing from either, is not compared."""
    new_failures: list[Change] = []
    fixes: list[Change] = []
    for case in sorted(set(baseline.cases) & set(run)):
        before_case = baseline.cases[case]
        record = run[case]
        after_case = StoredCase(record.outcome, contract_outcomes(record), tuple(record.broken))
        for contract in sorted(set(before_case.contracts) | set(after_case.contracts), key=_rank):
            before = before_case.status(contract)
            after = after_case.status(contract)
            if before is None or after is None:
                continue
            if before in HOLDS and after in BROKEN:
                new_failures.append(Change(case, contract, before, after))
            elif before in BROKEN and after in HOLDS:
                fixes.append(Change(case, contract, before, after))
    return BaselineComparison(
        baseline=baseline,
        new_failures=new_failures,
        fixes=fixes,
        only_in_baseline=sorted(set(baseline.cases) - set(run)),
        only_in_run=sorted(set(run) - set(baseline.cases)),
    )


def _rank(contract: str) -> int:
    return CONTRACTS.index(contract) if contract in CONTRACTS else len(CONTRACTS)
