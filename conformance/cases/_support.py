"""Shared by the case modules: scenario files of an area, turned into parametrized pytest cases.

A case scenario's ``tags`` carry its metadata: ``contract:<name>`` marks the contracts it checks,
``requires:<capability>`` what the target must support.  Each becomes a ``pytest.param`` with the matching
``keyshared_contract`` / ``keyshared_requires`` markers and the scenario name as id, so the case id is
``<area>/<scenario name>``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from conformance.scenarios import Scenario, loads_scenario, parse_scenario
from conformance.scenarios.model import InvalidScenario

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = [
    "CONTRACT_TAG",
    "NO_OWNER",
    "REQUIRES_TAG",
    "PinnedCase",
    "accepted_conflicting_opens",
    "area_scenarios",
    "case_params",
    "contracts_of",
    "pinned_cases",
    "pinned_mismatches",
    "progress_problems",
    "requires_of",
    "run_case",
]

CONTRACT_TAG = "contract:"
REQUIRES_TAG = "requires:"


def area_scenarios(area: str) -> list[Scenario]:
    """Every scenario file of ``conformance/cases/scenarios/<area>/``, sorted by name."""
    folder = resources.files("conformance.cases.scenarios").joinpath(area)
    out = []
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        if entry.name.endswith(".toml"):
            text = entry.read_text(encoding="utf-8")
            out.append(loads_scenario(text, "toml", source=f"conformance/cases/scenarios/{area}/{entry.name}"))
    return out


#: The owner a pinned table gives a key that no consumer may receive (a STICKY gap).
NO_OWNER = "none"


@dataclass(frozen=True)
class PinnedCase:
    """A scenario with its own expected key placement: ``owners`` maps a key to a consumer handle or ``none``."""

    scenario: Scenario
    owners: Mapping[str, str]
    source: str  #: where the table comes from (a Pulsar unit test, or the rule it was computed with)
    implementation: str = ""  #: the dispatcher the table is for (``pip379``: the classic one reduces hashes apart)
    applies_from: tuple[str, ...] = ()  #: first release of each line the table holds for (``Fix`` semantics)

    def not_applicable(self, claimed_version: str, claimed_implementation: str) -> str | None:
        """Why the table does not describe a broker claiming this version and implementation (``None``: it does)."""
        from reference_model.versions import Fix, parse_version

        if self.implementation and claimed_implementation != self.implementation:
            return (
                f"the pinned table is the {self.implementation} dispatcher's placement; the target claims"
                f" {claimed_implementation}"
            )
        if self.applies_from and not Fix("pinned", "", self.applies_from).present_in(parse_version(claimed_version)):
            return (
                f"the pinned table holds from Pulsar {', '.join(self.applies_from)}; the target claims"
                f" {claimed_version}"
            )
        return None


def pinned_cases(area: str) -> list[PinnedCase]:
    """Every scenario file of ``scenarios/<area>/`` with its ``[pinned]`` table (``source``, ``owners``)."""
    folder = resources.files("conformance.cases.scenarios").joinpath(area)
    out = []
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        if not entry.name.endswith(".toml"):
            continue
        where = f"conformance/cases/scenarios/{area}/{entry.name}"
        data = tomllib.loads(entry.read_text(encoding="utf-8"))
        pinned = data.pop("pinned", None)
        if not isinstance(pinned, dict) or not isinstance(pinned.get("owners"), dict) or not pinned["owners"]:
            raise InvalidScenario(f"{where}: needs a [pinned.owners] table (key = consumer handle or 'none').")
        scenario = parse_scenario(data, source=where)
        handles = set(scenario.consumers())
        owners = {str(k): str(v) for k, v in pinned["owners"].items()}
        for key, owner in owners.items():
            if owner != NO_OWNER and owner not in handles:
                raise InvalidScenario(f"{where}: [pinned.owners] gives {key!r} to {owner!r}, which no step opens.")
        applies = pinned.get("applies_from", [])
        if not isinstance(applies, list) or not all(isinstance(v, str) for v in applies):
            raise InvalidScenario(f'{where}: [pinned] applies_from must be a list of versions, e.g. ["4.0.7"].')
        out.append(
            PinnedCase(
                scenario,
                owners,
                str(pinned.get("source", "")),
                str(pinned.get("implementation", "")),
                tuple(applies),
            )
        )
    return out


def pinned_mismatches(trace_path: str | Path, owners: Mapping[str, str], source: str = "") -> list[str]:
    """One explanation per receive of a pinned key by another consumer than its pinned owner, and per pinned
    key its owner never received.

    Every receive counts, redeliveries included: the cases keep the membership fixed while keys flow, so a key
    has one owner for the whole run.  A key pinned to ``none`` must not be received at all; any other pinned
    key must reach its owner (the cases publish every pinned key).
    """
    problems: list[str] = []
    seen: set[tuple[str, str]] = set()
    published: set[str] = set()
    with Path(trace_path).open(encoding="utf-8") as lines:
        next(lines, None)  # the header
        for line in lines:
            event = json.loads(line)
            if event.get("op") == "publish" and event.get("result") == "ok":
                published.add(str(event.get("key")))
            if event.get("op") != "receive":
                continue
            key, consumer = event.get("key"), event.get("consumer")
            if isinstance(key, str) and consumer == owners.get(key):
                seen.add((key, consumer))
            want = owners.get(key) if isinstance(key, str) else None
            if want is None or consumer == want or (key, consumer) in seen:
                continue
            seen.add((key, consumer))
            expected = "no consumer (its hash is in no consumer's range)" if want == NO_OWNER else f"consumer {want}"
            problems.append(
                f"pinned_owner: key {key!r} was received by consumer {consumer} (E{event.get('i')},"
                f" {event.get('msg_id')}), but belongs to {expected}" + (f" ({source})" if source else "")
            )
    for key, owner in owners.items():
        if owner != NO_OWNER and key in published and (key, owner) not in seen:
            problems.append(
                f"pinned_owner: key {key!r} was published but never received by its owner, consumer {owner}"
                + (f" ({source})" if source else "")
            )
    return problems


def progress_problems(result: Any, scenario: Scenario | None = None) -> list[tuple[str, str, str]]:
    """``(contract, kind, explanation)`` for each bounded wait of a run that the broker made expire.

    * ``stalled`` (``delivery``): a ``wait_received`` step timed out.  A case waits for a count the broker
      owes that consumer, so an expired wait is a broken promise of progress (a healthy consumer owning other
      keys must keep receiving while another consumer is stuck).
    * ``not_quiet`` (``redelivery``): a ``wait_quiet`` step *with its own* ``timeout_ms`` timed out: the case
      promises the subscription settles within that bound (a consumer that nacks a message a fixed number of
      times and then acknowledges it); a broker that keeps redelivering breaks it.  A ``wait_quiet`` without
      ``timeout_ms`` is only a pause, and its expiry is no finding.
    """
    steps = scenario.steps if scenario is not None else ()
    out = []
    for step in getattr(result, "steps", ()):
        if step.ok:
            continue
        if step.do == "wait_received":
            out.append(("delivery", "stalled", f"stalled: step {step.index} (wait_received): {step.note}"))
        elif (
            step.do == "wait_quiet"
            and 0 < step.index <= len(steps)
            and getattr(steps[step.index - 1], "timeout_ms", None) is not None
        ):
            out.append(("redelivery", "not_quiet", f"not_quiet: step {step.index} (wait_quiet): {step.note}"))
    return out


def contracts_of(scenario: Scenario) -> tuple[str, ...]:
    return tuple(t[len(CONTRACT_TAG) :] for t in scenario.tags if t.startswith(CONTRACT_TAG))


def requires_of(scenario: Scenario) -> tuple[str, ...]:
    return tuple(t[len(REQUIRES_TAG) :] for t in scenario.tags if t.startswith(REQUIRES_TAG))


def case_params(
    scenarios: Iterable[Scenario],
    *,
    contracts: Mapping[str, tuple[str, ...]] | None = None,
    requires: Mapping[str, tuple[str, ...]] | None = None,
) -> list[Any]:
    """``pytest.param(scenario, id=name, marks=[...])`` per scenario; ``contracts``/``requires`` add to the tags."""
    params = []
    for scenario in scenarios:
        marks = []
        declared = (contracts or {}).get(scenario.name, ()) or contracts_of(scenario)
        if declared:
            marks.append(pytest.mark.keyshared_contract(*declared))
        needs = (*requires_of(scenario), *(requires or {}).get(scenario.name, ()))
        if needs:
            marks.append(pytest.mark.keyshared_requires(*needs))
        params.append(pytest.param(scenario, id=scenario.name, marks=marks))
    return params


def accepted_conflicting_opens(trace_path: str | Path) -> list[str]:
    """Explanations of every STICKY ``open`` the broker accepted although Pulsar refuses it.

    Pulsar refuses a STICKY consumer whose ranges overlap those of a connected consumer
    (``HashRangeExclusiveStickyKeyConsumerSelector``: ConsumerAssignException, "Range conflict"); the client
    sees ``ConsumerAssignError``.  The membership is replayed on the reference sticky selector of the version
    the trace claims; an ``open`` with result ``ok`` that the selector refuses is a broken ``assignment``
    contract.  (The trace checker cannot judge placement after such an open, since the reference membership
    and the broker's differ from there on; this check names the open itself.)
    """
    from reference_model.errors import ConsumerAssignError
    from reference_model.selectors import ConsumerRef, make_selector

    lines = Path(trace_path).read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0]) if lines else {}
    selector = make_selector("sticky", version=header.get("pulsar_version") or "4.0")
    live: dict[str, Any] = {}
    problems: list[str] = []
    for number, line in enumerate(lines[1:], start=1):
        event = json.loads(line)
        op, handle = event.get("op"), event.get("consumer")
        if op == "open":
            policy = event.get("policy") or {}
            ranges = policy.get("sticky_ranges")
            if policy.get("key_shared_mode") != "STICKY" or not ranges:
                continue
            ref = ConsumerRef(str(event.get("name") or handle), number)
            try:
                selector.add(ref, [(int(a), int(b)) for a, b in ranges])
            except ConsumerAssignError as exc:
                if event.get("result") == "ok":
                    problems.append(
                        f"accepted_conflicting_open: consumer {handle} joined with sticky ranges {ranges}"
                        f" (E{event.get('i')}, result ok), but Pulsar refuses it: {exc}"
                    )
                continue
            if event.get("result") == "ok":
                live[str(handle)] = ref
            else:
                selector.remove(ref)
        elif op in ("close", "crash") and handle in live:
            selector.remove(live.pop(handle))
    return problems


def run_case(scenario: Scenario, run: Any, check: Any) -> Any:
    """Run ``scenario`` and judge it: the trace checker, plus, for STICKY scenarios, refused-open checks."""
    result = run(scenario)
    for contract, kind, problem in progress_problems(result, scenario):
        check.violation(contract, problem, kind=kind, defer=True)
    if scenario.subscription.mode == "STICKY" or any(getattr(s, "mode", None) == "STICKY" for s in scenario.steps):
        for problem in accepted_conflicting_opens(result.trace_path):
            check.violation("assignment", problem, kind="accepted_conflicting_open", defer=True)
    return check(result)
