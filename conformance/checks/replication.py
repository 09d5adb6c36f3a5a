"""``skipped_after_failover``, ``replicated_cursor_ahead`` and ``redelivered_after_failover``: a replicated
subscription resumed on another cluster without a message it owed, a cluster's copy of it was already past one,
or it resumed before a position its cursor must already have passed.

PIP-33 (replicated subscriptions) promises a client that moves a subscription's consumer from cluster A to
cluster B that B resumes at a position no later than what the application acknowledged on A: only the
mark-delete position replicates, in snapshots, so B may deliver again what was already acknowledged on A
(allowed, counted in a note; apache/pulsar#10054) but never skips a message that was not (Pulsar's
``ReplicatorSubscriptionTest``; ``docs/dedup-and-replication.md``).  The client observes that promise, and this
check judges it, from ordinary trace events:

* a trace of a failover run lists its ``clusters`` in the header and writes each cluster's copy of a topic as
  ``<topic>@<cluster>`` (message ids of two clusters are unrelated, so they are two logs to the checkers);
* the application's move is a ``failover`` event: ``topic`` (the copy it leaves, ``<topic>@<A>``),
  ``subscription``, ``cluster`` (A) and ``to`` (B);
* the consumer's re-attachment on B is an ordinary ``open`` whose later receives name ``<topic>@<B>``.

Rule: for a ``failover`` F of subscription S from A, every message published (``ok``, with a ``uid``) on any
cluster's copy of the topic (a message published in a third cluster reaches S through replication too) that no
consumer of S acknowledged on A before F must be received by a consumer of S on another cluster than A after
F — judged when the run was drained (``end`` with ``drained: true``; else the kind is unjudged and the verdict
unknown).  Witness: the message's publish, F, and the ``end``.  Messages are matched across clusters by ``uid``
(the replicator copies properties).  What was never published yet received is the identity check's
``unexpected_message``; what a copy other than the one S ends on still holds is this check's, not
``undelivered`` (the streaming engine leaves those copies to this check).

Snapshots.  What a client can observe of PIP-33's snapshots is their effect on each cluster's copy of the
subscription: a snapshot maps a position P(A) of cluster A to a position P(B) in every other cluster such that
everything in B up to P(B) had reached A by P(A); B's cursor moves (an UPDATE marker, a cumulative ack) only to
the P(B) of the newest snapshot whose P(A) is at or before A's mark-delete position, which never passes an
unacknowledged message.  Snapshot positions themselves are never shown to clients (markers are not delivered),
but every cluster's subscription ``msgBacklog`` is (topic stats).  Markers that no consumer has read yet count in
it, so it can only be higher than the messages the cursor has not passed, never lower.  Hence the rule
``replicated_cursor_ahead``: at a ``snapshot`` event with ``settled: true`` (replication was idle and every cluster
up, so each copy holds every message published before it) for subscription S on cluster X, ``backlog`` must be at
least the number of messages published (``ok``, with a ``uid``, on any cluster) before the event that no consumer
of S acknowledged, on any cluster, before it.  A smaller backlog means X's cursor had passed at least that many
of them: a snapshot applied ahead of the acknowledgements (completed too early, from one cluster's answer, or
mapped wrongly).  The same bound holds on the cluster the consumer acknowledged on (there it is plain stats
consistency).  Witness: the snapshot and the publishes of the first unacknowledged messages.  Acknowledgements
are recorded before the client sends them, so one still on its way only raises the broker's backlog: the bound
stays sound.  A snapshot without ``settled: true`` is not judged (noted), nor is one in a trace whose messages
were published in batches (a backlog counts entries: a batch of ten is one; the failover workload publishes
one message per entry).  The rule reads event order only, so
equal timestamps change nothing.

Redeliveries.  Duplicates after a failover are allowed only past the position the replicated cursor must
already have reached: ``redelivered_after_failover``.  A *point* is a settled ``snapshot`` of S with
``snapshot_periods`` >= 1 (the harness let a whole snapshot period pass with replication idle before and after:
a snapshot started after every message published before it — a tick writes a request when data was written
since the last completed snapshot started, or that snapshot is already after them — and completed) at which a
consumer of S is open on cluster A, untouched by faults since it opened, and every message published (on any
cluster) before it had been acknowledged on A by a consumer of S with an acknowledgement known to have arrived:
sent by a consumer that then stayed connected through a settle, or closed (a close flushes); a crash or a fault
touching it drops its acknowledgements not yet proven.  The snapshot's marker then follows only acknowledged
entries; the dispatcher reads it (and acknowledges it) while the consumer is connected, the mark-delete passes
it, the subscription's cache hands it out at once (so no cache eviction, which differs per release — newest 10
up to 4.1, by distance from 4.2 — can drop it first, and a request held back after a timeout, #23839, needs a
pending snapshot that never completes, which a settle with every cluster up does not leave), and the UPDATE it
causes moves every other cluster's cursor past those messages once replication settles again.  Hence a point is
*confirmed* by a later settled ``snapshot`` (a later run of snapshot events) before the failover; the newest
confirmed point on A bounds the failover F from A: a message it covers, received again on another cluster
after F, is ``redelivered_after_failover`` (witness: its acknowledgement on A, the point, F, the receive).  The
bound is a floor, the same at every release the model knows: acknowledgements after a point (a snapshot passed
later) make no point of their own, as the cache may have evicted their snapshot by then, unless nothing can have
been evicted: a point made with holes open (:meth:`ReplicationCheck._holed_point`: a settle's messages all
acknowledged by a later settle, by a consumer open there throughout that read past it, no fault, and at most as
many snapshots completed as the cache holds: 2W for W writes, or the recorded ``/metrics`` count).
Acknowledged messages past the bound that come again are allowed and counted in a note (how many, and how many
the bound forbade).
It assumes the consumer has permits (its dispatcher reads the marker) and the harness publishes nothing while it
settles.  The rule reads event order only: equal timestamps change nothing.  Judged in undrained runs too (a
redelivery seen is seen).  A ``subscription_deleted`` on B voids the points made before it for a failover to B
(the cursor they moved is gone; the next update creates the subscription again, so later points hold).

Status off.  While S's replicated status is off on A (a ``replicated_subscription_off`` until its ``_on``), A
writes no cursor update for S: a message published meanwhile and acknowledged on A is owed again after a failover
from A that comes while it is still off (``skipped_after_failover``; ``testReplicatedSubscriptionRestApi1``).

Copies and readers.  A message (one ``uid``) received on one cluster's copy under two message ids was stored
there twice, a replicator's resend its deduplication let through: ``duplicate_publish`` (permitted with
deduplication off; ``OneWayReplicatorDeduplicationTest``).  A reader (``open`` with ``reader: true``) opened
right after a settled ``snapshot`` must have received every message published before it by its ``close``, else
``undelivered`` (``testReplicatedSubscriptionAcrossTwoRegionsGetLastMessage``).

A pure function of the events, in one pass: O(events) time, O(messages) memory (O(messages) per settled
snapshot to test a point).  Both engines call it
(:func:`conformance.checks.api.compose_checks`), so it has one implementation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from conformance.checks.compaction import Compacted, compacted_view, make_superseded_read
from conformance.trace.events import Event
from conformance.trace.header import TraceHeader
from conformance.trace.identity import canonical_message, parse_position
from conformance.violations import Kind, Violation, render_elle

__all__ = [
    "ReplicationCheck",
    "ReplicationFindings",
    "check_replication",
    "cluster_of",
    "is_replication_run",
    "make_cursor_ahead",
]

#: Shown per failover in an explanation before "... and N more".
MAX_LISTED = 8
#: Publishes named as witnesses of one ``replicated_cursor_ahead``.
MAX_WITNESSES = 3
#: The ``snapshot`` event's ``metrics`` counter of completed snapshots (:data:`conformance.target.SNAPSHOT_METRICS`)
SNAPSHOTS_COMPLETED = "pulsar_replicated_subscriptions_snapshot_ms_count"
#: ``replicatedSubscriptionsSnapshotMaxCachedPerSubscription``: Pulsar's default, used when the header's
#: ``broker_conf`` does not set it (a point made with holes open relies on nothing being evicted).
SNAPSHOT_CACHE_NAME = "replicatedSubscriptionsSnapshotMaxCachedPerSubscription"
DEFAULT_SNAPSHOT_CACHE = 10


def is_replication_run(header: TraceHeader | None) -> bool:
    """True when the header lists the clusters of a replicated-subscription run (``"clusters": [...]``)."""
    clusters = None if header is None else header.extra.get("clusters")
    return isinstance(clusters, list) and len(clusters) >= 2


def cluster_of(topic: str | None) -> str | None:
    """The cluster a failover trace's topic names (``<topic>@<cluster>``), or None."""
    if topic is None or "@" not in topic:
        return None
    return topic.rpartition("@")[2] or None


