"""Shared by the case modules: scenario files of an area, turned into parametrized pytest cases.

A case scenario's ``tags`` carry its metadata: ``contract:<name>`` marks the contracts it checks,
``requires:<capability>`` what the target must support, ``judge:<profile>`` the contract profile the trace
is judged under whatever the target claims (a known bug fixed by PIP-379 is judged by the PIP-379 contract,
even on a classic broker).  Each becomes a ``pytest.param`` with the matching
``keyshared_contract`` / ``keyshared_requires`` markers and the scenario name as id, so the case id is
``<area>/<scenario name>``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from conformance.scenarios import Open, Scenario, loads_scenario
from conformance.violations import Kind

__all__ = [
    "CONTRACT_TAG",
    "JUDGE_TAG",
    "REQUIRES_TAG",
    "area_scenarios",
    "case_params",
    "case_problems",
    "contracts_of",
    "deliveries_outside_sticky_ranges",
    "profile_of",
    "requires_of",
    "run_case",
    "stalled_waits",
]

CONTRACT_TAG = "contract:"
REQUIRES_TAG = "requires:"
JUDGE_TAG = "judge:"


def area_scenarios(area: str) -> list[Scenario]:
    """Every scenario file of ``conformance/cases/scenarios/<area>/``, sorted by name."""
    folder = resources.files("conformance.cases.scenarios").joinpath(area)
    out = []
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        if entry.name.endswith(".toml"):
            text = entry.read_text(encoding="utf-8")
            out.append(loads_scenario(text, "toml", source=f"conformance/cases/scenarios/{area}/{entry.name}"))
    return out


def contracts_of(scenario: Scenario) -> tuple[str, ...]:
    return tuple(t[len(CONTRACT_TAG) :] for t in scenario.tags if t.startswith(CONTRACT_TAG))


def profile_of(scenario: Scenario) -> str | None:
    """The profile a ``judge:<profile>`` tag names, or None (the profile follows the target's claim)."""
    named = [t[len(JUDGE_TAG) :] for t in scenario.tags if t.startswith(JUDGE_TAG)]
    return named[0] if named else None


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


def deliveries_outside_sticky_ranges(trace_path: str | Path) -> list[str]:
    """Explanations of every message a STICKY consumer received outside the hash ranges it declared.

    The documented rule (``KeySharedPolicy.stickyHashRange``; ``HashRangeExclusiveStickyKeyConsumerSelector``
    since apache/pulsar#24730): a STICKY consumer gets the keys whose hash ``% 65536`` lies in one of its ranges,
    and nothing else; a hash no consumer covers waits.  Judged from the trace alone, independent of the claimed
    release's selector, so a broker with #24730's gap bug fails even when it claims a release that had the bug.
    """
    from conformance.trace.reader import open_trace
    from reference_model.hashing import make_hash

    ranges: dict[str, list[tuple[int, int]]] = {}
    problems: list[str] = []
    for event in open_trace(trace_path).events():  # any trace form: JSON Lines, gzip, Parquet
        op, handle = event.op, str(event.consumer)
        if op == "open" and event.result in (None, "ok"):
            policy = event.extra.get("policy") or {}
            declared = policy.get("sticky_ranges")
            if policy.get("key_shared_mode") == "STICKY" and declared:
                ranges[handle] = [(int(a), int(b)) for a, b in declared]
            else:
                ranges.pop(handle, None)
        elif op == "receive" and handle in ranges and event.key is not None:
            slot = make_hash(event.key.encode("utf-8")) % 65536
            if not any(a <= slot <= b for a, b in ranges[handle]):
                problems.append(
                    f"outside_sticky_ranges: consumer {handle} received {event.msg_id} (key {event.key!r},"
                    f" hash slot {slot}) at E{event.i}, outside its declared ranges {ranges[handle]}"
                )
    return problems


def stalled_waits(result: Any) -> list[str]:
    """Explanations of every ``wait_received`` step of the run that timed out: progress the broker owed.

    A case that waits for deliveries while some consumer holds its messages asks for progress: a healthy
    consumer must keep receiving while another is slow.  The final drain acknowledges everything held, so a
    stall that lasts only until then is seen here and nowhere else.
    """
    return [
        f"stalled: step {o.index + 1} (wait_received) timed out: {o.note}"
        for o in result.steps
        if o.do == "wait_received" and not o.ok
    ]


def case_problems(scenario: Scenario, result: Any, *, progress: bool = False) -> list[tuple[str, Kind, str]]:
    """What the case judges beyond the trace checker, as ``(contract, kind, explanation)``.

    STICKY scenarios: deliveries outside the declared ranges (an accepted conflicting open is the trace checker's
    ``accepted_conflicting_open``).  With ``progress``: ``wait_received`` steps that timed out
    (:func:`stalled_waits`).
    """
    problems: list[tuple[str, Kind, str]] = []
    if scenario.subscription.mode == "STICKY" or any(
        isinstance(s, Open) and s.mode == "STICKY" for s in scenario.steps
    ):
        outside = deliveries_outside_sticky_ranges(result.trace_path)
        if outside:
            more = f" (and {len(outside) - 1} more)" if len(outside) > 1 else ""
            problems.append(("assignment", Kind.OUTSIDE_STICKY_RANGES, outside[0] + more))
    if progress:
        problems.extend(("delivery", Kind.STALLED, text) for text in stalled_waits(result))
    return problems


def run_case(scenario: Scenario, run: Any, check: Any, *, progress: bool = False) -> Any:
    """Run ``scenario`` and judge it: the trace checker, plus :func:`case_problems`.

    Every trace rule lives in ``conformance/checks/``: an accepted STICKY open that Pulsar refuses is the checker's
    ``accepted_conflicting_open`` (``conformance.checks.assignment``), judged on any trace form.
    """
    result = run(scenario)
    for contract, kind, problem in case_problems(scenario, result, progress=progress):
        check.violation(contract, problem, kind=kind, defer=True)
    profile = profile_of(scenario)
    return check(result) if profile is None else check(result, profile=profile)
