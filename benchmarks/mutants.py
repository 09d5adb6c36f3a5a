"""Semantic mutants of the reference model: each one a plausible broker bug, planted by a monkeypatch.

A mutant is applied in-process, before the suite runs, by :mod:`mutation_plugin` (``KEYSHARED_MUTANT=<name>``);
the model target then *is* a broker with that bug, and the conformance suite must fail on it.  Nothing here
touches the product packages' files: every patch replaces a function or attribute at run time, in the one
pytest process that runs the mutant.  The line after each ``@mutant`` says which broker bug it stands for.

Selector mutants also move the checker's ``misassigned`` oracle (it asks the same model which consumer owns a
key): only cases that carry their own expected answer (``conformance/cases/scenarios/pinned/``) can see them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

__all__ = ["MUTANTS", "Mutant", "apply", "by_name"]


@dataclass(frozen=True)
class Mutant:
    name: str
    area: str  #: pip379, classic, dispatch (both), non-persistent, selectors, dedup, replication, client (the model's)
    bug: str  #: one line: the broker bug it stands for
    apply: Callable[[], None]
    target: str = "model"  #: the model target spec the mutant is run against


MUTANTS: list[Mutant] = []


def mutant(
    name: str, area: str, bug: str, *, target: str = "model"
) -> Callable[[Callable[[], None]], Callable[[], None]]:
    def register(fn: Callable[[], None]) -> Callable[[], None]:
        MUTANTS.append(Mutant(name, area, bug, fn, target))
        return fn

    return register


def by_name(name: str) -> Mutant:
    for m in MUTANTS:
        if m.name == name:
            return m
    known = ", ".join(m.name for m in MUTANTS)
    raise SystemExit(f"unknown mutant {name!r}; known: {known}")


def apply(name: str) -> Mutant:
    m = by_name(name)
    m.apply()
    return m


def _wrap(cls: Any, attr: str, make: Callable[[Any], Any]) -> None:
    """Replace ``cls.attr`` by ``make(original)``."""
    setattr(cls, attr, make(getattr(cls, attr)))


def _noop(*_args: Any, **_kwargs: Any) -> None:
    return None


# --- PIP-379 dispatcher (Pulsar 4.0) ---------------------------------------------------------------------


@mutant(
    "draining-released-at-first-ack",
    "pip379",
    "a draining hash is released at the old owner's first ack of it, not its last",
)
def _draining_first_ack() -> None:
    from reference_model.keyshared.draining import DrainingHashesTracker

    def make(orig: Any) -> Any:
        def reduce_ref_count(self: Any, consumer: Any, slot: int, *, closing: bool) -> bool:
            entry = self._entries.get(slot)
            if entry is not None and entry.consumer is consumer:
                entry.ref_count = 1
            return bool(orig(self, consumer, slot, closing=closing))

        return reduce_ref_count

    _wrap(DrainingHashesTracker, "reduce_ref_count", make)


@mutant(
    "draining-never-registered",
    "pip379",
    "a join moves hashes at once: pending entries of lost hashes are not registered as draining",
)
def _draining_never_registered() -> None:
    from reference_model.keyshared.pip379 import Pip379Dispatcher

    Pip379Dispatcher._register_draining = _noop  # type: ignore[method-assign]


@mutant(
    "draining-ignored",
    "pip379",
    "draining hashes are tracked but never block a dispatch (neither at read nor at send time)",
)
def _draining_ignored() -> None:
    from reference_model.keyshared.dispatcher import KeySharedDispatcher
    from reference_model.keyshared.draining import DrainingHashesTracker
    from reference_model.keyshared.pip379 import Pip379Dispatcher

    DrainingHashesTracker.should_block = lambda self, consumer, slot: False  # type: ignore[method-assign]
    Pip379Dispatcher._add_pending_if_allowed = KeySharedDispatcher._add_pending_if_allowed  # type: ignore[method-assign]


@mutant(
    "draining-kept-after-return",
    "pip379",
    "a hash that moves back to the consumer draining it stays draining (apache/pulsar#24736)",
)
def _draining_kept_after_return() -> None:
    from reference_model.keyshared.pip379 import Pip379Dispatcher

    Pip379Dispatcher._release_returned = _noop  # type: ignore[method-assign]

    from reference_model.keyshared.draining import DrainingHashesTracker

    def should_block(self: Any, consumer: Any, slot: int) -> bool:
        entry = self._entries.get(slot) if slot else None
        if entry is None or entry.consumer is consumer:
            return False  # the lazy removal is gone too: the entry stays
        entry.blocked_count += 1
        return True

    DrainingHashesTracker.should_block = should_block  # type: ignore[method-assign]


@mutant(
    "draining-unblock-lost",
    "pip379",
    "the end of a drain schedules no read: blocked messages wait for the next publish",
)
def _draining_unblock_lost() -> None:
    from reference_model.keyshared.dispatcher import KeySharedDispatcher
    from reference_model.keyshared.pip379 import Pip379Dispatcher

    Pip379Dispatcher._hash_unblocked = _noop  # type: ignore[method-assign]
    KeySharedDispatcher.after_acknowledgements = _noop  # type: ignore[method-assign]


@mutant(
    "replay-forgets-hashes",
    "pip379",
    "the replay queue forgets the hashes of its messages: new messages of those keys overtake them",
)
def _replay_forgets_hashes() -> None:
    from reference_model.keyshared.replay_queue import ReplayQueue

    def make(orig: Any) -> Any:
        def init(self: Any, *, track_hashes: bool, count_hashes: bool | None = None) -> None:
            orig(self, track_hashes=False)

        return init

    _wrap(ReplayQueue, "__init__", make)


@mutant(
    "leave-replays-without-hash",
    "pip379",
    "a leaving consumer's pending messages are replayed without their hashes (ordering lost)",
)
def _leave_without_hash() -> None:
    from reference_model.keyshared.pip379 import Pip379Dispatcher

    def release(self: Any, consumer: Any) -> None:
        tracker = self.tracker
        for position, _batch, slot in consumer.pending.drain(close=True):
            if self._add_to_replay(position, None):
                self.redelivery_counts[position] = self.redelivery_counts.get(position, 0) + 1
            if tracker is not None:
                tracker.reduce_ref_count(consumer, slot, closing=True)

    Pip379Dispatcher._release_pending = release  # type: ignore[method-assign]


@mutant(
    "leave-drops-pending", "pip379", "a leaving consumer's unacknowledged messages are dropped instead of redelivered"
)
def _leave_drops_pending() -> None:
    from reference_model.keyshared.pip379 import Pip379Dispatcher

    def release(self: Any, consumer: Any) -> None:
        consumer.pending.drain(close=True)
        if self.tracker is not None:
            self.tracker.clear()

    Pip379Dispatcher._release_pending = release  # type: ignore[method-assign]


@mutant(
    "stuck-consumer-blocks-all",
    "pip379",
    "one consumer without permits stops normal reads for everyone (head-of-line blocking)",
)
def _stuck_blocks_all() -> None:
    from reference_model.keyshared.pip379 import Pip379Dispatcher

    def make(orig: Any) -> Any:
        def allowed(self: Any) -> bool:
            return bool(orig(self)) and all(self.available_permits(c) > 0 for c in self.consumers.values())

        return allowed

    _wrap(Pip379Dispatcher, "_normal_read_allowed", make)


@mutant(
    "stalled-socket-blocks-dispatch",
    "pip379",
    "a consumer whose socket is not read still gets writes, and the next read waits for every write of the round:"
    " one stalled connection stops dispatch to every consumer (apache/pulsar#26635 reverted)",
    target="model:5.0",
)
def _stalled_socket_blocks_dispatch() -> None:
    from reference_model.keyshared.dispatcher import KeySharedDispatcher

    def make(orig: Any) -> Any:
        def init(self: Any, **kwargs: Any) -> None:
            orig(self, **kwargs)
            self.writability_checked = False

        return init

    _wrap(KeySharedDispatcher, "__init__", make)


@mutant(
    "impacted-last-range-forgotten",
    "pip379",
    "the last of the hash ranges a membership change takes away is not drained",
)
def _impacted_last_range() -> None:
    import reference_model.selectors.base as base
    from reference_model.selectors.impacted import ImpactedRanges, diff_ranges, merge_ranges

    def resolve(before: Any, after: Any) -> Any:
        changes = [c for c in diff_ranges(before, after) if c[1] is not None]
        lost: dict[Any, list[Any]] = {}
        for hash_range, was, _now in changes[:-1]:
            lost.setdefault(was, []).append(hash_range)
        return ImpactedRanges({c: merge_ranges(r) for c, r in lost.items()})

    base.resolve_impacted = resolve  # type: ignore[assignment]


@mutant(
    "replay-newest-first",
    "dispatch",
    "the replay queue is read newest first: redelivered messages of a key arrive out of order",
)
def _replay_newest_first() -> None:
    from reference_model.keyshared.replay_queue import ReplayQueue

    def make(orig: Any) -> Any:
        def select(self: Any, max_positions: int, accept: Any = None, rejected: Any = None) -> list[Any]:
            out = list(orig(self, max_positions, accept, rejected))
            out.reverse()
            return out

        return select

    _wrap(ReplayQueue, "select", make)


@mutant("round-dispatched-backwards", "pip379", "the entries of a multi-entry read round are dispatched newest first")
def _round_backwards() -> None:
    from reference_model.keyshared.pip379 import Pip379Dispatcher

    def make(orig: Any) -> Any:
        def send_entries(self: Any, read_type: Any, entries: list[Any]) -> int:
            if len(entries) > 1:
                entries = list(reversed(entries))
                return int(orig(self, read_type, entries))
            return int(orig(self, read_type, entries))

        return send_entries

    _wrap(Pip379Dispatcher, "_send_entries", make)


@mutant(
    "ack-leaves-pending",
    "dispatch",
    "an acknowledgement is persisted but the consumer's pending entry is kept (drains never end)",
)
def _ack_leaves_pending() -> None:
    from reference_model.keyshared.dispatcher import KeySharedDispatcher

    def acknowledge(self: Any, consumer: Any, position: Any) -> bool:
        if self.redelivery_counts:
            self.redelivery_counts.pop(position, None)
        return True

    KeySharedDispatcher.acknowledge = acknowledge  # type: ignore[method-assign]


@mutant(
    "ack-not-persisted",
    "dispatch",
    "individual acknowledgements are not stored in the cursor: acked messages come back",
)
def _ack_not_persisted() -> None:
    from reference_model.storage.cursor import ManagedCursor

    ManagedCursor.delete = lambda self, position: False  # type: ignore[method-assign]


@mutant(
    "redelivery-count-not-raised",
    "dispatch",
    "a redelivery request (nack, ack timeout, redeliver) leaves the redelivery count as it was: a dead-letter"
    " policy never fires",
)
def _redelivery_count_not_raised() -> None:
    from reference_model.keyshared.dispatcher import KeySharedDispatcher

    def make(orig: Any) -> Any:
        def redeliver(self: Any, consumer: Any, positions: Any) -> int:
            before = dict(self.redelivery_counts)
            queued = int(orig(self, consumer, positions))
            self.redelivery_counts.clear()
            self.redelivery_counts.update(before)
            return queued

        return redeliver

    _wrap(KeySharedDispatcher, "redeliver", make)


@mutant(
    "redelivery-count-dropped-at-send",
    "dispatch",
    "the broker forgets a message's redelivery count once it has sent it: a message nacked twice comes back"
    " counted 1, and a consumer sees its count fall after a duplicate send",
)
def _redelivery_count_dropped_at_send() -> None:
    from reference_model.keyshared.dispatcher import KeySharedDispatcher

    def make(orig: Any) -> Any:
        def send(self: Any, consumer: Any, entry: Any, slot: int) -> bool:
            sent = bool(orig(self, consumer, entry, slot))
            if sent:
                self.redelivery_counts.pop(entry.position, None)
            return sent

        return send

    _wrap(KeySharedDispatcher, "_send", make)


@mutant(
    "rewind-redelivers-acked",
    "dispatch",
    "a rewind (every consumer left, one returns) re-reads individually acknowledged messages",
)
def _rewind_redelivers_acked() -> None:
    from reference_model.storage.cursor import ManagedCursor

    def make(orig: Any) -> Any:
        def read_entries(self: Any, max_entries: int) -> list[Any]:
            saved, self._deleted = self._deleted, set()
            try:
                return list(orig(self, max_entries))
            finally:
                self._deleted = saved

        return read_entries

    _wrap(ManagedCursor, "read_entries", make)


@mutant(
    "no-rewind-after-all-left",
    "dispatch",
    "when every consumer left, the first to return is not rewound: unacked messages are never redelivered",
)
def _no_rewind() -> None:
    from reference_model.storage.cursor import ManagedCursor

    ManagedCursor.rewind = _noop  # type: ignore[method-assign]


@mutant("closed-consumer-keeps-hashes", "dispatch", "a closed consumer stays in the selector: its keys go nowhere")
def _closed_keeps_hashes() -> None:
    from reference_model.keyshared.dispatcher import KeySharedDispatcher

    def make(orig: Any) -> Any:
        def remove_consumer(self: Any, consumer: Any) -> None:
            remove = self.selector.remove
            self.selector.remove = lambda ref: None
            try:
                orig(self, consumer)
            finally:
                self.selector.remove = remove

        return remove_consumer

    _wrap(KeySharedDispatcher, "remove_consumer", make)


@mutant(
    "redeliver-drops-messages",
    "dispatch",
    "a negative ack or redeliver request removes the pending messages but never resends them",
)
def _redeliver_drops() -> None:
    from reference_model.keyshared.dispatcher import KeySharedDispatcher

    def redeliver(self: Any, consumer: Any, positions: Any) -> int:
        if self.consumers.get(consumer.consumer_id) is not consumer:
            return 0
        wanted = [p for p, _b, _s in consumer.pending] if positions is None else sorted(set(positions))
        for position in wanted:
            record = consumer.pending.remove(position)
            if record is not None:
                self.total_unacked -= record[0]
                self._pending_removed(consumer, record[1], closing=False)
        return 0

    KeySharedDispatcher.redeliver = redeliver  # type: ignore[method-assign]


@mutant(
    "flow-does-not-read",
    "dispatch",
    "permits from a consumer's flow trigger no read: a drained receiver queue waits for the next publish",
)
def _flow_no_read() -> None:
    from reference_model.keyshared.dispatcher import KeySharedDispatcher

    def flow(self: Any, consumer: Any, permits: int) -> None:
        if self.consumers.get(consumer.consumer_id) is consumer:
            consumer.add_permits(permits)

    KeySharedDispatcher.consumer_flow = flow  # type: ignore[method-assign]


@mutant(
    "redelivery-count-not-kept",
    "dispatch",
    "redelivered messages carry redelivery count 0 (the count is never incremented)",
)
def _redelivery_count() -> None:
    from reference_model.keyshared.dispatcher import KeySharedDispatcher

    def make(orig: Any) -> Any:
        def send(self: Any, consumer: Any, entry: Any, slot: int) -> bool:
            self.redelivery_counts.clear()
            return bool(orig(self, consumer, entry, slot))

        return send

    _wrap(KeySharedDispatcher, "_send", make)


@mutant(
    "first-consumer-skips-replay-clear",
    "dispatch",
    "a consumer joining an empty subscription keeps a stale replay queue and is sent messages twice",
)
def _stale_replay() -> None:
    from reference_model.keyshared.dispatcher import KeySharedDispatcher

    def make(orig: Any) -> Any:
        def remove_consumer(self: Any, consumer: Any) -> None:
            if len(self.consumers) == 1 and self.consumers.get(consumer.consumer_id) is consumer:
                held = [p for p, _b, _s in consumer.pending]
                orig(self, consumer)
                for position in held:  # the last one's pending messages stay queued across the rewind
                    self.replay.add(position, None)
                return
            orig(self, consumer)

        return remove_consumer

    _wrap(KeySharedDispatcher, "remove_consumer", make)

    def make_add(orig: Any) -> Any:
        def add_consumer(self: Any, consumer: Any) -> None:
            if not self.consumers:
                saved = list(self.replay.positions)
                orig(self, consumer)
                for position in saved:
                    self.replay.add(position, None)
                self.read_more_entries()
                return
            orig(self, consumer)

        return add_consumer

    _wrap(KeySharedDispatcher, "add_consumer", make_add)


@mutant(
    "crash-never-detected",
    "dispatch",
    "a consumer whose connection is cut is never removed: its unacknowledged messages are never redelivered",
)
def _crash_never_detected() -> None:
    from reference_model.broker.model_broker import ModelBroker

    ModelBroker._consumer_crashed = _noop  # type: ignore[method-assign]


@mutant(
    "redeliver-by-id-ignored",
    "dispatch",
    "a RedeliverUnacknowledgedMessages naming message ids (an ack timeout's, a nack's) is ignored",
)
def _redeliver_by_id_ignored() -> None:
    from reference_model.keyshared.dispatcher import KeySharedDispatcher

    def make(orig: Any) -> Any:
        def redeliver(self: Any, consumer: Any, positions: Any) -> int:
            if positions is not None:
                return 0
            return int(orig(self, consumer, positions))

        return redeliver

    _wrap(KeySharedDispatcher, "redeliver", make)


@mutant(
    "ack-timeout-never-fires",
    "client",
    "the consumer's ack timeout is accepted but its tracker never asks for the timed-out messages again",
)
def _ack_timeout_never_fires() -> None:
    from reference_model.broker.consumer import ModelConsumer

    _wrap(ModelConsumer, "_redeliver_timed_out", lambda _orig: _noop)


@mutant(
    "out-of-order-replay-drops-hashless",
    "pip379",
    "with allowOutOfOrderDelivery the replay filter rejects positions without a sticky-key hash (redelivered ones)"
    " instead of leaving them to dispatch: they are never replayed (apache/pulsar#26268's"
    " testOutOfOrderReplayFilterIncludesPositionWithoutStickyKeyHash)",
)
def _out_of_order_replay_drops_hashless() -> None:
    from reference_model.keyshared.pip379 import Pip379Dispatcher

    def make(orig: Any) -> Any:
        def make_replay_filter(self: Any, *, block_for_ordering: bool = True) -> Any:
            accept, blocked = orig(self, block_for_ordering=block_for_ordering)
            if block_for_ordering:
                return accept, blocked
            return (lambda position, slot: slot is not None and bool(accept(position, slot))), blocked

        return make_replay_filter

    _wrap(Pip379Dispatcher, "_make_replay_filter", make)


@mutant(
    "out-of-order-flag-kept-after-all-leave",
    "dispatch",
    "once every consumer has left, a consumer asking for another allowOutOfOrderDelivery is accepted but the"
    " subscription keeps the first flag (KeySharedSubscriptionTest"
    ".testAllowOutOfOrderDeliveryChangedAfterAllConsumerDisconnected)",
)
def _out_of_order_flag_kept() -> None:
    import dataclasses

    from reference_model.broker.subscription import ServerSubscription

    def make(orig: Any) -> Any:
        def add_consumer(self: Any, consumer: Any, policy: Any) -> None:
            current = self.dispatcher
            if current is not None and not current.consumers and current.policy.mode == policy.mode:
                policy = dataclasses.replace(
                    policy, allow_out_of_order_delivery=current.policy.allow_out_of_order_delivery
                )
            orig(self, consumer, policy)

        return add_consumer

    _wrap(ServerSubscription, "add_consumer", make)


@mutant(
    "policy-change-refused-after-all-leave",
    "dispatch",
    "once every consumer has left, a consumer asking for another Key_Shared mode or allowOutOfOrderDelivery is"
    " refused (ConsumerBusy) as if the old ones were still connected (KeySharedSubscriptionTest"
    ".testSelectorChangedAfterAllConsumerDisconnected): refused_open",
)
def _policy_change_refused() -> None:
    from reference_model.broker.errors import ConsumerBusy
    from reference_model.broker.subscription import ServerSubscription

    def make(orig: Any) -> Any:
        def add_consumer(self: Any, consumer: Any, policy: Any) -> None:
            current = self.dispatcher
            if current is not None and not current.consumers:
                old = current.policy
                if (old.mode, old.allow_out_of_order_delivery) != (policy.mode, policy.allow_out_of_order_delivery):
                    raise ConsumerBusy(f"Subscription is of different type: subscription {self.name!r}")
            orig(self, consumer, policy)

        return add_consumer

    _wrap(ServerSubscription, "add_consumer", make)


# --- non-persistent dispatcher ---------------------------------------------------------------------------


@mutant(
    "non-persistent-no-permits-to-other",
    "non-persistent",
    "non-persistent: a message whose key's consumer has no permits goes to another consumer instead of being dropped",
)
def _non_persistent_no_permits_to_other() -> None:
    from reference_model.keyshared.nonpersistent import NonPersistentDispatcher

    def make(orig: Any) -> Any:
        def send_messages(self: Any, entries: list[Any]) -> int:
            sent = 0
            for entry in entries:
                owner = self.select(self.slot_of(entry)) if self.consumers else None
                if owner is None:
                    continue
                to = owner if owner.permits > 0 else next((c for c in self.consumers.values() if c.permits > 0), None)
                if to is not None:
                    to.record_sent(entry)
                    to.sink(entry, 0)
                    sent += 1
            return sent

        return send_messages

    _wrap(NonPersistentDispatcher, "send_messages", make)


@mutant(
    "non-persistent-ignores-permits",
    "non-persistent",
    "non-persistent: every message goes to its key's consumer whatever its permits (Pulsar before #11692)",
)
def _non_persistent_ignores_permits() -> None:
    from reference_model.keyshared.nonpersistent import NonPersistentDispatcher

    _wrap(NonPersistentDispatcher, "_may_send", lambda _orig: lambda self, consumer: True)


@mutant(
    "non-persistent-sent-twice",
    "non-persistent",
    "non-persistent: each published entry is handed to the subscription's dispatcher twice",
)
def _non_persistent_sent_twice() -> None:
    from reference_model.keyshared.nonpersistent import NonPersistentDispatcher

    def make(orig: Any) -> Any:
        def send_messages(self: Any, entries: list[Any]) -> int:
            return int(orig(self, entries)) + int(orig(self, entries))

        return send_messages

    _wrap(NonPersistentDispatcher, "send_messages", make)


@mutant(
    "lookahead-at-end-of-topic",
    "pip379",
    "a look-ahead triggered by a replay read discarded at the end of the topic skips the next replay and parks"
    " dispatch (apache/pulsar#26236 undone)",
)
def _lookahead_at_end_of_topic() -> None:
    from reference_model.keyshared.pip379 import Pip379Dispatcher

    _wrap(Pip379Dispatcher, "_lookahead_may_engage", lambda _orig: lambda self: True)


@mutant(
    "sticky-ranges-kept-after-close",
    "selectors",
    "a closed STICKY consumer's hash ranges stay taken: a later consumer asking for them is refused",
)
def _sticky_ranges_kept_after_close() -> None:
    from reference_model.selectors.exclusive import StickyRangesSelector

    def make(orig: Any) -> Any:
        def remove(self: Any, consumer: Any) -> None:
            kept = {k: v for k, v in self._at.items() if v[2] == consumer}
            orig(self, consumer)
            self._at.update(kept)  # the points stay, owned by the closed consumer
            self._keys = sorted(self._at)

        return remove

    _wrap(StickyRangesSelector, "_remove", make)


@mutant(
    "replay-read-newest-first",
    "dispatch",
    "a replay read dispatches the positions it read newest first (the replay set is not walked in position order)",
)
def _replay_read_newest_first() -> None:
    from reference_model.keyshared.replay_queue import ReplayQueue

    _wrap(ReplayQueue, "select", lambda orig: lambda self, *a, **k: orig(self, *a, **k)[::-1])


@mutant(
    "delayed-delivery-ignored",
    "dispatch",
    "a message's delivery time (deliver_after) is ignored: delayed messages are dispatched at once",
)
def _delayed_delivery_ignored() -> None:
    from reference_model.keyshared.dispatcher import KeySharedDispatcher

    _wrap(KeySharedDispatcher, "_track_delayed", lambda _orig: lambda _self, entries: entries)


@mutant(
    "delayed-never-released",
    "dispatch",
    "delayed messages are held in the tracker and never dispatched once due",
)
def _delayed_never_released() -> None:
    from reference_model.keyshared.dispatcher import KeySharedDispatcher

    _wrap(KeySharedDispatcher, "_release_due_delayed", lambda _orig: _noop)


@mutant(
    "max-unacked-consumer-never-unblocks",
    "dispatch",
    "a consumer blocked at maxUnackedMessagesPerConsumer stays blocked when its messages are acknowledged",
)
def _max_unacked_consumer_never_unblocks() -> None:
    from reference_model.keyshared.consumer import DispatchConsumer

    _wrap(DispatchConsumer, "maybe_unblock", lambda _orig: lambda _self: False)


@mutant(
    "expiry-ignored",
    "dispatch",
    "message expiry (a TTL check, admin expireMessages) leaves the subscription as it was: nothing expires",
)
def _expiry_ignored() -> None:
    from reference_model.broker.subscription import ServerSubscription

    _wrap(ServerSubscription, "expire_messages", lambda _orig: lambda _self, _cutoff: False)


@mutant(
    "expiry-keeps-pending-acks",
    "pip379",
    "expiry moves the mark-delete position but the dispatcher keeps the expired messages' pending acks",
)
def _expiry_keeps_pending_acks() -> None:
    from reference_model.broker.subscription import ServerSubscription

    def make(_orig: Any) -> Any:
        def expire_messages(self: Any, cutoff_ns: int) -> bool:
            newest = None
            for entry in self.cursor.log.entries_after(self.cursor.mark_delete_position):
                if entry.metadata.publish_time_ns >= cutoff_ns:
                    break
                newest = entry.position
            return newest is not None and bool(self.cursor.mark_delete(newest))

        return expire_messages

    _wrap(ServerSubscription, "expire_messages", make)


@mutant(
    "dead-letter-never-routes",
    "client",
    "the consumer's dead-letter policy is accepted but the client never routes a message to the dead-letter topic",
)
def _dead_letter_never_routes() -> None:
    from reference_model.broker.consumer import ModelConsumer

    def make(orig: Any) -> Any:
        def init(self: Any, *args: Any, **kwargs: Any) -> None:
            orig(self, *args, **kwargs)
            self.dead_letter = None

        return init

    _wrap(ModelConsumer, "__init__", make)


@mutant(
    "dead-letter-without-ack",
    "client",
    "the client publishes a message to the dead-letter topic but never acknowledges the original",
)
def _dead_letter_without_ack() -> None:
    from reference_model.broker.consumer import ModelConsumer

    def route(self: Any, messages: Any) -> None:
        if self._dead_producer is None:
            self._dead_producer = self._broker.create_producer(self.dead_letter[1])
        for msg in messages:
            properties = {**msg.properties(), "REAL_TOPIC": self._topic, "ORIGIN_MESSAGE_ID": str(msg.message_id())}
            self._dead_producer.send_async(msg.data(), _noop, properties=properties, partition_key=msg.partition_key())

    ModelConsumer._route_dead = route  # type: ignore[method-assign]


@mutant(
    "dead-letter-count-shared-across-partitions",
    "dispatch",
    "on a partitioned topic the partitions' subscriptions keep one redelivery count per entry id (a message id"
    " without its partition), so a message inherits another partition's redeliveries and is dead-lettered early",
)
def _dead_letter_count_shared_across_partitions() -> None:
    from reference_model.broker.partitioned import partition_index
    from reference_model.keyshared.dispatcher import KeySharedDispatcher

    class ByEntryId(dict[Any, int]):
        """Redelivery counts keyed by a position's entry id alone: one count for entry N of every partition."""

        def __getitem__(self, p: Any) -> int:
            return super().__getitem__(p.entry_id)

        def __setitem__(self, p: Any, value: int) -> None:
            super().__setitem__(p.entry_id, value)

        def __contains__(self, p: object) -> bool:
            return super().__contains__(getattr(p, "entry_id", p))

        def get(self, p: Any, default: Any = None) -> Any:
            return super().get(p.entry_id, default)

        def pop(self, p: Any, *default: Any) -> Any:
            return super().pop(p.entry_id, *default)

        def setdefault(self, p: Any, default: Any = None) -> Any:
            return super().setdefault(p.entry_id, default)

    shared: dict[tuple[str, str], ByEntryId] = {}

    def make(orig: Any) -> Any:
        def init(self: Any, *args: Any, **kwargs: Any) -> None:
            orig(self, *args, **kwargs)
            topic = str(getattr(self.log, "name", ""))
            if partition_index(topic) >= 0:
                base = topic.rsplit("-partition-", 1)[0]
                self.redelivery_counts = shared.setdefault((base, self.cursor.name), ByEntryId())

        return init

    _wrap(KeySharedDispatcher, "__init__", make)