@dataclass(frozen=True, slots=True)
class ReplicationFindings:
    """What the check concluded: violations, notes for people, kinds it could not judge."""

    violations: tuple[Violation, ...] = ()
    notes: tuple[str, ...] = ()
    unjudged: tuple[Kind, ...] = ()


@dataclass(frozen=True, slots=True)
class _Point:
    """A settled snapshot at which every message published so far had been acknowledged on one cluster."""

    i: int  #: the snapshot event
    uids: frozenset[str]  #: the messages published before it, all acknowledged (acks that arrived) there
    acks: Mapping[str, int]  #: uid -> its acknowledgement on that cluster (a witness)
    #: a point made with holes open: the settled snapshot whose messages (``uids``) were all acknowledged only
    #: later, by the settle ``i`` (None: they were all acknowledged at ``i`` itself)
    since: int | None = None


@dataclass(frozen=True, slots=True)
class _Holed:
    """A settled snapshot (with ``snapshot_periods``) taken while messages published before it were unacknowledged:
    it becomes a point once they are all acknowledged, while its snapshot cannot have left the cache."""

    i: int
    uids: frozenset[str]


@dataclass
class _Failover:
    i: int
    subscription: str | None
    left: str  #: cluster A
    to: str | None
    acked: set[str]  #: uids acknowledged on A by consumers of the subscription before the failover
    #: uid -> the first receive of it on another cluster after the failover
    after: dict[str, int] = field(default_factory=dict)
    #: the newest confirmed snapshot point on A before the failover (``redelivered_after_failover``), if any
    bound: _Point | None = None
    #: the subscription was deleted on ``to`` after the newest confirmed point: the failover is not bounded
    deleted: bool = False
    #: the subscription's replicated status was off on the left cluster from this event until the failover: what
    #: was published after it never moved another cluster's cursor, so it is owed again there even if acknowledged
    off_since: int | None = None


