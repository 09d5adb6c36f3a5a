"""The report's data: one JSON-ready dict built from a trace, its verdict and the reference model's ranges.

Everything the page shows is decided here, in Python (testable without a browser); the page's script only
draws it.  The verdict is taken in its JSON form (``Verdict.to_json()``, or a stored ``verdict.json``) so a
report can be drawn from any engine's verdict without checking again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance.report.collect import MAX_MARKS, Collected, Focus, collect, focus_of, rows_of_events
from conformance.report.faults import fault_names
from conformance.report.ranges import range_history
from conformance.trace.reader import FastPathUnavailable, TraceSource

__all__ = [
    "KEY_LINES",
    "MAX_LANES",
    "MAX_VIOLATIONS",
    "OPEN_KINDS",
    "REPORT_FORMAT",
    "SMALL_VIOLATIONS",
    "build_report_data",
    "group_violations",
]

REPORT_FORMAT = 1
#: Key lanes drawn at most (a page with thousands of lanes is no picture).
MAX_LANES = 300
#: Violations listed with their explanations and witnesses (the counts cover all of them).
MAX_VIOLATIONS = 300
#: Up to this many violations, every card is open (a short list needs no folding).
SMALL_VIOLATIONS = 6
#: Above it, the first group (one kind, one key) of each of the first this-many kinds shows its first card;
#: every other group is one folded line with its count.
OPEN_KINDS = 4
#: A kind's first this-many groups are lines of their own; the rest fold into one line ("n more keys").
KEY_LINES = 10


def build_report_data(
    source: TraceSource, verdict: Mapping[str, Any], *, title: str | None = None, writer: str | None = None
) -> dict[str, Any]:
    """Everything the page draws, as plain JSON values.  ``verdict``: ``Verdict.to_json()`` or its file.

    ``writer``: what wrote the page (``keyshared run``, ``keyshared soak``, ...), named in its subtitle.
    """
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
    faults = _faults(source, collected)
    summarised = list(collected.summarised)
    summarised += _limit_lanes(collected, listed)
    if len(found) > len(listed):
        summarised.append(f"{len(found) - len(listed)} more violation(s) are counted but not listed")
    return {
        "format": REPORT_FORMAT,
        "title": title or f"{writer or 'keyshared report'}: {source.source}",
        "writer": writer,
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
        "groups": group_violations(found, len(listed)),
        "faults": faults,
        "ranges": ranges.to_json(),
        "throughput": _throughput(collected),
        "summarised": summarised,
        "full": focus.keys is None,
    }


def group_violations(found: list[dict[str, Any]], listed: int) -> list[dict[str, Any]]:
    """The violations by kind, and within a kind by key, with counts; which groups start open.

    ``found``: every violation (dicts of ``Violation.to_dict()`` plus ``allowed``) in the page's order (by
    witnesses); the first ``listed`` of them have cards (ids 0..listed-1), the rest are counted only.  Kinds
    that fail the verdict come first, then the permitted ones; kinds and keys in order of first appearance.
    Returns ``[{kind, allowed, count, keys, lines, groups: [{key, count, ids, consumers, first, last, shown}]}]``:
    ``shown`` is how many of the group's cards are open (all of them for a short list; the first card of the
    first group of each of the first :data:`OPEN_KINDS` kinds; else 0, the group folded to one line);
    ``lines``: how many groups are lines of their own (:data:`KEY_LINES`), the others fold into one more line.
    """
    kinds: dict[tuple[bool, str], dict[str | None, dict[str, Any]]] = {}
    for n, v in enumerate(found):
        which = (bool(v.get("allowed")), str(v.get("kind", "?")))
        key = v.get("key")
        group = kinds.setdefault(which, {}).get(key)
        if group is None:
            group = kinds[which][key] = {
                "key": key,
                "count": 0,
                "ids": [],
                "consumers": [],
                "first": None,
                "last": None,
            }
        group["count"] += 1
        if n < listed:
            group["ids"].append(n)
        for c in v.get("consumers") or ():
            if c not in group["consumers"]:
                group["consumers"].append(c)
        events = list(v.get("events") or ())
        if events:
            lo, hi = min(events), max(events)
            group["first"] = lo if group["first"] is None else min(group["first"], lo)
            group["last"] = hi if group["last"] is None else max(group["last"], hi)
    order = sorted(kinds, key=lambda k: k[0])  # stable: failures first, each in order of first appearance
    small = len(found) <= SMALL_VIOLATIONS
    opened = 0
    out = []
    for allowed, kind in order:
        groups = list(kinds[(allowed, kind)].values())
        for k, group in enumerate(groups):
            if small:
                group["shown"] = len(group["ids"])
            elif k == 0 and opened < OPEN_KINDS and (not allowed or opened == 0):
                group["shown"] = min(1, len(group["ids"]))
            else:
                group["shown"] = 0
        if groups and groups[0]["shown"] and not small:
            opened += 1
        out.append(
            {
                "kind": kind,
                "allowed": allowed,
                "count": sum(g["count"] for g in groups),
                "keys": sum(1 for g in groups if g["key"] is not None),
                "lines": len(groups) if len(groups) <= KEY_LINES + 1 else KEY_LINES,
                "groups": groups,
            }
        )
    return out


def _faults(source: TraceSource, collected: Collected) -> list[list[Any]]:
    """``[i, t, fault, consumers]`` per fault (the first :data:`MAX_MARKS`), named; their timeline marks too."""
    rows = [r for r in collected.membership if r.op == "fault"][:MAX_MARKS]
    if not rows:
        return []
    names = fault_names(source, [r.i for r in rows])
    for mark in collected.global_marks:
        if mark[1] == "fault" and mark[0] in names:
            mark[3] = f"{names[mark[0]]} {mark[3]}".strip()
    return [[r.i, r.t, names.get(r.i, "fault"), list(r.fault_consumers or ())] for r in rows]


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
