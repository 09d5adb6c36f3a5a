"""The compacted-read rule: a ``readCompacted`` reader gets, per key, only the latest value up to the compaction
horizon (``ReplicatedSubscriptionTest.testReplicatedSubscriptionWithCompaction``: ``[V2]``, never ``V1``, never a
marker).

The horizon is the trace's ``fault`` ``compaction`` on a cluster: every message whose publish on that cluster was
confirmed before it is at or before the horizon (the compactor reads up to the topic's last entry when triggered).
Of a key's confirmed messages there, every one but the one at the highest message id is *superseded*: a
compacted reader that reads it is ``superseded_after_compaction``.  The latest one is owed to the reader (its
absence is ``undelivered``, judged with the reader's other owed messages) unless a later publish of the key on that
cluster is unconfirmed (it may have been stored and superseded it).  A key also published on another cluster
before the horizon is not judged: when its replicated copy was stored there, relative to the others, the trace
does not say.  A marker read is ``unexpected_message`` (no publish has its payload), as for every reader.
Called by :mod:`conformance.checks.replication`, the one place readers are judged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from conformance.trace.identity import canonical_message, parse_position
from conformance.violations import Kind, Violation, render_elle

__all__ = ["Compacted", "compacted_view", "make_superseded_read"]

#: a confirmed publish on one cluster: (event index, uid, key, message id)
Published = tuple[int, str, "str | None", "str | None"]


@dataclass(frozen=True, slots=True)
class Compacted:
    """What a compaction at event ``horizon_i`` on ``cluster`` implies for a compacted reader there:
    ``superseded`` (uid -> (the uid that superseded it, its publish event)) must not be read; ``not_owed`` are
    messages before the horizon the reader need not read (superseded, or not judged)."""

    cluster: str
    horizon_i: int
    superseded: Mapping[str, tuple[str, int]]
    not_owed: frozenset[str]


def _order(published: Published) -> tuple[int, int, int, int]:
    """A message's place on its cluster's copy: its message id (ledger, entry, batch), else its publish event."""
    if published[3] is None:
        return (1, 0, 0, published[0])
    return (0, *parse_position(canonical_message("t", published[3])[2]))  # one copy: the topic adds nothing


def compacted_view(
    cluster: str,
    horizon_i: int,
    published: Mapping[str, Sequence[Published]],
    unconfirmed: Mapping[str, Sequence[tuple[int, str | None]]],
) -> Compacted:
    """The compaction at event ``horizon_i`` on ``cluster``, from the confirmed publishes per cluster and the
    unconfirmed ones (event index, key)."""
    foreign = {p[2] for other, sent in published.items() if other != cluster for p in sent if p[0] < horizon_i} | {
        k for other, sent in unconfirmed.items() if other != cluster for i, k in sent if i < horizon_i
    }
    by_key: dict[str | None, list[Published]] = {}
    not_owed: set[str] = set()
    for p in published.get(cluster, ()):
        if p[0] >= horizon_i:
            continue
        if p[2] is None or p[2] in foreign:
            not_owed.add(p[1])
            continue
        by_key.setdefault(p[2], []).append(p)
    superseded: dict[str, tuple[str, int]] = {}
    for key, sent in by_key.items():
        ordered = sorted(sent, key=_order)
        latest = ordered[-1]
        for p in ordered[:-1]:
            superseded[p[1]] = (latest[1], latest[0])
            not_owed.add(p[1])
        if any(k == key and latest[0] < i < horizon_i for i, k in unconfirmed.get(cluster, ())):
            not_owed.add(latest[1])
    return Compacted(cluster, horizon_i, superseded, frozenset(not_owed))


def make_superseded_read(
    handle: str, compacted: Compacted, uid: str, key: str | None, publish_i: int, receive_i: int
) -> Violation:
    """``superseded_after_compaction``: compacted reader ``handle`` read ``uid``, superseded before the horizon
    (witness: the superseding publish, the compaction, the read)."""
    newer, newer_i = compacted.superseded[uid]
    facts: dict[str, Any] = {
        "uid": uid,
        "newer": newer,
        "cluster": compacted.cluster,
        "subscription": handle,
        "key": key,
        "refs": [
            [publish_i, "publish", None, None],
            [newer_i, "publish", None, None],
            [compacted.horizon_i, "fault", None, None],
            [receive_i, "receive", handle, None],
        ],
    }
    return Violation(
        Kind.SUPERSEDED_AFTER_COMPACTION,
        key,
        (handle,),
        (newer_i, compacted.horizon_i, receive_i),
        explain_superseded_read(facts),
        handle,
        facts,
    )


def explain_superseded_read(facts: Mapping[str, Any]) -> str:
    publish_i, newer_i, horizon_i, receive_i = (ref[0] for ref in facts["refs"])
    return render_elle(
        f"superseded_after_compaction: compacted reader {facts['subscription']!r} on {facts['cluster']} read"
        f" {facts['uid']}, superseded by {facts['newer']}",
        facts["refs"],
        [
            f"{facts['uid']} (E{publish_i}) and {facts['newer']} (E{newer_i}) have key {facts['key']!r};"
            f" {facts['newer']} was stored later on {facts['cluster']}, and both were confirmed before the"
            f" compaction at E{horizon_i}.",
            "A compacted topic keeps only the latest value of each key up to its horizon, and a readCompacted"
            " reader reads that (ReplicatedSubscriptionTest.testReplicatedSubscriptionWithCompaction: [V2]).",
            f"However, the reader read {facts['uid']} at E{receive_i}.",
        ],
    )