class ReplicationCheck:
    """Feed events in trace order (:meth:`feed`), then :meth:`finish`; or call :func:`check_replication`."""

    def __init__(self, header: TraceHeader | None = None) -> None:
        self.default_sub = None if header is None else header.subscription.name
        self.max_cached = snapshot_cache_size(header)
        #: consumer handle -> subscription of its live incarnation
        self.subs: dict[str, str | None] = {}
        #: cluster -> [(i, uid, key, msg_id)] of its publishes, in order
        self.published: dict[str, list[tuple[int, str, str | None, str | None]]] = {}
        self.uid_of: dict[str, str] = {}  #: message key -> uid (from its publish or a receive)
        #: (subscription, cluster) -> uids acknowledged there so far
        self.acked: dict[tuple[str | None, str], set[str]] = {}
        self.acked_by_sub: dict[str | None, set[str]] = {}  #: subscription -> uids acknowledged on any cluster
        self.cursor_ahead: list[Violation] = []
        self.batched_at: int | None = None  #: the first publish stored in a batch (backlogs then count entries)
        self.failovers: list[_Failover] = []
        self.end_i: int | None = None
        self.drained = False
        self.notes: list[str] = []
        self.attached: dict[str, str] = {}  #: consumer handle -> cluster of its live incarnation
        #: cluster -> events that made a message of that cluster's copy free (its publishes, its consumers'
        #: releases): an engine that cannot see topics drops ``undelivered`` witnessed by them on a left cluster
        self.freed_on: dict[str, set[int]] = {}
        # ``redelivered_after_failover`` (see :meth:`_snapshot_point`)
        self.publish_of: dict[str, tuple[int, str | None, str | None]] = {}  #: uid -> (first publish, key, msg_id)
        self.open_on: dict[str, tuple[str | None, str]] = {}  #: open handle -> (subscription, cluster)
        self.disturbed: set[str] = set()  #: open handles a fault touched since they opened
        self.pending_acks: dict[str, dict[str, int]] = {}  #: handle -> uid -> ack not yet known to have arrived
        #: (subscription, cluster) -> uid -> an acknowledgement known to have reached the broker
        self.sure_acks: dict[tuple[str | None, str], dict[str, int]] = {}
        self.candidates: dict[tuple[str | None, str], _Point] = {}  #: points waiting for a later settled snapshot
        self.bounds: dict[tuple[str | None, str], _Point] = {}  #: confirmed points, the newest per key
        #: (subscription, cluster) -> the last ``subscription_deleted`` there: a point made before it does not
        #: bound a failover to that cluster (the cursor it moved is gone); one made after it does (its update
        #: creates the subscription again at the snapshot's position, ``receiveSubscriptionUpdated``)
        self.deleted_on: dict[tuple[str | None, str], int] = {}
        #: (subscription, cluster) whose replicated status is switched off now (``replicated_subscription_off``)
        self.status_off: set[tuple[str | None, str]] = set()
        #: (subscription, cluster) -> the ``replicated_subscription_off`` that switched it off, while it is off
        self.off_since: dict[tuple[str | None, str], int] = {}
        #: (cluster, uid) -> (message key, first receive, key): where each published message was first received on
        #: each cluster's copy of the topic (``duplicate_publish`` when it comes under another message id there)
        self.stored_at: dict[tuple[str, str], tuple[Any, int, str]] = {}
        self.stored_twice: list[Violation] = []
        #: the uids published before the event just fed, when it was a settled ``snapshot`` (else None), and the
        #: same for the event before it (a reader opened right after a settled snapshot is judged)
        self.settled_uids: frozenset[str] | None = None
        self.before_uids: frozenset[str] | None = None
        #: reader handle -> (cluster, its open, the uids it must read, the uids it read)
        self.readers: dict[str, tuple[str, int, frozenset[str], set[str]]] = {}
        self.reader_misses: list[Violation] = []
        #: compaction (:mod:`conformance.checks.compaction`): cluster -> its last ``compaction`` fault; the
        #: unconfirmed publishes per cluster (event, key); compacted reader handle -> what its compaction implies
        self.compactions: dict[str, int] = {}
        self.unconfirmed: dict[str, list[tuple[int, str | None]]] = {}
        self.compacted_readers: dict[str, Compacted] = {}
        self.superseded_reads: list[Violation] = []
        self.group_start = -1  #: the first event of the current run of consecutive ``snapshot`` events
        # points made with holes open (:meth:`_holed_point`)
        self.writes = 0  #: publish attempts on any cluster's copy (each may store an entry: data for a snapshot)
        self.unconfirmed_seen = False  #: a publish without ``ok`` (it may have been stored, unacknowledged)
        self.last_fault = -1  #: the last ``fault`` event (any: a restart or reset may drop a snapshot cache)
        self.opened_at: dict[str, int] = {}  #: open handle -> its ``open``
        #: (subscription, cluster) -> the latest publish (event) of a message received there by a consumer of it
        self.read_past: dict[tuple[str | None, str], int] = {}
        self.holed: dict[tuple[str | None, str], list[_Holed]] = {}  #: settles with holes open, oldest first
        #: cluster -> (its latest ``snapshot`` event with ``metrics``, the snapshots completed there by then)
        self.completed: dict[str, tuple[int, int]] = {}
        self.last_op: str | None = None

    def feed(self, event: Event) -> None:
        op = event.op.value
        self.before_uids, self.settled_uids = self.settled_uids, None
        if op == "snapshot" and self.last_op != "snapshot":
            self.group_start = event.i
        self.last_op = op
        if op == "open":
            if event.result is None or event.result.value == "ok":
                handle = str(event.consumer)
                sub = self.subs[handle] = event.subscription or self.default_sub
                cluster = cluster_of(event.topic)
                if cluster is not None and event.extra.get("reader") is True:
                    self._reader_open(event, handle, cluster)
                if cluster is not None:
                    self.attached[handle] = cluster
                    self.open_on[handle] = (sub, cluster)
                    self.opened_at[handle] = event.i
                    self.disturbed.discard(handle)
                    self.pending_acks.pop(handle, None)
        elif op in ("nack", "redeliver", "close", "crash"):
            cluster = self.attached.get(str(event.consumer))
            if cluster is not None:
                self.freed_on.setdefault(cluster, set()).add(event.i)
            if op in ("close", "crash"):
                self._detach(str(event.consumer), graceful=op == "close")
                self._reader_close(event)
        elif op == "fault":
            self._fault(event)
        elif op == "publish":
            cluster = cluster_of(event.topic)
            if cluster is None:
                return
            self.freed_on.setdefault(cluster, set()).add(event.i)
            self.writes += 1
            if event.result is None or event.result.value != "ok" or event.uid is None:
                self.unconfirmed_seen = True
                if event.result is None or event.result.value == "info":  # may have been stored
                    self.unconfirmed.setdefault(cluster, []).append((event.i, event.key))
                return
            self.published.setdefault(cluster, []).append((event.i, event.uid, event.key, event.msg_id))
            self.publish_of.setdefault(event.uid, (event.i, event.key, event.msg_id))
            if event.msg_id is not None and event.topic is not None:
                mkey, _stream, msg = canonical_message(event.topic, event.msg_id)
                self.uid_of[mkey] = event.uid
                if self.batched_at is None and parse_position(msg)[2] >= 0:
                    self.batched_at = event.i
        elif op == "receive":
            self._receive(event)
        elif op == "ack":
            cluster = cluster_of(event.topic)
            if cluster is None or event.msg_id is None or event.topic is None:
                return
            uid = self.uid_of.get(canonical_message(event.topic, event.msg_id)[0])
            if uid is not None:
                sub = self.subs.get(str(event.consumer))
                self.acked.setdefault((sub, cluster), set()).add(uid)
                self.acked_by_sub.setdefault(sub, set()).add(uid)
                if self.open_on.get(str(event.consumer)) == (sub, cluster):
                    self.pending_acks.setdefault(str(event.consumer), {}).setdefault(uid, event.i)
        elif op == "failover":
            self._failover(event)
        elif op == "snapshot":
            self._snapshot(event)
        elif op == "end":
            self.end_i = event.i
            self.drained = bool(event.drained)

    def _receive(self, event: Event) -> None:
        cluster = cluster_of(event.topic)
        if cluster is None or event.uid is None:
            return
        reading = self.readers.get(str(event.consumer))
        if reading is not None:
            reading[3].add(event.uid)
        compacted = self.compacted_readers.get(str(event.consumer))
        if compacted is not None and event.uid in compacted.superseded and event.uid in self.publish_of:
            self.superseded_reads.append(
                make_superseded_read(
                    str(event.consumer), compacted, event.uid, event.key, self.publish_of[event.uid][0], event.i
                )
            )
        if event.msg_id is not None and event.topic is not None:
            mkey, _stream, msg = canonical_message(event.topic, event.msg_id)
            self.uid_of.setdefault(mkey, event.uid)
            self._stored(event, cluster, mkey, msg)
        sub = self.subs.get(str(event.consumer))
        published = self.publish_of.get(event.uid)
        if published is not None and published[0] > self.read_past.get((sub, cluster), -1):
            self.read_past[(sub, cluster)] = published[0]
        for failover in self.failovers:
            if failover.subscription == sub and cluster != failover.left:
                failover.after.setdefault(event.uid, event.i)

    def _reader_open(self, event: Event, handle: str, cluster: str) -> None:
        """A reader from the earliest message (``reader: true``) opened right after a settled snapshot must read
        every message published before it (``testReplicatedSubscriptionAcrossTwoRegionsGetLastMessage``).  A
        compacted one (``compacted: true``) after a ``compaction`` there owes, of the messages before the horizon,
        only each key's latest, and must read no superseded one (:mod:`conformance.checks.compaction`)."""
        expected = self.before_uids
        horizon_i = self.compactions.get(cluster) if event.extra.get("compacted") is True else None
        if horizon_i is not None:
            compacted = compacted_view(cluster, horizon_i, self.published, self.unconfirmed)
            self.compacted_readers[handle] = compacted
            if expected is not None:
                expected = expected - compacted.not_owed
        if expected is None:
            self.notes.append(f"reader {handle!r} E{event.i} not judged: no settled snapshot right before it")
            return
        self.readers[handle] = (cluster, event.i, expected, set())

    def _reader_close(self, event: Event) -> None:
        """``undelivered``: a message the reader had to read and did not, before it closed."""
        self.compacted_readers.pop(str(event.consumer), None)
        reading = self.readers.pop(str(event.consumer), None)
        if reading is None:
            return
        cluster, open_i, expected, read = reading
        missing = sorted((self.publish_of[uid][0], uid) for uid in expected - read)
        for _publish_i, uid in missing[:MAX_LISTED]:
            self.reader_misses.append(
                make_reader_miss(str(event.consumer), cluster, uid, self.publish_of[uid], open_i, event.i, len(missing))
            )

    def _stored(self, event: Event, cluster: str, mkey: Any, msg: str) -> None:
        """``duplicate_publish`` on one cluster's copy: a published message received there under two message
        ids was stored there twice (a replicator's resend after lost receipts or a repeated send that the
        cluster's deduplication let through, ``OneWayReplicatorDeduplicationTest``); permitted, as every
        ``duplicate_publish``, when the header says deduplication is off."""
        uid = str(event.uid)
        first = self.stored_at.get((cluster, uid))
        if first is None:
            self.stored_at[(cluster, uid)] = (mkey, event.i, msg)
            return
        if first[0] == mkey or uid not in self.publish_of:
            return
        seen = self.stored_at.setdefault((cluster, f"{uid}\0{msg}"), (mkey, event.i, msg))
        if seen[1] == event.i:  # the first receive of this second id: one violation per extra id
            self.stored_twice.append(make_stored_twice(cluster, uid, first, event, msg, self.publish_of[uid]))

    def _failover(self, event: Event) -> None:
        left = cluster_of(event.topic) or event.extra.get("cluster")
        if not isinstance(left, str):
            self.notes.append(f"failover E{event.i} names no cluster it left (topic '<topic>@<cluster>'): ignored")
            return
        sub = event.subscription or self.default_sub
        to = event.extra.get("to")
        acked = set(self.acked.get((sub, left), ()))
        bound = self.bounds.get((sub, left))
        deleted_at = self.deleted_on.get((sub, to)) if isinstance(to, str) else None
        deleted = deleted_at is not None and (bound is None or bound.i < deleted_at)
        if deleted:
            bound = None
        self.failovers.append(
            _Failover(
                event.i,
                sub,
                left,
                to if isinstance(to, str) else None,
                acked,
                bound=bound,
                deleted=deleted,
                off_since=self.off_since.get((sub, left)),
            )
        )

    def _detach(self, handle: str, *, graceful: bool) -> None:
        """A consumer closed (its client flushes its acknowledgements first) or crashed (they may be lost)."""
        where = self.open_on.pop(handle, None)
        pending = self.pending_acks.pop(handle, {})
        self.disturbed.discard(handle)
        if graceful and where is not None:
            sure = self.sure_acks.setdefault(where, {})
            for uid, i in pending.items():
                sure.setdefault(uid, i)

    def _fault(self, event: Event) -> None:
        """A fault touching a consumer (its ``consumers``; all when it names none or has ``unattributed``
        handlers, as the streaming checks read it) may have lost the acknowledgements it had not yet sent."""
        self.last_fault = event.i
        switch = event.extra.get("fault")
        if switch in ("replicated_subscription_off", "replicated_subscription_on"):
            self._status(event, on=switch == "replicated_subscription_on")
        elif switch == "compaction" and isinstance(event.extra.get("cluster"), str):
            self.compactions[event.extra["cluster"]] = event.i
        elif switch == "subscription_deleted" and isinstance(event.extra.get("cluster"), str):
            self.deleted_on[(event.subscription or self.default_sub, event.extra["cluster"])] = event.i
        named = event.extra.get("consumers")
        touched = list(self.open_on) if not isinstance(named, list) or event.extra.get("unattributed") else named
        for handle in touched:
            if str(handle) in self.open_on:
                self.pending_acks.pop(str(handle), None)
                self.disturbed.add(str(handle))

    def _snapshot(self, event: Event) -> None:
        """``replicated_cursor_ahead``: a settled snapshot's backlog below what nobody acknowledged (module doc)."""
        cluster, backlog = event.extra.get("cluster"), event.extra.get("backlog")
        if not isinstance(backlog, int) or isinstance(backlog, bool) or not isinstance(cluster, str):
            self.notes.append(f"snapshot E{event.i} has no cluster or integer backlog: not judged")
            return
        if event.extra.get("settled") is not True:
            self.notes.append(
                f"snapshot E{event.i} ({cluster}) not judged: replication had not settled (or a cluster was down)"
            )
            return
        self.settled_uids = frozenset(self.publish_of)
        metrics = event.extra.get("metrics")
        count = metrics.get(SNAPSHOTS_COMPLETED) if isinstance(metrics, Mapping) else None
        if isinstance(count, int) and not isinstance(count, bool):
            self.completed[cluster] = (event.i, count)
        self._snapshot_point(event)
        if self.batched_at is not None:
            self.notes.append(
                f"snapshot E{event.i} ({cluster}) not judged: messages were published in batches (E{self.batched_at}),"
                " and a backlog counts entries, not messages"
            )
            return
        sub = event.subscription or self.default_sub
        acked = self.acked_by_sub.get(sub, set())
        owed: dict[str, tuple[int, str, str | None, str | None]] = {}
        for published in self.published.values():
            for p in published:
                if p[1] not in acked and p[1] not in owed:
                    owed[p[1]] = p
        if backlog < len(owed):
            first = sorted(owed.values())[:MAX_WITNESSES]
            self.cursor_ahead.append(make_cursor_ahead(event.i, sub, cluster, backlog, len(owed), first))

    def _status(self, event: Event, *, on: bool) -> None:
        """The subscription's replicated status switched on a cluster: while it is off anywhere no point is made,
        and one not yet confirmed is dropped (its update may never be written or applied)."""
        cluster = event.extra.get("cluster")
        if not isinstance(cluster, str):
            self.notes.append(f"fault E{event.i} switches a replicated status but names no cluster: ignored")
            return
        sub = event.subscription or self.default_sub
        if on:
            self.status_off.discard((sub, cluster))
            self.off_since.pop((sub, cluster), None)
            return
        self.status_off.add((sub, cluster))
        self.off_since.setdefault((sub, cluster), event.i)
        for key in [k for k in self.candidates if k[0] == sub]:
            del self.candidates[key]
        for key in [k for k in self.holed if k[0] == sub]:
            del self.holed[key]

    def _snapshot_point(self, event: Event) -> None:
        """``redelivered_after_failover``'s bound: a settled snapshot as a point the replicated cursor must pass.

        Every settled snapshot confirms the points of earlier settles (the update they caused has reached every
        cluster by then).  One with ``snapshot_periods`` >= 1 (the harness waited a whole snapshot period with
        replication idle, so a snapshot started after every message published before it and completed) is a
        point for each cluster where a consumer of the subscription is open and was untouched by faults: its
        acknowledgements so far have reached the broker, and if they cover every message published so far,
        the snapshot's marker follows only acknowledged entries, the mark-delete passes it as the dispatcher
        reads it, and its update moves every other cluster's cursor past those messages (module doc).
        """
        for key, point in list(self.candidates.items()):
            if point.i < self.group_start:
                del self.candidates[key]
                if key not in self.bounds or self.bounds[key].i < point.i:
                    self.bounds[key] = point
        periods = event.extra.get("snapshot_periods")
        if isinstance(periods, bool) or not isinstance(periods, int) or periods < 1:
            return
        sub = event.subscription or self.default_sub
        if any(off[0] == sub for off in self.status_off):
            return
        for handle, where in self.open_on.items():
            if where[0] != sub or handle in self.disturbed:
                continue
            sure = self.sure_acks.setdefault(where, {})
            for uid, i in self.pending_acks.pop(handle, {}).items():
                sure.setdefault(uid, i)
        for handle, where in self.open_on.items():
            if where[0] != sub or handle in self.disturbed:
                continue
            candidate = self.candidates.get(where)
            if candidate is not None and candidate.i >= self.group_start:
                continue  # this settle's point is made (one per run of snapshot events)
            sure = self.sure_acks.get(where, {})
            if not self.publish_of or any(uid not in sure for uid in self.publish_of):
                self._holed_point(event, handle, where, sure)
                continue
            self.candidates[where] = _Point(event.i, frozenset(self.publish_of), {u: sure[u] for u in self.publish_of})
            self.holed.pop(where, None)  # older settles cover fewer messages than this point

    def _holed_point(self, event: Event, handle: str, where: tuple[str | None, str], sure: Mapping[str, int]) -> None:
        """A point made with holes open: a settle H (``snapshot_periods`` >= 1) at which some message published
        before it was not yet acknowledged on the cluster, whose messages are all acknowledged (known to have
        arrived) by this settle.  H's snapshot follows its messages; once the dispatcher has read its marker and
        the acknowledgements close the holes, the mark-delete passes it and, if the cache still holds it, the cache
        hands it (or a newer one at or below the mark-delete) out and its update moves every other cluster's
        cursor past H's messages.  Sound only when nothing can have removed it from the cache meanwhile:

        * no eviction: a snapshot starts only when data was written since the last completed one started
          (``startNewSnapshot``; at or after it, so one write can open two periods), so a run with W writes
          completes at most 2W snapshots per cluster (fewer when this settle recorded the cluster's ``/metrics``
          count of completed snapshots and no fault could have reset it); at most the cache size (the header's
          ``replicatedSubscriptionsSnapshotMaxCachedPerSubscription``, else Pulsar's 10) evicts nothing under
          either rule (newest N, or by distance after apache/pulsar#25044);
        * no reset: no ``fault`` since H (a restart drops the cache, a deleted or switched-off subscription
          writes no update), and a consumer of the subscription open there, untouched, from before H until now
          (the cursor is never rewound to re-read markers);
        * read: a consumer of the subscription received there a message published after H (the dispatcher reads
          in order, so it read H's marker, which precedes it);
        * nothing unconfirmed published (a message that may have been stored and never acknowledged would keep
          the mark-delete below H's marker).
        """
        holes = self.holed.setdefault(where, [])
        if holes and holes[-1].i >= self.group_start:
            return  # this settle was looked at already (one per run of snapshot events)
        if self._cached_at_most(where[1]) <= self.max_cached and not self.unconfirmed_seen:
            for h in reversed(holes):
                if (
                    h.i > self.last_fault
                    and self.opened_at.get(handle, h.i) < h.i
                    and self.read_past.get(where, -1) > h.i
                    and all(uid in sure for uid in h.uids)
                ):
                    self.candidates[where] = _Point(event.i, h.uids, {u: sure[u] for u in h.uids}, since=h.i)
                    self.holed[where] = [later for later in holes if later.i > h.i]
                    break
        if self.publish_of:
            self.holed[where].append(_Holed(event.i, frozenset(self.publish_of)))

    def _cached_at_most(self, cluster: str) -> int:
        """How many snapshots the cluster's cache can have held: 2W for W writes (one write may open two periods),
        or fewer, the snapshots completed there by now as this settle recorded its ``/metrics`` (broker-wide, so
        other topics and partitions only add), while no fault can have reset the counter."""
        bound = 2 * self.writes
        recorded = self.completed.get(cluster)
        if recorded is not None and recorded[0] >= self.group_start and self.last_fault < 0:
            bound = min(bound, recorded[1])
        return bound

    def left_marks(self) -> set[int]:
        """Events that freed a message on a cluster some subscription failed over from (see ``freed_on``)."""
        out: set[int] = set()
        for failover in self.failovers:
            out |= self.freed_on.get(failover.left, set())
        return out

    def finish(self) -> ReplicationFindings:
        found: list[Violation] = [*self.cursor_ahead, *self.stored_twice, *self.reader_misses, *self.superseded_reads]
        notes = list(self.notes)
        for failover in self.failovers:  # judged drained or not: a redelivery seen is seen
            found += self._redelivered(failover, notes)
        if self.failovers and (not self.drained or self.end_i is None):
            note = "skipped_after_failover not judged: the run was not drained after the failover"
            return ReplicationFindings(tuple(found), (*notes, note), unjudged=(Kind.SKIPPED_AFTER_FAILOVER,))
        for failover in self.failovers:
            assert self.end_i is not None
            sent = sorted(p for published in self.published.values() for p in published if p[0] < self.end_i)
            skipped = [
                p
                for p in sent
                if p[1] not in failover.after and (p[1] not in failover.acked or _owed_while_off(failover, p[0]))
            ]
            found += [make_skipped(failover, p, len(skipped), self.end_i) for p in skipped[:MAX_LISTED]]
            if len(skipped) > MAX_LISTED:
                notes.append(
                    f"failover at E{failover.i}: {len(skipped) - MAX_LISTED} more skipped message(s) not listed"
                )
        return ReplicationFindings(tuple(found), tuple(notes))

    def _redelivered(self, failover: _Failover, notes: list[str]) -> list[Violation]:
        """``redelivered_after_failover`` for one failover: the acknowledged messages delivered again after it
        that its snapshot point covered (the rest are counted in a note, allowed)."""
        again = failover.acked & failover.after.keys()
        if not again:
            return []
        point = failover.bound
        covered = again & point.uids if point is not None else set()
        forbidden = sorted((failover.after[uid], uid) for uid in covered)
        notes.append(again_note(failover, len(again), len(forbidden)))
        if point is None:
            return []
        if len(forbidden) > MAX_LISTED:
            notes.append(
                f"failover at E{failover.i}: {len(forbidden) - MAX_LISTED} more redelivered_after_failover"
                " message(s) not listed"
            )
        return [
            make_redelivered(failover, point, uid, self.publish_of[uid][1], at, len(forbidden), len(again))
            for at, uid in forbidden[:MAX_LISTED]
        ]