# --- classic dispatcher (Pulsar 3.x) ---------------------------------------------------------------------


@mutant(
    "classic-no-recently-joined",
    "classic",
    "classic: joining consumers are not held back to their join read position",
    target="model:classic",
)
def _classic_no_joined() -> None:
    from reference_model.keyshared.classic import ClassicDispatcher

    def make(orig: Any) -> Any:
        def after_add(self: Any, consumer: Any, impacted: Any) -> None:
            consumer.read_position_when_joining = self.cursor.read_position

        return after_add

    _wrap(ClassicDispatcher, "_after_add", make)


@mutant(
    "classic-join-limit-inclusive",
    "classic",
    "classic: a joiner may take the entry at its join read position (off by one)",
    target="model:classic",
)
def _classic_limit() -> None:
    from reference_model.keyshared.classic import ClassicDispatcher

    def make(orig: Any) -> Any:
        def restricted(self: Any, consumer: Any, positions: Any, permits: int, read_type: Any, slots: Any) -> int:
            joined = self.recently_joined
            limit = None if joined is None else joined.get(consumer)
            if limit is not None:
                joined[consumer] = self.log.next_valid_position(limit)
                try:
                    return int(orig(self, consumer, positions, permits, read_type, slots))
                finally:
                    if consumer in joined:
                        joined[consumer] = limit
            return int(orig(self, consumer, positions, permits, read_type, slots))

        return restricted

    _wrap(ClassicDispatcher, "_restricted_max_entries", make)


