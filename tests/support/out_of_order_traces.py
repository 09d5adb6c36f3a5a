"""A model run with ``allowOutOfOrderDelivery`` where keys move while held, its other forms (every timestamp equal,
every ack logged late) and planted faults: the traces ``tests/unit/test_check_out_of_order.py`` and
``tests/quality/test_out_of_order_reference.py`` prove the out-of-order contract on."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conformance.checks import check_trace
from conformance.scenarios import parse_scenario
from pytest_keyshared.driver import run_scenario
from pytest_keyshared.targets import open_target

Rows = list[dict[str, Any]]

#: c1 holds everything of 30 keys, c2 joins, more messages arrive: keys move to c2 while c1 holds them
JOIN_WHILE_HELD = {
    "name": "ooo-join-while-held",
    "subscription": {"allow_out_of_order_delivery": True},
    "settings": {"drain_timeout_ms": 6000, "quiet_ms": 300, "drain_quiet_ms": 1500, "step_timeout_ms": 5000},
    "steps": [
        {"do": "open", "consumer": "c1", "behaviour": "hold"},
        {"do": "sleep", "ms": 10},
        {"do": "publish", "count": 60, "keys": 30},
        {"do": "wait_quiet"},
        {"do": "open", "consumer": "c2"},
        {"do": "sleep", "ms": 10},
        {"do": "publish", "count": 60, "keys": 30},
        {"do": "wait_quiet"},
        {"do": "ack_held", "consumer": "c1"},
        {"do": "wait_quiet"},
    ],
}


def model_run(out: Path) -> tuple[str, Rows]:
    """The header line and the events of one model run (Pulsar 4.0, PIP-379 dispatcher)."""
    with open_target("model", artifacts_dir=out / "target") as target:
        result = run_scenario(target, parse_scenario(JOIN_WHILE_HELD), seed=3, out_dir=out / "run", live_check=False)
    header, *lines = Path(result.trace_path).read_text(encoding="utf-8").splitlines()
    return header, [json.loads(line) for line in lines]


def check(header: str, rows: Rows, tmp_path: Path, profile: str | None = None) -> Any:
    """The verdict of ``rows`` (renumbered) under ``header``, written to ``tmp_path/trace.jsonl``."""
    path = tmp_path / "trace.jsonl"
    renumbered = [{**row, "i": i} for i, row in enumerate(rows)]
    path.write_text("\n".join([header, *map(json.dumps, renumbered)]) + "\n", encoding="utf-8")
    return check_trace(path, profile=profile)


def equal_timestamps(rows: Rows) -> Rows:
    return [{**row, "t": 0, **({"t0": 0} if "t0" in row else {})} for row in rows]


def late_acks(rows: Rows) -> Rows:
    """Every ack logged just before the end, in its order: held longer than it was, never shorter."""
    acks = [row for row in rows if row["op"] == "ack"]
    rest = [row for row in rows if row["op"] != "ack"]
    end = next(n for n, row in enumerate(rest) if row["op"] == "end")
    t_end = rest[end]["t"]
    return rest[:end] + [{**row, "t": t_end} for row in acks] + rest[end:]


def misassign(rows: Rows) -> Rows:
    """A new message of a key c1 kept when c2 joined, delivered to c2 (which never owned it): routing is not
    relaxed.  (The other way round would be excused under equal timestamps: c1 owned every key before the join.)"""
    joined = next(n for n, row in enumerate(rows) if row["op"] == "open" and row["consumer"] == "c2")
    n = next(n for n, row in enumerate(rows) if n > joined and row["op"] == "receive" and row["consumer"] == "c1")
    return [*rows[:n], {**rows[n], "consumer": "c2"}, *rows[n + 1 :]]


def redeliver_after_ack(rows: Rows) -> Rows:
    """An acknowledged message delivered again, with no redelivery asked for."""
    ack = next(row for row in rows if row["op"] == "ack" and row["consumer"] == "c2")
    receive = next(row for row in rows if row["op"] == "receive" and row["msg_id"] == ack["msg_id"])
    end = next(n for n, row in enumerate(rows) if row["op"] == "end")
    return [*rows[:end], {**receive, "t": rows[end]["t"]}, *rows[end:]]


def lose(rows: Rows) -> Rows:
    """One published message never delivered (its receives and acks removed)."""
    lost = next(row["msg_id"] for row in rows if row["op"] == "receive" and row["consumer"] == "c2")
    return [row for row in rows if not (row["op"] in ("receive", "ack") and row.get("msg_id") == lost)]


FORMS: dict[str, Callable[[Rows], Rows]] = {"as-run": list, "equal-t": equal_timestamps, "late-acks": late_acks}