def snapshot_cache_size(header: TraceHeader | None) -> int:
    """The subscriptions' snapshot cache size: the header's ``broker_conf`` value, else Pulsar's default."""
    conf = None if header is None else header.extra.get("broker_conf")
    value = conf.get(SNAPSHOT_CACHE_NAME) if isinstance(conf, Mapping) else None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return DEFAULT_SNAPSHOT_CACHE
    return value


def again_note(failover: _Failover, again: int, forbidden: int) -> str:
    """How many acknowledged messages came again after a failover, and how many of them the bound forbade."""
    head = (
        f"{again} message(s) acknowledged on {failover.left} before the failover at E{failover.i} were delivered"
        " again after it"
    )
    if failover.deleted:
        return (
            f"{head} (allowed: the subscription was deleted on {failover.to} after the last settled snapshot"
            " point, so no snapshot bounds where it resumes there)"
        )
    if failover.bound is None:
        return (
            f"{head} (allowed: only the mark-delete position replicates, in snapshots, and no settled snapshot"
            f" on {failover.left} followed acknowledgements of every message published before it)"
        )
    return (
        f"{head}: {forbidden} at or before the position the replicated cursor had reached (the snapshot at"
        f" E{failover.bound.i} covered {len(failover.bound.uids)} message(s){_holes_since(failover.bound)}:"
        " redelivered_after_failover),"
        f" {again - forbidden} past it (allowed: only the mark-delete position replicates, in snapshots)"
    )