@mutant(
    "classic-joiners-never-released",
    "classic",
    "classic: recently joined consumers are never released as the mark-delete moves",
    target="model:classic",
)
def _classic_never_released() -> None:
    from reference_model.keyshared.classic import ClassicDispatcher

    ClassicDispatcher._remove_from_recently_joined = lambda self: False  # type: ignore[method-assign]


@mutant(
    "classic-normal-read-ignores-replay",
    "classic",
    "classic: a normal read sends new messages of keys that wait in the replay queue",
    target="model:classic",
)
def _classic_r1() -> None:
    from reference_model.keyshared.classic import ClassicDispatcher
    from reference_model.keyshared.dispatcher import ReadType

    def make(orig: Any) -> Any:
        def restricted(self: Any, consumer: Any, positions: Any, permits: int, read_type: Any, slots: Any) -> int:
            return int(
                orig(
                    self,
                    consumer,
                    positions,
                    permits,
                    ReadType.REPLAY if read_type is ReadType.NORMAL else read_type,
                    None,
                )
            )

        return restricted

    _wrap(ClassicDispatcher, "_restricted_max_entries", make)


@mutant(
    "classic-leave-drops-pending",
    "classic",
    "classic: a leaving consumer's unacknowledged messages are dropped",
    target="model:classic",
)
def _classic_leave_drops() -> None:
    from reference_model.keyshared.dispatcher import KeySharedDispatcher

    KeySharedDispatcher._release_pending = lambda self, consumer: consumer.pending.drain(close=True) and None  # type: ignore[method-assign]


