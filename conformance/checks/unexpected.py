"""``unexpected_message``: a received message whose ``uid`` no publish event in the trace carries.

Property: nothing is delivered that was not published (Jepsen's ``unexpected``).  Every publish event —
whatever its result, since a failed or timed-out send may still have been stored — registers its ``uid``; a
receive whose uid was never registered by the end of the trace is reported once per uid, at its first receive
(a receive may be logged before its publish receipt, so the verdict waits for the end).  Receives without a
``uid`` are not judged.

Memory: one entry per published uid (shared with ``duplicate_publish``).
The Spark engine runs this same code (:mod:`conformance.checks.partition`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from conformance.violations import Kind, Violation, render_elle

__all__ = ["explain", "make_unexpected"]


def make_unexpected(uid: str, key: str | None, receive_ref: Sequence[Any]) -> Violation:
    facts = {"uid": uid, "key": key, "msg": receive_ref[3], "refs": [list(receive_ref)]}
    consumers = () if receive_ref[2] is None else (receive_ref[2],)
    return Violation(Kind.UNEXPECTED_MESSAGE, key, consumers, (receive_ref[0],), explain(facts), None, facts)


def explain(facts: Mapping[str, Any]) -> str:
    (got,) = facts["refs"]
    return render_elle(
        f"unexpected_message: uid {facts['uid']!r} was received but never published",
        [got],
        [
            f"E{got[0]} delivered {facts['msg']} carrying uid {facts['uid']!r}.",
            f"However, no publish event in the trace carries uid {facts['uid']!r}.",
        ],
    )