def _holes_since(point: _Point) -> str:
    return "" if point.since is None else f", published before E{point.since} with holes open"


def make_redelivered(
    failover: _Failover, point: _Point, uid: str, key: str | None, receive_i: int, forbidden: int, again: int
) -> Violation:
    """The violation for one covered message delivered again (witness: its ack on the left cluster, the
    snapshot point, the failover, the receive on the other cluster)."""
    ack_i = point.acks[uid]
    witnessed: list[tuple[int, str]] = [(ack_i, "ack"), (point.i, "snapshot"), (failover.i, "failover")]
    if point.since is not None:  # a point made with holes open: the snapshot it was taken at, in event order
        witnessed = sorted([(point.since, "snapshot"), *witnessed])
    witnessed.append((receive_i, "receive"))
    refs: list[list[Any]] = [[i, op, None, None] for i, op in witnessed]
    facts: dict[str, Any] = {
        "uid": uid,
        "from": failover.left,
        "to": failover.to,
        "subscription": failover.subscription,
        "covered": len(point.uids),
        "forbidden": forbidden,
        "again": again,
        "since": point.since,
        "point": point.i,
        "ack": ack_i,
        "refs": refs,
    }
    return Violation(
        Kind.REDELIVERED_AFTER_FAILOVER,
        key,
        (),
        tuple(i for i, _op in witnessed),
        explain_redelivered(facts),
        failover.subscription,
        facts,
    )