@mutant(
    "classic-acks-do-not-dispatch",
    "classic",
    "classic: acknowledgements never trigger a read (a released joiner waits for the next publish)",
    target="model:classic",
)
def _classic_ack_no_read() -> None:
    from reference_model.keyshared.classic import ClassicDispatcher

    ClassicDispatcher.after_acknowledgements = _noop  # type: ignore[method-assign]


@mutant(
    "classic-replay-forgets-hashes",
    "classic",
    "classic: the replay queue forgets message hashes",
    target="model:classic",
)
def _classic_replay_hashes() -> None:
    _replay_forgets_hashes()


# --- selectors -------------------------------------------------------------------------------------------


@mutant("hash-off-by-one", "selectors", "a key's hash is reduced into the range off by one (h % 65535 + 2)")
def _hash_off_by_one() -> None:
    from reference_model.selectors.base import Selector

    def make(orig: Any) -> Any:
        def slot_of_hash(self: Any, hash_value: int) -> int:
            slot = int(orig(self, hash_value))
            if self._reduce_range is None:
                return slot
            start, end = self._reduce_range
            return start + 1 if slot >= end else slot + 1

        return slot_of_hash

    _wrap(Selector, "slot_of_hash", make)


@mutant(
    "ring-point-to-next-consumer",
    "selectors",
    "a key hashing exactly onto a ring point goes to the next point's consumer",
)
def _ring_next() -> None:
    from reference_model.selectors.consistent_hashing import ConsistentHashingSelector

    def make(orig: Any) -> Any:
        def build(self: Any) -> list[Any]:
            table = list(orig(self))
            ring = self._ring
            for i, position in enumerate(ring):
                if position < len(table):
                    table[position] = self._entries[ring[(i + 1) % len(ring)]][0]
            return table

        return build

    _wrap(ConsistentHashingSelector, "_build_table", make)


