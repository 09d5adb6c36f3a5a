"""The report's data: one JSON-ready dict built from a trace, its verdict and the reference model's ranges.

Everything the page shows is decided here, in Python (testable without a browser); the page's script only
draws it.  The verdict is taken in its JSON form (``Verdict.to_json()``, or a stored ``verdict.json``) so a
report can be drawn from any engine's verdict without checking again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance.report.collect import Collected, Focus, collect, focus_of, rows_of_events
from conformance.report.ranges import range_history
from conformance.trace.reader import FastPathUnavailable, TraceSource

__all__ = ["MAX_LANES", "MAX_VIOLATIONS", "REPORT_FORMAT", "build_report_data"]

REPORT_FORMAT = 1
#: Key lanes drawn at most (a page with thousands of lanes is no picture).
MAX_LANES = 300
#: Violations listed with their explanations and witnesses (the counts cover all of them).
MAX_VIOLATIONS = 300


def build_report_data(source: TraceSource, verdict: Mapping[str, Any], *, title: str | None = None) -> dict[str, Any]:
    """Everything the page draws, as plain JSON values.  ``verdict``: ``Verdict.to_json()`` or its file."""
    found = [dict(v, allowed=False) for v in verdict.get("violations", ())]
    found += [dict(v, allowed=True) for v in verdict.get("allowed", ())]
    found.sort(key=lambda v: (list(v.get("events") or ()), v.get("kind", "")))
    listed = found[:MAX_VIOLATIONS]
    events = int(verdict.get("events") or 0)
    focus = focus_of(listed, events)
    collected = _collect(source, focus)
    if events == 0:
        events = collected.events
    header = source.header
    ranges = range_history(header, collected.membership, collected.holds)
    summarised = list(collected.summarised)
    summarised += _limit_lanes(collected, listed)
    if len(found) > len(listed):
        summarised.append(f"{len(found) - len(listed)} more violation(s) are counted but not listed")
    return {
        "format": REPORT_FORMAT,
        "title": title or f"keyshared report: {source.source}",
        "source": source.source,
        "header": header.to_dict(),
        "verdict": {
            "validity": verdict.get("validity", "valid" if verdict.get("valid", True) else "invalid"),
            "valid": bool(verdict.get("valid", True)),
            "profile": _profile_name(verdict.get("profile")),
            "permitted": sorted((verdict.get("profile") or {}).get("permitted", []) or [])
            if isinstance(verdict.get("profile"), Mapping)
            else [],
            "engine": verdict.get("engine", "python"),
            "counts": {k: n for k, n in (verdict.get("counts") or {}).items() if n},
            "notes": list(verdict.get("notes") or ()),
            "unjudged": list(verdict.get("unjudged") or ()),
            "events": events,
        },
        "consumers": _consumers(collected),
        "span": _span(collected),
        "holds": collected.holds,
        "marks": collected.marks,
        "global": collected.global_marks,
        "violations": [_violation(n, v, collected) for n, v in enumerate(listed)],
        "ranges": ranges.to_json(),
        "throughput": _throughput(collected),
        "summarised": summarised,
        "full": focus.keys is None,
    }


def _limit_lanes(collected: Collected, violations: list[dict[str, Any]]) -> list[str]:
    """At most :data:`MAX_LANES` key lanes: the keys with violations first, then the busiest others."""
    keys = set(collected.holds) | set(collected.marks)
    if len(keys) <= MAX_LANES:
        return []
    bad = {v.get("key") for v in violations if v.get("key") is not None}
    busy = sorted(keys - bad, key=lambda k: (-len(collected.holds.get(k, ())), k))
    kept = (bad & keys) | set(busy[: max(0, MAX_LANES - len(bad & keys))])
    for table in (collected.holds, collected.marks):
        for key in list(table):
            if key not in kept:
                del table[key]
    return [
        f"{len(keys) - len(kept)} of {len(keys)} keys have no lane (at most {MAX_LANES}: the keys with violations,"
        " then the most received); their events count in the throughput chart"
    ]


def _collect(source: TraceSource, focus: Focus) -> Collected:
    try:
        return collect(source.batches(), focus, columnar=True)
    except FastPathUnavailable:
        return collect(rows_of_events(source.events(), focus.witnesses), focus, columnar=False)


def _profile_name(profile: Any) -> str:
    if isinstance(profile, Mapping):
        return str(profile.get("name", "?"))
    return "?" if profile is None else str(profile)


def _consumers(collected: Collected) -> list[str]:
    names = list(collected.consumers)
    for holds in collected.holds.values():
        for hold in holds:
            if hold[2] not in names:
                names.append(hold[2])
    return names


def _span(collected: Collected) -> dict[str, int]:
    first = collected.first or (0, 0)
    last = collected.last or first
    return {"i0": first[0], "i1": last[0], "t0": first[1], "t1": last[1]}


def _violation(n: int, v: Mapping[str, Any], collected: Collected) -> dict[str, Any]:
    witnesses = []
    for i in v.get("events") or ():
        row = collected.witness_rows.get(i)
        witnesses.append(
            {
                "i": i,
                "op": None if row is None else row.op,
                "consumer": None if row is None else row.consumer,
                "key": None if row is None else row.key,
                "t": None if row is None else row.t,
                "line": None if row is None else row.line,
            }
        )
    return {
        "id": n,
        "kind": v.get("kind"),
        "key": v.get("key"),
        "subscription": v.get("subscription"),
        "consumers": list(v.get("consumers") or ()),
        "events": list(v.get("events") or ()),
        "explanation": v.get("explanation", ""),
        "allowed": bool(v.get("allowed")),
        "witnesses": witnesses,
    }


def _throughput(collected: Collected) -> dict[str, Any]:
    rows = [[b * collected.bucket, *cell] for b, cell in sorted(collected.series.items())]
    return {
        "bucket": collected.bucket,
        "columns": ["i", "t_first", "t_last", "publish", "receive", "ack"],
        "rows": rows,
    }