def explain_redelivered(facts: Mapping[str, Any]) -> str:
    to = facts["to"] or "another cluster"
    failover_i, receive_i = (ref[0] for ref in facts["refs"][-2:])
    ack_i = facts.get("ack", facts["refs"][0][0])
    point_i = facts.get("point", facts["refs"][1][0])
    since = facts.get("since")
    if since is not None:
        return render_elle(
            f"redelivered_after_failover: {facts['uid']} (subscription {facts['subscription']!r}) delivered again on"
            f" {to} though the replicated cursor had passed it",
            facts["refs"],
            [
                f"{facts['uid']} was acknowledged on {facts['from']} at E{ack_i}; the settled snapshot E{since} came"
                f" after {facts['covered']} message(s) not all acknowledged yet, and by the settled snapshot"
                f" E{point_i} every one of them was, by a consumer connected there since before E{since}.",
                f"The snapshot taken at E{since} follows only those messages and was still cached (too few writes for"
                " an eviction, no fault): once the holes closed, the mark-delete passed it and its update moved every"
                " other cluster's replicated cursor past them; replication settled again before the failover at"
                f" E{failover_i} (PIP-33).",
                f"However, {to} delivered {facts['uid']} again at E{receive_i}: {facts['forbidden']} covered message(s)"
                f" redelivered ({facts['again']} acknowledged message(s) came again in all).",
            ],
        )
    return render_elle(
        f"redelivered_after_failover: {facts['uid']} (subscription {facts['subscription']!r}) delivered again on"
        f" {to} though the replicated cursor had passed it",
        facts["refs"],
        [
            f"{facts['uid']} was acknowledged on {facts['from']} at E{ack_i}; at the settled snapshot E{point_i} every"
            f" one of the {facts['covered']} message(s) published before it had been acknowledged there, by a"
            " consumer still connected.",
            "A snapshot taken then follows only acknowledged entries: the mark-delete position passes it, and its"
            " update moves every other cluster's replicated cursor past those messages; replication settled again"
            f" before the failover at E{failover_i} (PIP-33).",
            f"However, {to} delivered {facts['uid']} again at E{receive_i}: {facts['forbidden']} covered message(s)"
            f" redelivered ({facts['again']} acknowledged message(s) came again in all).",
        ],
    )