@mutant(
    "ring-ignores-name-index",
    "selectors",
    "ring points ignore the consumer-name index: same-name consumers collide (apache/pulsar#23327)",
)
def _ring_no_index() -> None:
    from reference_model.hashing import make_hash, reduce_hash
    from reference_model.selectors.consistent_hashing import ConsistentHashingSelector, ring_key

    def position(self: Any, consumer: Any, name_index: int, point: int) -> int:
        return int(reduce_hash(make_hash(ring_key(consumer.name, point, 0)), self._key_range))

    ConsistentHashingSelector._position = position  # type: ignore[method-assign]


@mutant(
    "ring-points-ignored",
    "selectors",
    "the ring uses 50 points per consumer whatever subscriptionKeySharedConsistentHashingReplicaPoints says",
)
def _ring_points() -> None:
    from reference_model.selectors.consistent_hashing import ConsistentHashingSelector

    def make(orig: Any) -> Any:
        def init(self: Any, version: Any, points: int, key_range: Any, track_impacted: bool) -> None:
            orig(self, version, 50, key_range, track_impacted)

        return init

    _wrap(ConsistentHashingSelector, "__init__", make)


@mutant(
    "sticky-gaps-delivered",
    "selectors",
    "STICKY delivers hashes in the gaps between one consumer's ranges (apache/pulsar#24730)",
)
def _sticky_gaps() -> None:
    from reference_model.selectors.exclusive import StickyRangesSelector

    def make(orig: Any) -> Any:
        def init(self: Any, version: Any, range_size: int) -> None:
            orig(self, version, range_size)
            self._gap_fixed = False

        return init

    _wrap(StickyRangesSelector, "__init__", make)


@mutant(
    "sticky-range-end-exclusive",
    "selectors",
    "STICKY treats a range's end as exclusive: the last hash of each range is delivered to nobody",
)
def _sticky_end() -> None:
    from reference_model.selectors.exclusive import StickyRangesSelector

    def make(orig: Any) -> Any:
        def build(self: Any) -> list[Any]:
            table = list(orig(self))
            for key in self._keys:
                start, end, _owner = self._at[key]
                if 0 <= end < len(table) and end > start:
                    table[end] = None
            return table

        return build

    _wrap(StickyRangesSelector, "_build_table", make)


@mutant("auto-split-wrong-range", "selectors", "auto-split splits the last of the largest ranges instead of the first")
def _auto_split_wrong() -> None:
    from reference_model.selectors.auto_split import AutoSplitSelector

    def biggest(self: Any) -> tuple[int, int]:
        measure, best, best_lower = 0, self._range_size, 0
        lower = 0
        for bound in self._bounds:
            if bound - lower >= measure:
                measure, best, best_lower = bound - lower, bound, lower
            lower = bound
        return best, best_lower

    AutoSplitSelector._biggest_range = biggest  # type: ignore[method-assign]


@mutant(
    "auto-split-new-consumer-takes-upper-half",
    "selectors",
    "auto-split gives a joining consumer the upper half of the split range, not the lower",
)
def _auto_split_upper() -> None:
    from bisect import insort

    from reference_model.selectors.auto_split import AutoSplitSelector

    def make(orig: Any) -> Any:
        def add(self: Any, consumer: Any, ranges: Any) -> None:
            if not self._bounds:
                orig(self, consumer, ranges)
                return
            biggest, lower = self._biggest_range()
            bound = biggest - ((biggest - lower) >> 1)
            old = self._owner[biggest]
            insort(self._bounds, bound)
            self._owner[bound] = old
            self._bound_of[old.consumer_id] = bound
            self._owner[biggest] = consumer
            self._bound_of[consumer.consumer_id] = biggest

        return add

    _wrap(AutoSplitSelector, "_add", make)


