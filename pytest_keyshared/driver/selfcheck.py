"""The driver's check of its own traces: the recording discipline the checkers' soundness rests on.

Jepsen validates what its clients report before the checkers see it (``client/validate``); this does the same
for a finished trace.  Every problem here is a harness bug, never a broker finding: a ``receive`` before its
consumer's ``open``, an ``ack`` of a message that incarnation never received, an event after ``end``, a
``receive``/``ack``/``nack`` without its ``topic`` or with a ``msg_id`` short of its four parts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["discipline_problems"]

#: ``ledger:entry:partition:batch_index``: the driver always writes all four parts.
_FULL_MSG_ID = re.compile(r"^-?\d+:-?\d+:-?\d+:-?\d+$")


def discipline_problems(events: Iterable[Mapping[str, Any]], *, limit: int = 20) -> list[str]:
    """Problems with the order and content of ``events`` (decoded trace lines, header excluded)."""
    problems: list[str] = []
    open_now: set[str] = set()
    received: dict[str, set[str]] = {}
    expected_i = 0
    last_t = 0
    ended = False

    def problem(text: str) -> None:
        if len(problems) < limit:
            problems.append(text)

    for e in events:
        i, t, op, consumer = e.get("i"), e.get("t", 0), e.get("op"), str(e.get("consumer"))
        where = f"event {i} ({op})"
        if i != expected_i:
            problem(f"{where}: expected i={expected_i}")
        expected_i = (i if isinstance(i, int) else expected_i) + 1
        if t < last_t:
            problem(f"{where}: t={t} goes back from {last_t}")
        last_t = max(last_t, t)
        if ended:
            problem(f"{where}: recorded after end")
        if op == "end":
            ended = True
        elif op == "open":
            if consumer in open_now:
                problem(f"{where}: {consumer!r} opened while open")
            if e.get("result") == "ok":
                open_now.add(consumer)
                received[consumer] = set()
        elif op in ("receive", "ack", "nack", "redeliver"):
            if op != "redeliver" and not e.get("topic"):
                problem(f"{where}: no topic")
            if op != "redeliver" and not _FULL_MSG_ID.match(str(e.get("msg_id"))):
                problem(f"{where}: msg_id {e.get('msg_id')!r} is not ledger:entry:partition:batch_index")
            if consumer not in open_now:
                problem(f"{where}: {consumer!r} is not open")
                continue
            if op == "receive":
                received[consumer].add(e.get("msg_id", ""))
            elif op in ("ack", "nack") and e.get("msg_id") not in received[consumer]:
                problem(f"{where}: {consumer!r} never received {e.get('msg_id')} in this incarnation")
        elif op == "closed":
            if consumer in open_now:
                problem(f"{where}: {consumer!r} is open again")
        elif op in ("close", "crash"):
            if consumer not in open_now:
                problem(f"{where}: {consumer!r} is not open")
            open_now.discard(consumer)
        elif op == "publish" and e.get("result") == "ok" and not e.get("msg_id"):
            problem(f"{where}: ok without a msg_id")
    if not ended:
        problem("no end event")
    return problems