def make_reader_miss(
    handle: str,
    cluster: str,
    uid: str,
    published: tuple[int, str | None, str | None],
    open_i: int,
    close_i: int,
    missing: int,
) -> Violation:
    """``undelivered``: reader ``handle`` on ``cluster`` closed without reading ``uid`` (witness: its publish, the
    reader's open and close)."""
    facts: dict[str, Any] = {
        "uid": uid,
        "cluster": cluster,
        "subscription": handle,
        "key": published[1],
        "msg": published[2],
        "missing": missing,
        "refs": [
            [published[0], "publish", None, published[2]],
            [open_i, "open", handle, None],
            [close_i, "close", handle, None],
        ],
    }
    return Violation(
        Kind.UNDELIVERED,
        published[1],
        (handle,),
        (published[0], open_i, close_i),
        explain_reader_miss(facts),
        handle,
        facts,
    )


def explain_reader_miss(facts: Mapping[str, Any]) -> str:
    publish_i, open_i, close_i = (ref[0] for ref in facts["refs"])
    return render_elle(
        f"undelivered: reader {facts['subscription']!r} on {facts['cluster']} never read {facts['uid']}",
        facts["refs"],
        [
            f"{facts['uid']} was published at E{publish_i}; replication settled before the reader opened on"
            f" {facts['cluster']} at E{open_i}, from the earliest message, so every cluster's copy held it.",
            "A reader reads while it has messages available and never sees a marker: it reads exactly the messages"
            " published (ReplicatedSubscriptionTest.testReplicatedSubscriptionAcrossTwoRegionsGetLastMessage).",
            f"However, it closed at E{close_i} without reading it ({facts['missing']} message(s) missing in all).",
        ],
    )


def make_stored_twice(
    cluster: str,
    uid: str,
    first: tuple[Any, int, str],
    event: Event,
    msg: str,
    published: tuple[int, str | None, str | None],
) -> Violation:
    """``duplicate_publish``: message ``uid`` received on ``cluster`` under a second message id ``msg`` at
    ``event`` (witness: the first receive of the first id there and this receive; the publish is in the facts)."""
    first_msg = first[2]
    facts: dict[str, Any] = {
        "uid": uid,
        "cluster": cluster,
        "producer": None,
        "seq": None,
        "key": event.key,
        "first_msg": first_msg,
        "msg": msg,
        "refs": [
            [published[0], "publish", None, published[2]],
            [first[1], "receive", None, first_msg],
            [event.i, "receive", str(event.consumer), msg],
        ],
    }
    return Violation(
        Kind.DUPLICATE_PUBLISH,
        event.key,
        (str(event.consumer),),
        (first[1], event.i),
        explain_stored_twice(facts),
        None,
        facts,
    )


