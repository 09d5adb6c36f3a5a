"""Violations: frozen values naming what broke, who, and the events that prove it (Elle style).

A :class:`Violation` is data.  Its identity ``(kind, subscription, key, events)`` is what the two checker
engines must agree on; ``facts`` hold what a person needs (message ids, consumers, the witness events'
descriptions) and ``explanation`` is rendered from them by the property's module (``conformance.checks.*``)
in Elle's form: "Let: E12 = ... Then: - ... - However, ...".  Rendering decides nothing.

The kind names are part of the trace format and of the JSON output: ``key_overlap``, ``out_of_order``,
``undelivered``, ``redelivered_after_ack``, ``duplicate_publish``, ``unexpected_message``, ``misassigned``,
``accepted_conflicting_open``, ``refused_open``, ``skipped_after_failover``, ``replicated_cursor_ahead``,
``lost_write``,
``redelivered_after_failover``, ``delivered_twice``, ``delivered_early``, ``stored_below_highest``,
``last_sequence_id_behind``, ``superseded_after_compaction``,
``wrong_redelivery_count``, ``received_after_dead_letter``, ``dead_lettered_early``,
``received_beyond_unacked_limit``, ``received_beyond_lookahead``; and
thirteen that conformance cases judge beside the trace checker, ``outside_sticky_ranges``, ``stalled``,
``not_quiet``, ``pinned_owner``, ``received_beyond_permits``, ``not_dead_lettered``, ``stats_mismatch``,
``dedup_snapshot_behind``, ``wrong_sequence_id``, ``wrong_message_id``, ``wrong_event_time``,
``oversized_batch`` and ``batch_flushed_early``.
Every anomaly the suite reports is one of them: there are no free-string kinds (a test greps for them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from reference_model.errors import InvalidArgument, did_you_mean

__all__ = [
    "KINDS",
    "EventRef",
    "Kind",
    "Violation",
    "check_kind",
    "describe_event",
    "render_elle",
]


class Kind(str, Enum):
    """A violation kind.  The values are part of the trace format and the JSON verdict."""

    KEY_OVERLAP = "key_overlap"  #: a key outstanding at two consumers at once
    OUT_OF_ORDER = "out_of_order"  #: a later message of a key overtook an earlier, unacknowledged one
    UNDELIVERED = "undelivered"  #: in a drained run, a message needing (re)delivery never got it
    REDELIVERED_AFTER_ACK = "redelivered_after_ack"  #: an acknowledged message was delivered again
    DUPLICATE_PUBLISH = "duplicate_publish"  #: with deduplication, one (producer, seq) stored twice
    UNEXPECTED_MESSAGE = "unexpected_message"  #: a received message the trace never published
    MISASSIGNED = "misassigned"  #: delivered to a consumer the reference selector never names
    #: a STICKY consumer whose ranges conflict with a connected one's joined, though Pulsar refuses it
    ACCEPTED_CONFLICTING_OPEN = "accepted_conflicting_open"
    #: a subscribe refused (ConsumerBusy, ConsumerAssignError) that Pulsar accepts: its policy matched every
    #: consumer that could still be connected (or none could) and its sticky ranges conflict with none of theirs
    REFUSED_OPEN = "refused_open"
    #: after a failover, a message the application had not acknowledged never arrived on the other cluster
    SKIPPED_AFTER_FAILOVER = "skipped_after_failover"
    #: once replication settled, a cluster's copy of a replicated subscription had a smaller backlog than the
    #: messages no consumer of it had acknowledged: its cursor was past one of them (PIP-33)
    REPLICATED_CURSOR_AHEAD = "replicated_cursor_ahead"
    #: a STICKY consumer received a key whose hash lies outside the ranges it declared (a case-level judgement)
    OUTSIDE_STICKY_RANGES = "outside_sticky_ranges"
    #: a case waited for deliveries the broker owed and they did not come in time (a case-level judgement)
    STALLED = "stalled"
    #: a case's bounded wait for the subscription to settle expired: the broker kept redelivering (case-level)
    NOT_QUIET = "not_quiet"
    #: a key went to another consumer than the case's own pinned table names (a case-level judgement)
    PINNED_OWNER = "pinned_owner"
    LOST_WRITE = "lost_write"  #: a duplicate receipt (-1:-1) for a (producer, seq) never stored
    #: after a failover, a message at or before the position the replicated cursor must already have reached
    #: (a completed snapshot the acknowledgements had passed, its update settled) was delivered again (PIP-33)
    REDELIVERED_AFTER_FAILOVER = "redelivered_after_failover"
    #: on a non-persistent topic (nothing is ever redelivered there), a message received a second time
    DELIVERED_TWICE = "delivered_twice"
    #: on a non-persistent topic, a paused consumer received more of what was published meanwhile than its
    #: receiver queue gave it permits for (a case-level judgement)
    RECEIVED_BEYOND_PERMITS = "received_beyond_permits"
    #: a message sent with a delivery time (deliver_after) was received before it, beyond the broker's one-tick
    #: allowance (delayed delivery, PIP-26)
    DELIVERED_EARLY = "delivered_early"
    #: with deduplication on, a send of a sequence id below one its producer had stored already (receipt
    #: logged before the send) was stored: Pulsar answers it as a duplicate (``sequenceId <= lastSequenceIdPushed``)
    STORED_BELOW_HIGHEST = "stored_below_highest"
    #: with deduplication on, a producer created after ids of its name were stored was answered a last sequence id
    #: below the highest of them: a client that numbers its messages from the answer reuses stored ids, which are
    #: then dropped as duplicates
    LAST_SEQUENCE_ID_BEHIND = "last_sequence_id_behind"
    #: a ``readCompacted`` reader read a value of a key that a later message of that key, published before the
    #: compaction, had superseded (the compacted topic keeps only the latest value per key)
    SUPERSEDED_AFTER_COMPACTION = "superseded_after_compaction"
    #: one consumer saw a message's redelivery count fall, or not grow after it sent the message back
    WRONG_REDELIVERY_COUNT = "wrong_redelivery_count"
    #: a message the client routed to the dead-letter topic was delivered again on its original subscription
    RECEIVED_AFTER_DEAD_LETTER = "received_after_dead_letter"
    #: a message reached the dead-letter topic before the application received it max_redeliver_count + 1 times
    DEAD_LETTERED_EARLY = "dead_lettered_early"
    #: under a dead-letter policy, the application got a message with a redelivery count above the maximum: the
    #: client should have routed it to the dead-letter topic (a case-level judgement)
    NOT_DEAD_LETTERED = "not_dead_lettered"
    #: a consumer received a message while it held as many unacknowledged messages (of other entries) as the
    #: broker's maxUnackedMessagesPerConsumer / PerSubscription allows
    RECEIVED_BEYOND_UNACKED_LIMIT = "received_beyond_unacked_limit"
    #: the subscription stats the broker printed contradict themselves: a subscription's draining figures that are
    #: not the sum of its consumers', a position that is not ``ledgerId:entryId`` (a case-level judgement)
    STATS_MISMATCH = "stats_mismatch"
    #: the deduplication snapshot (the ``pulsar.dedup`` cursor in the internal stats) lags the entries stored since
    #: the topic was loaded by a whole snapshot interval or more (a case-level judgement)
    DEDUP_SNAPSHOT_BEHIND = "dedup_snapshot_behind"
    #: a 4.x (PIP-379) dispatcher sent an entry while more entries below it than its look-ahead limit allows had
    #: never been sent to anyone: it read past keySharedLookAheadMsgInReplayThreshold*
    RECEIVED_BEYOND_LOOKAHEAD = "received_beyond_lookahead"
    #: a send made with an id above every earlier id of its producer left the client's last published sequence id
    #: at another value: the message went out under another id (a case-level judgement)
    WRONG_SEQUENCE_ID = "wrong_sequence_id"
    #: a message id no managed ledger gives: a ledger's receipted entries not numbered 0, 1, 2, ... (every send to
    #: the topic receipted), or a send after a broker restart stored in a ledger written before it (case-level)
    WRONG_MESSAGE_ID = "wrong_message_id"
    #: a producer closed longer than the deduplication inactivity timeout plus one purge period (the header's
    #: ``broker_conf`` timeout, the ``producer_close`` and the next ``producer_open``'s ``t0``) was still
    #: remembered when created again: answered a last sequence id other than -1 (``conformance.checks.epochs``)
    NOT_PURGED = "not_purged"
    #: the answers producers got when created again after a close fit no purge run every third of the inactivity
    #: timeout from the broker's start (``conformance.checks.epochs.Schedule``)
    PURGE_OFF_SCHEDULE = "purge_off_schedule"
    #: a message was received with an event time other than the one it was published with (none: 0), as the
    #: client reports it (``Message.event_timestamp()``; a case-level judgement)
    WRONG_EVENT_TIME = "wrong_event_time"
    #: messages of one producer's batch (one entry, batch indexes) whose payloads add up to more than the client's
    #: ``batchingMaxBytes`` (the trace header's ``batching_max_bytes``): the batch took a message it had no room
    #: for (a case-level judgement)
    OVERSIZED_BATCH = "oversized_batch"
    #: a client's batch was sent before its publish delay had passed though it had room for the message sent next,
    #: added before the delay could have passed (spaced sends of one publish step; a case-level judgement)
    BATCH_FLUSHED_EARLY = "batch_flushed_early"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


#: Every kind, in the order reports list them.
KINDS: tuple[Kind, ...] = tuple(Kind)


def check_kind(name: object, *, source: str = "kind") -> Kind:
    """``name`` as a :class:`Kind`, or :class:`InvalidArgument` naming the choices."""
    if isinstance(name, Kind):
        return name
    if isinstance(name, str):
        try:
            return Kind(name)
        except ValueError:
            pass
    hint = did_you_mean(name, [k.value for k in KINDS]) if isinstance(name, str) else ""
    raise InvalidArgument(
        f"Unknown violation kind {name!r} in {source}.{hint} Kinds: {', '.join(k.value for k in KINDS)}."
    )


#: How a witness event is described: ``(i, op, consumer or None, msg_id or None)``.
EventRef = tuple[int, str, "str | None", "str | None"]


def describe_event(ref: Sequence[Any]) -> str:
    """``E12 = receive 1:5:-1:-1 by c1`` from an event reference."""
    i, op, consumer, msg_id = ref[0], ref[1], ref[2], ref[3]
    text = f"E{i} = {op}"
    if msg_id is not None:
        text += f" {msg_id}"
    if consumer is not None:
        text += f" of {consumer}" if op in ("close", "crash", "redeliver", "open") else f" by {consumer}"
    return text


def render_elle(title: str, refs: Sequence[Sequence[Any]], then: Sequence[str]) -> str:
    """The Elle form: a title, ``Let:`` the witness events, ``Then:`` the reasoning (last line: However ...)."""
    lines = [title, "Let:"]
    lines += [f"  {describe_event(ref)}" for ref in refs]
    lines.append("Then:")
    lines += [f"  - {step}" for step in then]
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class Violation:
    """One violation: its kind, key, consumers, witness events (their ``i``, ascending) and explanation."""

    kind: Kind
    key: str | None
    consumers: tuple[str, ...]
    events: tuple[int, ...]
    explanation: str = field(default="", compare=False)
    subscription: str | None = None
    facts: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def identity(self) -> tuple[str, str | None, str | None, tuple[int, ...]]:
        """What both engines must agree on: ``(kind, subscription, key, events)``."""
        return (self.kind.value, self.subscription, self.key, self.events)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (``keyshared check --json``)."""
        return {
            "kind": self.kind.value,
            "key": self.key,
            "subscription": self.subscription,
            "consumers": list(self.consumers),
            "events": list(self.events),
            "explanation": self.explanation,
            "facts": _json_safe(self.facts),
        }


def _json_safe(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, Enum):
        return value.value
    return value
