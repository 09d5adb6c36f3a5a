"""Message expiry (TTL): which messages a ``fault`` ``expire_messages`` may have expired (``docs/checker.md``).

Pulsar's TTL check (``PersistentMessageExpiryMonitor``, which the admin API's ``expireMessages`` runs at once)
moves a subscription's mark-delete position to the newest message published more than the TTL ago: the broker
acknowledges those messages itself.  An expired message is therefore not lost, and its holder's hold ends with
the expiry (the broker dropped its pending ack: a joiner may get the key next).  The driver records the expiry
as a ``fault`` with ``fault: "expire_messages"``, ``subscription``, ``expire_seconds`` and ``consumers: []``,
*after* the call returned, so every message the broker expired was published, hence sent (``t0``), more than
``expire_seconds`` before the event's ``t``.  The rule excuses only (a message that may have expired is treated
as acknowledged by the broker, armed by nobody) and never condemns: a broker need not expire a message it may
expire, and a client may still hand out expired messages it had prefetched.  A message whose send time the trace
does not know (known from a receive only), or a trace whose clock did not move between the send and the expiry
(equal timestamps), gives no evidence of age: it may have expired.

Cost: one pass over the subscription's unsettled messages per expiry (a rare event).  The Spark engine runs this
same code in every part (a fault is copied into each).
"""

from __future__ import annotations

from typing import Any

__all__ = ["EXPIRE_FAULT", "may_expire"]

#: the ``fault`` value of an expiry event
EXPIRE_FAULT = "expire_messages"


def may_expire(t0: Any, t: int, seconds: Any) -> bool:
    """Whether a message sent at ``t0`` (ns; None: unknown) may have expired at an expiry recorded at ``t`` with
    ``expire_seconds`` = ``seconds`` (a malformed value: every message may have)."""
    if t0 is None or isinstance(seconds, bool) or not isinstance(seconds, int) or seconds < 0:
        return True
    if t0 >= t:  # the clock did not move between the send and the expiry: no evidence of age
        return True
    return bool(t0 < t - seconds * 1_000_000_000)