@mutant(
    "sticky-conflict-accepted",
    "selectors",
    "STICKY accepts a consumer whose ranges overlap a connected consumer's (no 'Range conflict')",
)
def _sticky_conflict() -> None:
    from reference_model.selectors.exclusive import StickyRangesSelector

    StickyRangesSelector._conflict = lambda self, new: None  # type: ignore[method-assign]


@mutant(
    "auto-split-leave-wrong-heir",
    "selectors",
    "auto-split: when a consumer leaves, its lower neighbour absorbs its range instead of the higher one",
)
def _auto_split_heir() -> None:
    from bisect import bisect_left

    from reference_model.selectors.auto_split import AutoSplitSelector

    def make(orig: Any) -> Any:
        def remove(self: Any, consumer: Any) -> None:
            bound = self._bound_of.get(consumer.consumer_id)
            i = bisect_left(self._bounds, bound) if bound is not None else -1
            if bound is None or bound == self._range_size or i == 0:
                orig(self, consumer)
                return
            lower = self._bounds[i - 1]  # the lower neighbour moves up to the leaver's bound
            heir = self._owner.pop(lower)
            del self._bounds[i - 1]
            del self._bound_of[consumer.consumer_id]
            self._owner[bound] = heir
            self._bound_of[heir.consumer_id] = bound

        return remove

    _wrap(AutoSplitSelector, "_remove", make)


# --- deduplication ---------------------------------------------------------------------------------------


@mutant(
    "dedup-first-message-lost",
    "dedup",
    "a producer's first message is not stored and is answered with the duplicate receipt -1:-1",
)
def _dedup_first() -> None:
    from reference_model.dedup.decision import DedupDecision
    from reference_model.dedup.deduplication import MessageDeduplication

    def make(orig: Any) -> Any:
        def is_duplicate(self: Any, name: str, sequence_id: int, highest_sequence_id: int = -1, **kw: Any) -> Any:
            first = self.enabled and name not in self._pushed and not kw.get("marker")
            decision = orig(self, name, sequence_id, highest_sequence_id, **kw)
            if first and decision is DedupDecision.NOT_DUP:
                self._persisted[name] = self._pushed[name]
                return DedupDecision.DUP
            return decision

        return is_duplicate

    _wrap(MessageDeduplication, "is_duplicate", make)


@mutant("dedup-ignored", "dedup", "deduplication is switched on but every resend is stored again")
def _dedup_ignored() -> None:
    from reference_model.dedup.decision import DedupDecision
    from reference_model.dedup.deduplication import MessageDeduplication

    MessageDeduplication.is_duplicate = lambda self, *a, **k: DedupDecision.NOT_DUP  # type: ignore[method-assign]


@mutant(
    "dedup-last-id-off-by-one", "dedup", "a resend of the last stored sequence id is stored again (< instead of <=)"
)
def _dedup_boundary() -> None:
    from reference_model.dedup.decision import DedupDecision
    from reference_model.dedup.deduplication import MessageDeduplication

    def make(orig: Any) -> Any:
        def is_duplicate(self: Any, name: str, sequence_id: int, highest_sequence_id: int = -1, **kw: Any) -> Any:
            if self.enabled and self._pushed.get(name) == sequence_id and not kw.get("marker"):
                return DedupDecision.NOT_DUP
            return orig(self, name, sequence_id, highest_sequence_id, **kw)

        return is_duplicate

    _wrap(MessageDeduplication, "is_duplicate", make)


@mutant(
    "dedup-forgotten-on-restart",
    "dedup",
    "after a broker restart deduplication starts from empty maps (snapshot and replay ignored)",
)
def _dedup_restart() -> None:
    from reference_model.dedup.deduplication import MessageDeduplication

    def make(orig: Any) -> Any:
        def recover(self: Any, snapshot: Any, entries: Any, **kw: Any) -> None:
            orig(self, None, [], **kw)

        return recover

    _wrap(MessageDeduplication, "recover", make)


@mutant(
    "dedup-forgotten-on-reconnect",
    "dedup",
    "a producer that reconnects under the same name starts with no deduplication state: its resends are stored again",
)
def _dedup_reconnect() -> None:
    from reference_model.dedup.deduplication import MessageDeduplication

    def make(orig: Any) -> Any:
        def connected(self: Any, name: str) -> int:
            result = int(orig(self, name))
            self._pushed.pop(name, None)
            self._persisted.pop(name, None)
            return result

        return connected

    _wrap(MessageDeduplication, "producer_connected", make)


@mutant(
    "dedup-answer-from-snapshot",
    "dedup",
    "a connecting producer is answered the last id of the deduplication snapshot, not the pushed one (-1 before"
    " the first snapshot): a client that numbers its messages reuses stored ids, answered -1:-1 and dropped",
)
def _dedup_answer_from_snapshot() -> None:
    from reference_model.dedup.deduplication import MessageDeduplication

    def make(orig: Any) -> Any:
        def connected(self: Any, name: str) -> int:
            orig(self, name)
            return int(self._cursor_properties.get(name, -1))

        return connected

    _wrap(MessageDeduplication, "producer_connected", make)


@mutant(
    "dedup-answer-off-by-one",
    "dedup",
    "a connecting producer is answered one less than its last sequence id: the client's next message reuses the"
    " last stored id and is dropped as a duplicate",
)
def _dedup_answer_off_by_one() -> None:
    from reference_model.dedup.deduplication import MessageDeduplication

    def make(orig: Any) -> Any:
        def connected(self: Any, name: str) -> int:
            answer = int(orig(self, name))
            return answer - 1 if answer >= 0 else answer

        return connected

    _wrap(MessageDeduplication, "producer_connected", make)


@mutant(
    "dedup-failed-write-keeps-pushed",
    "dedup",
    "a failed ledger write leaves the pushed sequence id in place (no resetHighestSequenceIdPushed): after the"
    " storage is back, the resends of the failed ids are refused ('cannot determine') and never stored",
)
def _dedup_failed_write_keeps_pushed() -> None:
    from reference_model.dedup.deduplication import MessageDeduplication

    MessageDeduplication.on_write_failed = _noop  # type: ignore[method-assign]


@mutant(
    "dedup-failed-write-counted-persisted",
    "dedup",
    "a failed ledger write is recorded as persisted: the resend of a failed id is answered -1:-1 and lost",
)
def _dedup_failed_write_counted_persisted() -> None:
    from reference_model.dedup.deduplication import MessageDeduplication

    def on_write_failed(self: Any) -> None:
        if self.enabled:
            self._persisted = dict(self._pushed)

    MessageDeduplication.on_write_failed = on_write_failed  # type: ignore[method-assign]


@mutant(
    "dedup-in-flight-written-again",
    "dedup",
    "a resend of an id whose first write is still in flight is written a second time (Unknown taken as NotDup)",
)
def _dedup_in_flight_written_again() -> None:
    from reference_model.dedup.decision import DedupDecision
    from reference_model.dedup.deduplication import MessageDeduplication

    def make(orig: Any) -> Any:
        def is_duplicate(self: Any, name: str, sequence_id: int, highest_sequence_id: int = -1, **kw: Any) -> Any:
            decision = orig(self, name, sequence_id, highest_sequence_id, **kw)
            return DedupDecision.NOT_DUP if decision is DedupDecision.UNKNOWN else decision

        return is_duplicate

    _wrap(MessageDeduplication, "is_duplicate", make)