def explain_stored_twice(facts: Mapping[str, Any]) -> str:
    publish_i, first_i, second_i = (ref[0] for ref in facts["refs"])
    return render_elle(
        f"duplicate_publish: {facts['uid']} stored twice on {facts['cluster']}, as {facts['first_msg']} and"
        f" {facts['msg']}",
        facts["refs"],
        [
            f"{facts['uid']} was published once (E{publish_i}) and received on {facts['cluster']} as"
            f" {facts['first_msg']} at E{first_i}.",
            "With deduplication on, a message a replicator sends again (after lost receipts, a reconnection or a"
            " repeated send) must be dropped by the cluster it reaches: each message is stored there once.",
            f"However, E{second_i} received it on {facts['cluster']} as {facts['msg']}: stored a second time.",
        ],
    )


def _owed_while_off(failover: _Failover, publish_i: int) -> bool:
    """Whether a message acknowledged on the left cluster is owed again after ``failover``: published while the
    subscription's replicated status was off there (``testReplicatedSubscriptionRestApi1``: off, every cluster
    reads everything), so no cursor update of the left cluster can have passed it."""
    return failover.off_since is not None and publish_i > failover.off_since


def make_skipped(
    failover: _Failover, published: tuple[int, str, str | None, str | None], skipped: int, end_i: int
) -> Violation:
    """The violation for one message the failover skipped (witness: its publish, the failover, the end)."""
    i, uid, key, msg_id = published
    facts: dict[str, Any] = {
        "uid": uid,
        "msg_id": msg_id,
        "status_off": failover.off_since if uid in failover.acked else None,
        "from": failover.left,
        "to": failover.to,
        "subscription": failover.subscription,
        "skipped": skipped,
        "refs": [[i, "publish", None, msg_id], [failover.i, "failover", None, None], [end_i, "end", None, None]],
    }
    return Violation(
        Kind.SKIPPED_AFTER_FAILOVER,
        key,
        (),
        (i, failover.i, end_i),
        explain(facts),
        failover.subscription,
        facts,
    )


def explain(facts: Mapping[str, Any]) -> str:
    to = facts["to"] or "another cluster"
    off = facts.get("status_off")
    if off is None:
        why = [
            f"{facts['uid']} was published at E{facts['refs'][0][0]} and not acknowledged on {facts['from']}"
            f" before the application failed over from it at E{facts['refs'][1][0]}.",
            "A replicated subscription resumes no later than the replicated mark-delete position, which never"
            " passes an unacknowledged message (PIP-33): it must be delivered again after the failover.",
        ]
    else:
        why = [
            f"{facts['uid']} was published at E{facts['refs'][0][0]}, after the subscription's replicated status was"
            f" switched off on {facts['from']} (E{off}), and it stayed off until the failover at"
            f" E{facts['refs'][1][0]}.",
            f"With the status off, {facts['from']} writes no cursor update for the subscription, so no other"
            " cluster's cursor can pass the message: it must be delivered again after the failover, though it was"
            " acknowledged (ReplicatedSubscriptionTest.testReplicatedSubscriptionRestApi1).",
        ]
    return render_elle(
        f"skipped_after_failover: {facts['uid']} (subscription {facts['subscription']!r}) never arrived on {to}",
        facts["refs"],
        [
            *why,
            f"However, the run drained {to} (E{facts['refs'][2][0]}) and no consumer of the subscription received"
            f" it there: {facts['skipped']} message(s) skipped in all.",
        ],
    )


def make_cursor_ahead(
    i: int,
    subscription: str | None,
    cluster: str,
    backlog: int,
    owed: int,
    first: list[tuple[int, str, str | None, str | None]],
) -> Violation:
    """The violation for a settled snapshot whose backlog is below the unacknowledged messages (witness: the
    publishes of the first of them, then the snapshot)."""
    facts: dict[str, Any] = {
        "cluster": cluster,
        "subscription": subscription,
        "backlog": backlog,
        "unacknowledged": owed,
        "uids": [p[1] for p in first],
        "refs": [*([p[0], "publish", None, p[3]] for p in first), [i, "snapshot", None, None]],
    }
    return Violation(
        Kind.REPLICATED_CURSOR_AHEAD,
        first[0][2] if first else None,
        (),
        (*(p[0] for p in first), i),
        explain_cursor_ahead(facts),
        subscription,
        facts,
    )


def explain_cursor_ahead(facts: Mapping[str, Any]) -> str:
    snapshot_i = facts["refs"][-1][0]
    uids = ", ".join(facts["uids"])
    return render_elle(
        f"replicated_cursor_ahead: subscription {facts['subscription']!r} on {facts['cluster']} had passed"
        f" {facts['unacknowledged'] - facts['backlog']} unacknowledged message(s)",
        facts["refs"],
        [
            f"{facts['unacknowledged']} message(s) published before E{snapshot_i} ({uids}, ...) had been acknowledged"
            " by no consumer of the subscription, on any cluster.",
            "A replicated cursor moves only to a snapshot taken at or before the acknowledged (mark-delete)"
            " position, so once replication settled every cluster's backlog counts each of them (PIP-33).",
            f"However, at E{snapshot_i}, with replication settled, {facts['cluster']} reported a backlog of"
            f" {facts['backlog']}: its cursor was past at least {facts['unacknowledged'] - facts['backlog']} of them.",
        ],
    )


def check_replication(events: Iterable[Event], header: TraceHeader | None = None) -> ReplicationFindings:
    """The check over events in trace order (a pure function; the streaming class in one call)."""
    check = ReplicationCheck(header)
    for event in events:
        check.feed(event)
    return check.finish()
