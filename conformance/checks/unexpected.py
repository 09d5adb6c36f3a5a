"""``unexpected_message``: a received message whose ``uid`` no publish event in the trace carries, or whose every
send failed.

Property: nothing is delivered that was not published (Jepsen's ``unexpected``).  Every publish event registers
its ``uid``; a receive whose uid was never registered by the end of the trace is reported once per uid, at its
first receive (a receive may be logged before its publish receipt, so the verdict waits for the end).  A send
whose outcome is unknown (``info``: a timeout, a lost connection) may still have been stored; one that failed
(``fail``: the recorder's word for an error after which the message was certainly not stored, such as the
broker's ``PersistenceError`` when its storage failed the write, or a client that never sent it) was not, so a
uid received while every publish of it by the end of the trace is ``fail`` is reported too, at its first receive
(``ClientDeduplicationFailureTest.testClientDeduplicationWithBkFailure``: subscribers see exactly the messages
whose send succeeded).  Receives without a ``uid`` are not judged.

Memory: one entry per published uid (shared with ``duplicate_publish``), and one per uid whose sends all failed.
The Spark engine runs this same code (:mod:`conformance.checks.partition`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from conformance.violations import Kind, Violation, render_elle

__all__ = ["explain", "make_unexpected"]


def make_unexpected(
    uid: str, key: str | None, receive_ref: Sequence[Any], *, failed_at: int | None = None
) -> Violation:
    """``failed_at``: the first publish of ``uid`` when every publish of it failed (else no publish carries it)."""
    facts = {"uid": uid, "key": key, "msg": receive_ref[3], "refs": [list(receive_ref)], "failed_at": failed_at}
    consumers = () if receive_ref[2] is None else (receive_ref[2],)
    return Violation(Kind.UNEXPECTED_MESSAGE, key, consumers, (receive_ref[0],), explain(facts), None, facts)


def explain(facts: Mapping[str, Any]) -> str:
    (got,) = facts["refs"]
    if facts.get("failed_at") is not None:
        return render_elle(
            f"unexpected_message: uid {facts['uid']!r} was received but every send of it failed",
            [got],
            [
                f"E{got[0]} delivered {facts['msg']} carrying uid {facts['uid']!r}.",
                f"However, every publish of uid {facts['uid']!r} (the first at E{facts['failed_at']}) failed: the"
                " broker said it did not store the message.",
            ],
        )
    return render_elle(
        f"unexpected_message: uid {facts['uid']!r} was received but never published",
        [got],
        [
            f"E{got[0]} delivered {facts['msg']} carrying uid {facts['uid']!r}.",
            f"However, no publish event in the trace carries uid {facts['uid']!r}.",
        ],
    )
