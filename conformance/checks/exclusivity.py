"""``key_overlap``: a key outstanding at two consumers of one subscription at once.

Property (Key_Shared, PIP-379): the messages of one key are unacknowledged at no more than one consumer at a
time.  A message is *outstanding* (held) at consumer C from its ``receive`` until C's ``ack`` of it (or anyone's
ack), C's ``nack`` of it, or C's ``redeliver``, ``close`` or ``crash``, or a broker ``fault``, whichever comes
first.  Receives are recorded after the client returned the message and releases before the client call, so
an observed hold lies inside the broker's: an overlap seen in the trace happened at the broker.  A message
acknowledged before it is received (again) is outstanding nowhere: that receive holds no key (a late copy of
an acknowledged message, allowed after a release; ``docs/checker.md``).

Rule (one report per overlap *episode*): at a receive r by C of an unacknowledged message that takes C's count of
held messages of the key (in that topic partition) from 0 to 1, report one violation for each other consumer C'
holding the key at r.
Witness: the receive of the earliest-received message of the key still held by C', and r.

Cost: O(1) per event on the way (a dict per key of holders); the report scans C''s holdings of the key.
The Spark engine runs this same code (:mod:`conformance.checks.partition`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from conformance.checks._state import Incarnation, Record, SubState, holders_of, msg_of
from conformance.violations import Kind, Violation, render_elle

__all__ = ["explain", "make_overlap", "overlaps"]


def overlaps(
    sub: SubState, rec: Record, inc: Incarnation, i: int, mkey: str, hold: dict[Incarnation, int]
) -> list[Violation]:
    """The ``key_overlap`` s of a receive at E``i`` by ``inc`` of unacknowledged ``rec`` that starts its hold of
    the key (``inc`` holds none of the scope's messages; ``hold``: the scope's holders and their counts), one per
    other holder, each witnessed by that holder's earliest-received message of the key still held."""
    ref = (i, "receive", inc.consumer, msg_of(mkey))
    scope = rec.scope
    found = []
    for other in hold:
        first_mkey, first = next((m, r) for m, r in other.held.items() if r.scope == scope and not r.acked)
        holder_ref = (holders_of(first)[other], "receive", other.consumer, msg_of(first_mkey))
        found.append(make_overlap(sub.name, rec.key, other.consumer, holder_ref, inc.consumer, ref))
    return found


def make_overlap(
    subscription: str,
    key: str,
    holder: str,
    holder_ref: Sequence[Any],
    receiver: str,
    receive_ref: Sequence[Any],
) -> Violation:
    facts = {
        "subscription": subscription,
        "key": key,
        "holder": holder,
        "receiver": receiver,
        "refs": [list(holder_ref), list(receive_ref)],
    }
    return Violation(
        Kind.KEY_OVERLAP,
        key,
        (holder, receiver),
        tuple(sorted((holder_ref[0], receive_ref[0]))),
        explain(facts),
        subscription,
        facts,
    )


def explain(facts: Mapping[str, Any]) -> str:
    held, got = facts["refs"]
    key, holder, receiver = facts["key"], facts["holder"], facts["receiver"]
    return render_elle(
        f"key_overlap: key {key!r} outstanding at {holder} and {receiver} at once"
        f" (subscription {facts['subscription']!r})",
        [held, got],
        [
            f"{holder} held key {key!r} from E{held[0]}: {held[3]} was not acknowledged, negatively acknowledged"
            f" or released (redeliver, close, crash, fault) before E{got[0]}.",
            f"However, {receiver} received {got[3]} of key {key!r} at E{got[0]} while {holder} still held it:"
            " two consumers held one key at once.",
        ],
    )