@mutant(
    "dedup-gap-stored",
    "dedup",
    "a send below the highest pushed id that was never sent before (a gapped id) is stored, as if deduplication"
    " kept a set of stored ids instead of comparing with the highest one",
)
def _dedup_gap_stored() -> None:
    from reference_model.dedup.decision import DedupDecision
    from reference_model.dedup.deduplication import MessageDeduplication

    def make(orig: Any) -> Any:
        def is_duplicate(self: Any, name: str, sequence_id: int, highest_sequence_id: int = -1, **kw: Any) -> Any:
            seen = self.__dict__.setdefault("_mutant_seen", set())
            decision = orig(self, name, sequence_id, highest_sequence_id, **kw)
            if decision is DedupDecision.DUP and (name, sequence_id) not in seen:
                decision = DedupDecision.NOT_DUP
            seen.add((name, sequence_id))
            return decision

        return is_duplicate

    _wrap(MessageDeduplication, "is_duplicate", make)


@mutant(
    "dedup-ignores-highest-id",
    "dedup",
    "deduplication ignores a send's highest_sequence_id (pushes and persists only its sequence_id): after a batch"
    " sent as 1, highest 5, a batch sent as 4, highest 8 is stored again",
)
def _dedup_ignores_highest() -> None:
    from reference_model.dedup.deduplication import MessageDeduplication

    def make_decide(orig: Any) -> Any:
        def is_duplicate(self: Any, name: str, sequence_id: int, highest_sequence_id: int = -1, **kw: Any) -> Any:
            return orig(self, name, sequence_id, -1, **kw)

        return is_duplicate

    def make_persisted(orig: Any) -> Any:
        def on_persisted(self: Any, name: str, sequence_id: int, highest_sequence_id: int, *a: Any, **kw: Any) -> Any:
            return orig(self, name, sequence_id, -1, *a, **kw)

        return on_persisted

    _wrap(MessageDeduplication, "is_duplicate", make_decide)
    _wrap(MessageDeduplication, "on_persisted", make_persisted)


@mutant(
    "dedup-gap-drops-higher",
    "dedup",
    "an id more than one above the highest pushed one (after a gap) is answered as a duplicate (-1:-1) and lost",
)
def _dedup_gap_drops_higher() -> None:
    from reference_model.dedup.decision import DedupDecision
    from reference_model.dedup.deduplication import MessageDeduplication

    def make(orig: Any) -> Any:
        def is_duplicate(self: Any, name: str, sequence_id: int, highest_sequence_id: int = -1, **kw: Any) -> Any:
            pushed = self._pushed.get(name)
            if self.enabled and not kw.get("marker") and pushed is not None and sequence_id > pushed + 1:
                return DedupDecision.DUP
            return orig(self, name, sequence_id, highest_sequence_id, **kw)

        return is_duplicate

    _wrap(MessageDeduplication, "is_duplicate", make)


@mutant(
    "dedup-recovery-skips-replay",
    "dedup",
    "after a broker restart deduplication is recovered from the last snapshot alone: the entries written after it"
    " are not replayed, so their ids are stored again and a reconnecting producer is answered the snapshot's id",
)
def _dedup_recovery_skips_replay() -> None:
    from reference_model.dedup.deduplication import MessageDeduplication

    def make(orig: Any) -> Any:
        def recover(self: Any, snapshot: Any, entries: Any, **kw: Any) -> None:
            orig(self, snapshot, [], **kw)

        return recover

    _wrap(MessageDeduplication, "recover", make)


@mutant(
    "storage-failed-write-stored",
    "dedup",
    "a write the storage failed is stored after all while its producer is told PersistenceError: a message whose"
    " send failed is delivered",
)
def _storage_failed_write_stored() -> None:
    from reference_model.broker.topic import ServerTopic

    def make(orig: Any) -> Any:
        def storage_down(self: Any, fail_after_ms: int) -> None:
            orig(self, fail_after_ms)
            outage = self.outage
            if outage is None or "fail_all" in vars(outage):
                return
            real = outage.fail_all

            def fail_all() -> None:
                for write in list(outage.in_flight):
                    self._persist(write.metadata, write.messages, write.dedup_name, write.source)
                real()

            outage.fail_all = fail_all

        return storage_down

    _wrap(ServerTopic, "storage_down", make)


@mutant(
    "batch-judged-by-its-highest-id",
    "dedup",
    "a batch is judged by the highest id inside it, in the order the C++ client sends key-based batches (by first"
    " id): batch B (2, 3) sent after A (1, 4, 5) is answered -1:-1 and lost",
)
def _batch_judged_by_its_highest_id() -> None:
    import dataclasses

    from reference_model.broker.producer import ModelProducer

    def make(orig: Any) -> Any:
        def _publish(self: Any, items: Any, *, batched: bool) -> None:
            broker = self._broker
            real = broker._publish
            if batched and len(items) > 1:
                highest = max(item.message.sequence_id for item in items)

                def publish(topic: Any, metadata: Any, messages: Any) -> Any:
                    return real(topic, dataclasses.replace(metadata, highest_sequence_id=highest), messages)

                broker._publish = publish
            try:
                orig(self, items, batched=batched)
            finally:
                broker.__dict__.pop("_publish", None)

        return _publish

    _wrap(ModelProducer, "_publish", make)


# --- replicated subscriptions ----------------------------------------------------------------------------


@mutant(
    "snapshot-one-round",
    "replication",
    "with three or more clusters a snapshot completes after one round instead of two",
)
def _snapshot_one_round() -> None:
    from reference_model.replication.snapshot_builder import SnapshotBuilder

    def make(orig: Any) -> Any:
        def init(self: Any, *a: Any, **k: Any) -> None:
            orig(self, *a, **k)
            self.needs_two_rounds = False

        return init

    _wrap(SnapshotBuilder, "__init__", make)


@mutant(
    "snapshot-last-answer-only",
    "replication",
    "a snapshot completes from the last cluster's answer only (earlier answers overwritten)",
)
def _snapshot_last_only() -> None:
    from reference_model.replication.snapshot_builder import SnapshotBuilder

    def make(orig: Any) -> Any:
        def received(self: Any, local_position: Any, cluster: str, cluster_position: Any) -> Any:
            self.missing = {c for c in self.missing if c == cluster}
            self.needs_two_rounds = False
            return orig(self, local_position, cluster, cluster_position)

        return received

    _wrap(SnapshotBuilder, "received_response", make)


@mutant(
    "snapshot-cache-overshoots",
    "replication",
    "the mark-delete position picks the first snapshot *after* it, not the last one at or before it",
)
def _snapshot_overshoot() -> None:
    from reference_model.replication import snapshot_cache

    for cls_name in ("NewestSnapshotCache", "DistanceSnapshotCache"):
        cls = getattr(snapshot_cache, cls_name, None)
        if cls is None:
            continue

        def make(orig: Any) -> Any:
            def advanced(self: Any, position: Any) -> Any:
                later = [s for s in self.snapshots() if s.local_position > position]
                found = orig(self, position)
                return later[0] if later else found

            return advanced

        _wrap(cls, "advanced_mark_delete_position", make)


@mutant(
    "remote-cursor-never-updated",
    "replication",
    "a remote cluster never applies a replicated subscription's cursor update (the UPDATE's AcknowledgeTo is dropped)",
)
def _remote_cursor_never_updated() -> None:
    from reference_model.replication.controller import ReplicatedSubscriptionsController
    from reference_model.replication.markers import MarkerType

    def make(orig: Any) -> Any:
        def received_marker(self: Any, position: Any, marker_type: int, payload: Any) -> Any:
            if marker_type == MarkerType.REPLICATED_SUBSCRIPTION_UPDATE:
                return None
            return orig(self, position, marker_type, payload)

        return received_marker

    _wrap(ReplicatedSubscriptionsController, "received_marker", make)


