"""``undelivered``: in a drained run, a message that needed (re)delivery and never got it.

Property: what goes in must come out (Jepsen's ``total-queue``), judged only when the run ended with an
``end`` event carrying ``drained: true`` — the harness received and acknowledged on every open consumer until
the subscription was quiet or the drain bound expired, so a stalled broker shows up here.  Without it the
check is not judged and the verdict says so.

Rule: a message is reported when, after the last event, it is *free* in a subscription: known (an ``ok``
publish receipt that reaches the subscription, or a receive), not acknowledged since its last receive, and
held by no consumer — it was published and never received, or it was received and later released (nack,
redeliver, close, crash, fault) and never received again.  A publish whose outcome is ``info`` is only
expected once received; a message held (received, never acknowledged) at the end was delivered.
Witness: the event that made it free (its publish, or its last release).

Cost: nothing beyond the shared state; the report walks the records still open at the end.
The Spark engine runs this same code (:mod:`conformance.checks.partition`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from conformance.checks._state import SubState, event_ref, free_mark, msg_of
from conformance.violations import Kind, Violation, render_elle

__all__ = ["explain", "make_undelivered", "undelivered"]


def undelivered(sub: SubState, end_i: int, owed_here: Callable[[SubState, str], bool]) -> list[Violation]:
    """The ``undelivered`` of a drained run ending at E``end_i``: each message of ``sub`` still free (known,
    unacknowledged, held by nobody) that ``owed_here`` says this subscription is owed, witnessed by the event that
    made it free."""
    found = []
    for mkey, rec in sub.recs.items():
        if rec.free is not None and owed_here(sub, mkey):
            ref = event_ref(free_mark(rec.free), msg_of(mkey))
            found.append(make_undelivered(sub.name, rec.key, msg_of(mkey), ref, end_i))
    return found


def make_undelivered(subscription: str, key: str, msg: str, since_ref: Sequence[Any], end_i: int) -> Violation:
    facts = {"subscription": subscription, "key": key, "msg": msg, "end": end_i, "refs": [list(since_ref)]}
    consumers = () if since_ref[2] is None else (since_ref[2],)
    return Violation(Kind.UNDELIVERED, key, consumers, (since_ref[0],), explain(facts), subscription, facts)


def explain(facts: Mapping[str, Any]) -> str:
    (since,) = facts["refs"]
    msg, key = facts["msg"], facts["key"]
    how = "was published" if since[1] == "publish" else "needed delivery again"
    return render_elle(
        f"undelivered: {msg} (key {key!r}) never reached a consumer of {facts['subscription']!r}",
        [since],
        [
            f"{msg} {how} from E{since[0]} on: it was not acknowledged and no consumer held it.",
            f"The run was drained (E{facts['end']}): every open consumer received and acknowledged until quiet.",
            f"However, {msg} was never received after E{since[0]}.",
        ],
    )