@mutant(
    "remote-cursor-lags-a-snapshot",
    "replication",
    "the cursor update carries the snapshot before the one the mark-delete passed: remotes stay a snapshot behind",
)
def _remote_cursor_lags() -> None:
    from reference_model.replication.controller import ReplicatedSubscriptionsController
    from reference_model.replication.markers import subscription_update

    def make(orig: Any) -> Any:
        def updated(self: Any, subscription: str, snapshot: Any) -> Any:
            passed = self.__dict__.setdefault("_mutant_passed", {})
            previous = passed.get(subscription)
            passed[subscription] = snapshot
            if previous is None:  # nothing older to send: an update that moves no cursor
                return subscription_update(subscription, ())
            return orig(self, subscription, previous)

        return updated

    _wrap(ReplicatedSubscriptionsController, "local_subscription_updated", make)


@mutant(
    "replicated-status-stays-off",
    "replication",
    "switching a subscription's replicated status back on is ignored: once off, it never replicates again",
)
def _replicated_status_stays_off() -> None:
    from reference_model.broker.model_broker import ModelBroker

    def make(orig: Any) -> Any:
        def set_status(self: Any, topic: str, subscription: str, enabled: bool) -> bool:
            sub = self.subscription(topic, subscription)
            if enabled and sub is not None and not sub.replicated:
                return True
            return bool(orig(self, topic, subscription, enabled))

        return set_status

    _wrap(ModelBroker, "set_replicated_subscription_status", make)


@mutant(
    "remote-ignores-markers-without-subscription",
    "replication",
    "a remote cluster whose replicated subscription was deleted ignores replication markers instead of starting its"
    " controller for them: the subscription never comes back and its cursor is never moved",
)
def _remote_ignores_markers() -> None:
    from reference_model.replication.clusters import ReplicatedClusters

    def make(orig: Any) -> Any:
        def controller_for_marker(self: Any, cluster: str, topic: str) -> Any:
            return self._active_controller(cluster, topic)

        return controller_for_marker

    _wrap(ReplicatedClusters, "_controller_for_marker", make)


@mutant(
    "markers-use-permits",
    "dispatch",
    "a replication marker the Key_Shared dispatcher reads takes a permit of a consumer it is never sent to"
    " (testSendMarkerMessage: markers are filtered out before permits are charged)",
)
def _markers_use_permits() -> None:
    from reference_model.keyshared.dispatcher import KeySharedDispatcher

    def make(orig: Any) -> Any:
        def strip(self: Any, entries: Any) -> Any:
            kept = orig(self, entries)
            markers = len(entries) - len(kept)
            if markers and self.consumers:
                first = self.consumers[min(self.consumers)]
                first.permits -= markers
            return kept

        return strip

    _wrap(KeySharedDispatcher, "_strip_markers", make)


@mutant(
    "replicated-resend-stored-again",
    "replication",
    "a deduplicating remote stores a message the replicator sends again (after lost receipts or a repeated send)"
    " a second time: replicated messages escape deduplication (OneWayReplicatorDeduplicationTest)",
)
def _replicated_resend_stored_again() -> None:
    from reference_model.broker.model_broker import ModelBroker

    def make(orig: Any) -> Any:
        def append(self: Any, topic: str, metadata: Any, messages: Any, replicated_from: str, **kw: Any) -> Any:
            seen = self.__dict__.setdefault("_mutant_appended", {})
            key = (metadata.producer_name, metadata.sequence_id, replicated_from)
            n = seen[key] = seen.get(key, 0) + 1
            if n > 1 and metadata.marker_type is None:  # a copy: stored under a fresh id, as if never seen
                metadata = replace(metadata, producer_name=f"{metadata.producer_name}#{n}")
                kw.pop("source_position", None)
            return orig(self, topic, metadata, messages, replicated_from, **kw)

        return append

    _wrap(ModelBroker, "append_replicated", make)


@mutant(
    "replicator-drops-in-flight",
    "replication",
    "a replicator whose connection drops forgets the entries it had in flight instead of sending them again:"
    " they never reach the remote (OneWayReplicatorDeduplicationTest.testDeduplicationNotLostMessage)",
)
def _replicator_drops_in_flight() -> None:
    from reference_model.replication.replicator import ReplicatorState

    def make(orig: Any) -> Any:
        def take_back(self: Any) -> None:
            self.in_flight.clear()
            orig(self)

        return take_back

    _wrap(ReplicatorState, "take_back_in_flight", make)


@mutant(
    "markers-at-tail-hide-messages",
    "dispatch",
    "a read that ends in replication markers sends none of its messages (the last entry taken for the end of the"
    " data: ReplicatedSubscriptionTest.testReplicatedSubscriptionAcrossTwoRegionsGetLastMessage)",
)
def _markers_at_tail_hide_messages() -> None:
    from reference_model.keyshared.dispatcher import KeySharedDispatcher

    def make(orig: Any) -> Any:
        def strip(self: Any, entries: Any) -> Any:
            kept = orig(self, entries)
            return [] if entries and entries[-1].is_marker else kept

        return strip

    _wrap(KeySharedDispatcher, "_strip_markers", make)


@mutant(
    "replicated-status-off-ignored",
    "replication",
    "switching a subscription's replicated status off is ignored: its cursor keeps replicating"
    " (testReplicatedSubscriptionRestApi1: with the status off every cluster reads everything)",
)
def _replicated_status_off_ignored() -> None:
    from reference_model.broker.model_broker import ModelBroker

    def make(orig: Any) -> Any:
        def set_status(self: Any, topic: str, subscription: str, enabled: bool) -> bool:
            if not enabled:
                return True
            return bool(orig(self, topic, subscription, enabled))

        return set_status

    _wrap(ModelBroker, "set_replicated_subscription_status", make)


@mutant(
    "partitioned-status-first-partition-only",
    "replication",
    "a replicated-status switch through a partitioned topic's name reaches only its first partition: the others"
    " keep replicating (testReplicatedSubscriptionRestApi2 asserts the status of every partition)",
)
def _partitioned_status_first_partition_only() -> None:
    from reference_model.broker.model_broker import ModelBroker, normalise_topic
    from reference_model.broker.partitioned import partition_name

    def make(orig: Any) -> Any:
        def set_status(self: Any, topic: str, subscription: str, enabled: bool) -> bool:
            if self.partitions_of(topic):
                return bool(orig(self, partition_name(normalise_topic(topic), 0), subscription, enabled))
            return bool(orig(self, topic, subscription, enabled))

        return set_status

    _wrap(ModelBroker, "set_replicated_subscription_status", make)


@mutant(
    "compaction-keeps-superseded",
    "replication",
    "the compactor keeps the first value it meets of each key, not the latest, so a readCompacted reader gets a"
    " superseded value (testReplicatedSubscriptionWithCompaction: [V2], never V1)",
)
def _compaction_keeps_superseded() -> None:
    import reference_model.broker.model_broker as model_broker
    from reference_model.storage.compaction import CompactedTopic

    def make(_orig: Any) -> Any:
        def first_wins(entries: Any, horizon: Any) -> CompactedTopic:
            by_key: dict[str, Any] = {}
            for entry in entries if horizon is not None else ():
                if entry.position > horizon:
                    break
                if not entry.is_marker and entry.metadata.partition_key is not None:
                    by_key.setdefault(entry.metadata.partition_key, entry)
            return CompactedTopic(horizon, tuple(sorted(by_key.values(), key=lambda e: e.position)))

        return first_wins

    _wrap(model_broker, "compact", make)
