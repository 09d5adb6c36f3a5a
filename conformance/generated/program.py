"""Programs: scenarios built from a list of raw *moves*, so any list of moves is a valid workload.

A program also has a *shape*: a few small integers, one per workload dimension of :data:`SHAPE_CHOICES`
(broker settings, batching, deduplication, the key set, the selector, the subscription's mode and flags, how
many consumers, the topic's kind, trimming, partitions), each 0 for the plain default, so a shrunk program keeps
only the dimensions its failure needs.

A move is ``(kind, consumer, amount)``: three small integers.  :func:`program_from_moves` interprets the
moves in order against the program's own bookkeeping (which consumers are open, paused) and turns each into
a scenario step, dropping a move that would be invalid where it falls (closing a consumer that is not open,
resuming one that is not paused).  Two sources draw the moves:

* Hypothesis (:mod:`conformance.generated.strategies`): a list of moves, which it shrinks by deleting and
  simplifying moves; because every list is valid, every shrink candidate is a runnable program;
* a seed (:func:`program_from_seed`): ``random.Random(seed)`` draws the same shape, which is how the fixed
  programs in ``programs/`` are derived.

Every program opens ``c1`` first, so something consumes, and ends with the consumers resumed and a
``wait_quiet``; the driver's drain then delivers and acknowledges what is left.  Pure and deterministic.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from typing import NamedTuple

from conformance.scenarios import (
    HASH_RANGE_MAX,
    AckHeld,
    Behaviour,
    Close,
    CloseProducer,
    Crash,
    Deduplication,
    ExpireMessages,
    KeySet,
    NackHeld,
    Open,
    OpenProducer,
    Pause,
    Publish,
    Redeliver,
    Resend,
    RestartBroker,
    Resume,
    Scenario,
    SetBehaviour,
    Settings,
    Sleep,
    Step,
    SubscriptionSettings,
    WaitQuiet,
    loads_scenario,
)

__all__ = [
    "CONSUMERS",
    "DIMENSION_MOVE_KINDS",
    "EDGE_KEYS",
    "GAP_MOVE_KINDS",
    "HIGHEST_MOVE_KINDS",
    "MOVE_KINDS",
    "PRODUCER_MOVE_KINDS",
    "PURGE_TIMEOUT_MINUTES",
    "SHAPE_CHOICES",
    "TAIL_KEYS",
    "GeneratorOptions",
    "Move",
    "program_from_moves",
    "program_from_seed",
    "stored_programs",
]

#: What a move can do; ``kind`` indexes this tuple, so repeating a kind weights it (publishes, joins and
#: leaves are what make keys move).  Order matters for shrinking: Hypothesis shrinks integers towards 0, so
#: the simplest moves come first.
MOVE_KINDS: tuple[str, ...] = (
    "publish",
    "publish",
    "publish",
    "publish",
    "open",
    "open",
    "open",
    "open",
    "wait_quiet",
    "ack_held",
    "hold",
    "ack",
    "close",
    "close",
    "nack_held",
    "redeliver",
    "pause",
    "resume",
    "nack",
    "crash",
)
#: Moves of the workload dimensions (``GeneratorOptions.dimensions``), drawn after :data:`MOVE_KINDS`:
#: ``restart`` (the broker, clean or killed), ``resend`` (p1's latest messages again, after a reconnect: the
#: deduplication must absorb them), ``open_same_name`` (a consumer under another handle's name),
#: ``join_one_outstanding`` (one message published and delivered, then a joiner: the key may move while
#: exactly that message is outstanding), ``leave_alone`` (a consumer joins holding, messages arrive, and every
#: other consumer leaves: a recently joined, restricted consumer left alone while it holds messages).
DIMENSION_MOVE_KINDS: tuple[str, ...] = (
    "open_same_name",
    "join_one_outstanding",
    "leave_alone",
    "resend",
    "restart",
)
#: With ``GeneratorOptions.gaps`` (and deduplication on), drawn last: ``gap`` (p1 skips ``amount`` ids, then sends
#: the lowest skipped one: deduplication answers it as a duplicate and never stores it, ``stored_below_highest``
#: if a broker does; ``ClientDeduplicationTest.testProducerDeduplicationNonBatchAsync``).
GAP_MOVE_KINDS: tuple[str, ...] = ("gap",)
#: With ``GeneratorOptions.highest_ids`` (and deduplication on, a persistent topic), drawn after those:
#: ``batch_highest`` (producer ``pb``, the harness's own protocol producer, sends its next 1..3 ids as one batch with
#: its highest id; with an even amount then a batch under that highest id with one new id above it, which the
#: broker answers ``-1:-1`` whole: ``MessageDuplicationTest.testIsDuplicate``'s ``4, highest 8``).
HIGHEST_MOVE_KINDS: tuple[str, ...] = ("batch_highest",)
#: With ``GeneratorOptions.producers`` (and deduplication on), drawn last: ``dedup_switch`` (deduplication switched
#: off, with an odd amount ``amount`` messages published while it is off, and on again: the broker starts afresh, so
#: a later ``resend`` or ``restart`` meets a new epoch, ``dedup/reenable-then-restart``), ``producer_cycle`` (p1
#: closed and created again, with an even amount after a sleep past the inactivity timeout plus one purge period:
#: the broker must have forgotten it, ``not_purged``; with an amount of 3 or 7 past the timeout by less than a
#: period: its answer locates a purge run, ``purge_off_schedule``; the checker's deduplication epochs judge all).
PRODUCER_MOVE_KINDS: tuple[str, ...] = ("dedup_switch", "producer_cycle")
#: ``[broker] brokerDeduplicationProducerInactivityTimeoutMinutes`` of programs drawn with ``producers`` (the least
#: Pulsar takes), and the sleep of a ``producer_cycle`` that must find p1 forgotten: past the timeout plus a third
PURGE_TIMEOUT_MINUTES = 1
PURGE_SLEEP_MS = PURGE_TIMEOUT_MINUTES * 60_000 * 4 // 3 + 5_000
#: Consumer handles a program may use; ``consumer`` indexes this tuple (modulo the shape's handle count).
CONSUMERS: tuple[str, ...] = ("c1", "c2", "c3")
#: With the ``consumers`` dimension: five handles, so many consumers hold keys at once.
MANY_CONSUMERS: tuple[str, ...] = ("c1", "c2", "c3", "c4", "c5")
#: Keys whose sticky hash lies in the wrap-around tail of every era's consistent-hashing ring: above 65440 of
#: 4.0's 1..65535 slots and above 99.85% of the 31-bit hash of 3.x and the classic 4.x ring, so past every
#: ring point of a few consumers (they wrap to the first point).  ``tests/unit/test_generated_dimensions.py``
#: recomputes them.
TAIL_KEYS: tuple[str, ...] = ("tail-867443", "tail-1191082", "tail-1529262", "tail-1695233", "tail-1705128")
#: Keys whose hash lies at the ends of a hash range, where an off-by-one in a selector's table or its
#: reduction shows (the automatic mutation run found the ends never taken): ``edge-53188``'s 31-bit hash is a
#: multiple of 65536 (slot 0 of 3.x's sticky and auto-split selectors; the 0 that 4.x turns into 1),
#: ``edge-3546``'s is 65535 modulo 65536 (the last slot of the 65536-slot range), ``edge-62959`` and
#: ``edge-52292`` take slots 1 and 65535 of 4.0's consistent-hashing range (1..65535).
#: ``tests/unit/test_generated_dimensions.py`` recomputes them.
EDGE_KEYS: tuple[str, ...] = ("edge-53188", "edge-3546", "edge-62959", "edge-52292")

#: The shape: dimension name -> its choices; a shape value indexes the choices (0: the plain default).
#: ``broker``-dimension choices are ``[broker]`` pairs (``docs/scenarios.md``, "Broker settings").
SHAPE_CHOICES: dict[str, tuple[object, ...]] = {
    "unacked_consumer": ((), (("maxUnackedMessagesPerConsumer", 3),), (("maxUnackedMessagesPerConsumer", 6),)),
    "unacked_subscription": (
        (),
        (("maxUnackedMessagesPerSubscription", 4),),
        (("maxUnackedMessagesPerSubscription", 9),),
    ),
    "lookahead": (
        (),
        (("keySharedLookAheadMsgInReplayThresholdPerConsumer", 2),),
        (("keySharedLookAheadMsgInReplayThresholdPerSubscription", 5),),
    ),
    "redelivery_delay": ((), (("keySharedUnblockingIntervalMs", 0),), (("keySharedUnblockingIntervalMs", 150),)),
    "nack_delay_ms": (100, 1, 600),
    "dedup": ("off", "on", "on-snapshot-every-2"),
    "batching": ("none", "key_based", "default", "per-publish"),
    "keys": ("six", "ring-tail", "two", "edges"),
    "selector": ("", "auto-split", "consistent-hashing-1-point"),
    "mode": ("AUTO_SPLIT", "STICKY"),
    "out_of_order": (False, True),
    "consumers": (3, 5),
    #: a non-persistent topic (``docs/scenarios.md``): no deduplication, resends, restarts or default batches there
    "topic": ("persistent", "non-persistent"),
    #: consumed entries trimmed (ledgers of 2 or 5 entries deleted once every cursor passed them): a persistent
    #: topic only; last, so the programs drawn before it keep every other draw
    "trim": ((), (("managedLedgerMaxEntriesPerLedger", 2),), (("managedLedgerMaxEntriesPerLedger", 5),)),
    #: a partitioned topic of 2 partitions (``docs/scenarios.md``, "Partitioned topics"): each partition its own
    #: subscription and dispatcher, a key in one partition.  Only on a persistent topic without deduplication or
    #: unacked-message limits (the broker's limits count per partition's consumer), and then the program makes
    #: no crash, restart, resend or expiry (what the driver does on one non-partitioned topic only); last, so the
    #: programs drawn before it keep every other draw
    "partitions": (0, 2),
    #: the consumers' receiver queue (the client's permits): 20, or 2, so that a paused or holding consumer soon
    #: has no permits and its keys wait in the replay queue; with the ``lookahead`` dimension the look-ahead limit
    #: is then reached and judged (``received_beyond_lookahead``: what sits unread in the queues is what a trace
    #: cannot see, so small ones make the rule bite). Last, so the programs drawn before it keep every other draw
    "queue": (20, 2),
    #: the client's batch timer: default batches of 50,000-byte messages (``[settings] payload_bytes``) sent 2 ms
    #: apart (``spacing_ms``), so batches close by size and by the 5 ms timer in turn (``oversized_batch``,
    #: ``batch_flushed_early``); only where the program has default batches.  Last, so the programs drawn before
    #: it keep every other draw
    "batch_timing": ("back-to-back", "spaced-large"),
    #: zero-queue consumers (``receiver_queue = 0``: the client asks for one message per receive; a consumer
    #: waiting when its connection is replaced asks again on the new one): c1, and the opens that would ask for a
    #: queue of 5.  Only where the clients take it: unbatched publishes on a persistent, non-partitioned topic, no
    #: batch sent with its highest id.  Last, so the programs drawn before it keep every other draw
    "zero_queue": (False, True),
}
#: the payload and the spacing of the ``spaced-large`` batch timing
SPACED_PAYLOAD_BYTES = 50_000
SPACING_MS = 2
SHAPE_DIMENSIONS: tuple[str, ...] = tuple(SHAPE_CHOICES)
MAX_AMOUNT = 8
#: the ack timeout of consumers opened with one (``GeneratorOptions.ack_timeout``): the client's minimum
ACK_TIMEOUT_MS = 10_000
#: the delay of delayed publishes (``GeneratorOptions.delayed``): past a tick (1 s) and the quiet bounds, so the
#: messages of the key published after them are delivered first
DELAY_MS = 2_000


class Move(NamedTuple):
    kind: int
    consumer: int
    amount: int  #: 1..MAX_AMOUNT: messages to publish, or the count of an ``ack_held`` / ``nack_held``


#: Run settings of generated programs: short bounds, so a stalled broker costs seconds, not minutes.
PROGRAM_SETTINGS = Settings(
    receiver_queue=20,
    nack_delay_ms=100,
    drain_timeout_ms=4_000,
    quiet_ms=250,
    drain_quiet_ms=1_500,
    step_timeout_ms=3_000,
    send_timeout_ms=3_000,
)


@dataclass(frozen=True, slots=True)
class GeneratorOptions:
    """What generated programs may use.  ``crash`` needs a target that can cut a connection."""

    crash: bool = True
    #: consumers may subscribe with the client's ack timeout (10 s), and quiet waits may last past it.  Off by
    #: default: with it on, a program costs seconds more on a real broker (the model's clock is simulated).
    ack_timeout: bool = False
    #: some publishes send delayed messages (``deliver_after_ms`` = :data:`DELAY_MS`), and the program sleeps past
    #: the delay before its end.  Off by default, like the ack timeout (and pulsar-lite has no delayed delivery).
    delayed: bool = False
    #: some quiet waits are followed by a message expiry (``expire_messages``, a TTL of 1 s after a 1.5 s sleep):
    #: the model only by default (it needs the admin API; pulsar-lite has none)
    expiry: bool = False
    keys: int = 6  #: size of the key set every publish draws from (small, so keys collide across consumers)
    settings: Settings = field(default_factory=lambda: PROGRAM_SETTINGS)
    #: draw the workload dimensions (the shape and :data:`DIMENSION_MOVE_KINDS`); off for the fixed programs
    #: replayed on real brokers, which cannot take broker settings per run
    dimensions: bool = True
    restart: bool = True  #: ``restart`` moves (needs a target that can restart its broker)
    #: ``gap`` moves (:data:`GAP_MOVE_KINDS`, with the dimensions); off by default, so the programs drawn without
    #: it stay the same
    gaps: bool = False
    #: ``batch_highest`` moves (:data:`HIGHEST_MOVE_KINDS`, with the dimensions; a target with ``raw_send``); off by
    #: default, so the programs drawn without it stay the same
    highest_ids: bool = False
    #: ``dedup_switch`` and ``producer_cycle`` moves (:data:`PRODUCER_MOVE_KINDS`, with the dimensions; a target that
    #: switches deduplication and takes broker settings: the model); off by default, so the programs drawn without
    #: it stay the same
    producers: bool = False

    def move_kinds(self) -> tuple[str, ...]:
        if not self.dimensions:
            return MOVE_KINDS
        extra = (GAP_MOVE_KINDS if self.gaps else ()) + (HIGHEST_MOVE_KINDS if self.highest_ids else ())
        extra += PRODUCER_MOVE_KINDS if self.producers else ()
        return MOVE_KINDS + DIMENSION_MOVE_KINDS + extra


#: What the fixed programs of ``programs/`` are derived with (they replay on every target).
STORED_OPTIONS = GeneratorOptions(dimensions=False)


@dataclass(frozen=True, slots=True)
class _Shape:
    """A shape's values read through :data:`SHAPE_CHOICES` (each index taken modulo its choices)."""

    values: dict[str, object]

    @classmethod
    def of(cls, shape: Sequence[int]) -> _Shape:
        raw = (list(shape) + [0] * len(SHAPE_DIMENSIONS))[: len(SHAPE_DIMENSIONS)]
        pairs = zip(SHAPE_DIMENSIONS, raw, strict=True)
        return cls({d: SHAPE_CHOICES[d][int(v) % len(SHAPE_CHOICES[d])] for d, v in pairs})

    def __getitem__(self, name: str) -> object:
        return self.values[name]

    def broker(self) -> tuple[tuple[str, int | bool], ...]:
        pairs: list[tuple[str, int | bool]] = []
        for name in ("unacked_consumer", "unacked_subscription", "lookahead", "redelivery_delay"):
            pairs.extend(self.values[name])  # type: ignore[arg-type]
        if self.values["dedup"] == "on-snapshot-every-2" and not self.non_persistent:
            pairs.append(("brokerDeduplicationEntriesInterval", 2))
        if not self.non_persistent:
            pairs.extend(self.values["trim"])  # type: ignore[arg-type]
        return tuple(pairs)

    @property
    def non_persistent(self) -> bool:
        return self.values["topic"] == "non-persistent"

    @property
    def partitions(self) -> int:
        """The partitions of the run's topic (0: not partitioned): the drawn count where it applies (above)."""
        plain = not self.non_persistent and self.values["dedup"] == "off"
        unlimited = not self.values["unacked_consumer"] and not self.values["unacked_subscription"]
        return int(self.values["partitions"]) if plain and unlimited else 0  # type: ignore[call-overload]

    @property
    def deduplication(self) -> bool:
        """Deduplication asked for (never on a non-persistent topic, where it does not apply)."""
        return self.values["dedup"] != "off" and not self.non_persistent

    def settings(self, base: Settings) -> Settings:
        selector = str(self.values["selector"])
        return replace(
            base,
            nack_delay_ms=int(self.values["nack_delay_ms"]),  # type: ignore[call-overload]
            deduplication=self.deduplication,
            topic=str(self.values["topic"]),
            selector="consistent-hashing" if selector.startswith("consistent-hashing") else selector,
            points=1 if selector == "consistent-hashing-1-point" else 0,
            partitions=self.partitions,
            receiver_queue=int(self.values["queue"]),  # type: ignore[call-overload]
            payload_bytes=SPACED_PAYLOAD_BYTES if self.spaced else base.payload_bytes,
        )

    @property
    def spaced(self) -> bool:
        """Default batches sent spaced, of large messages: only where the program may send default batches."""
        batching = self.values["batching"] in ("default", "per-publish")
        return self.values["batch_timing"] == "spaced-large" and batching and not self.non_persistent

    def key_set(self, default_count: int) -> KeySet:
        keys = self.values["keys"]
        if keys == "ring-tail":
            return KeySet(names=TAIL_KEYS)
        if keys == "edges":
            return KeySet(names=EDGE_KEYS)
        return KeySet(count=2 if keys == "two" else default_count)

    def batching(self, amount: int) -> str:
        mode = str(self.values["batching"])
        mode = ("none", "key_based", "default")[amount % 3] if mode == "per-publish" else mode
        return "key_based" if mode == "default" and self.non_persistent else mode  # one key per entry there

    def handles(self) -> tuple[str, ...]:
        return MANY_CONSUMERS if self.values["consumers"] == 5 else CONSUMERS

    def sticky_ranges(self, handle: str) -> tuple[tuple[int, int], ...]:
        """STICKY mode: handle i of n owns stripes i and i + n of 2n over ``[0, HASH_RANGE_MAX - 1]``
        (interleaved, with a gap another fills); the first handle also owns the one-slot range
        ``[HASH_RANGE_MAX, HASH_RANGE_MAX]``, where :data:`EDGE_KEYS`' ``edge-3546`` lands (a one-slot range at the
        range's end: a selector's table that skips ``lo == hi`` or the last slot loses its messages)."""
        if self.values["mode"] != "STICKY":
            return ()
        handles = self.handles()
        stripes = 2 * len(handles)
        width = HASH_RANGE_MAX // stripes
        out = []
        for stripe in (handles.index(handle), handles.index(handle) + len(handles)):
            end = HASH_RANGE_MAX - 1 if stripe == stripes - 1 else (stripe + 1) * width - 1
            out.append((stripe * width, end))
        if handle == handles[0]:
            out.append((HASH_RANGE_MAX, HASH_RANGE_MAX))
        return tuple(out)


def _behaviour(amount: int) -> Behaviour:
    # holding and acknowledging consumers alike: the interesting states are keys held during joins and leaves
    return (Behaviour("hold"), Behaviour("ack"), Behaviour("hold"), Behaviour("ack"), Behaviour("nack"))[amount % 5]


def program_from_moves(
    moves: Iterable[Sequence[int]],
    *,
    name: str,
    options: GeneratorOptions | None = None,
    shape: Sequence[int] = (),
) -> Scenario:
    """Interpret ``moves`` into a valid scenario named ``name`` (see the module docstring).

    ``shape`` (one index per :data:`SHAPE_DIMENSIONS`, missing ones 0) applies only with
    ``options.dimensions``; without it the program is what the generator drew before the dimensions existed
    (the fixed programs stay the same).
    """
    opts = options or GeneratorOptions()
    form = _Shape.of(shape if opts.dimensions else ())
    # the inactivity timeout a producer_cycle's long sleep passes (the header then carries it for the checker)
    purge: tuple[tuple[str, int], ...] = ()
    if opts.producers and opts.dimensions and form.deduplication:
        purge = (("brokerDeduplicationProducerInactivityTimeoutMinutes", PURGE_TIMEOUT_MINUTES),)
    if form.partitions:  # what the driver does on one non-partitioned topic only (docs/scenarios.md)
        opts = replace(opts, crash=False, restart=False, expiry=False)
    kinds = opts.move_kinds()
    handles = form.handles()
    sticky = form["mode"] == "STICKY"
    open_now: dict[str, bool] = {}  # handle -> paused
    steps: list[Step] = []
    published = 0  # p1's sequence ids so far (the driver numbers them from 1)
    # Below this every id of p1 is one the broker saw as sent (a batch reaches it under its first id only, from
    # the Python/C++ client, so an id inside a batch is rightly stored again: docs/conformance.md)
    resendable = 0
    batch_next = 1  # the next id of ``pb``, the producer of the batches sent with their highest id

    def emit(step: Step) -> None:
        steps.append(step)

    # allowOutOfOrderDelivery: the subscription's (the header's, which picks the checker's contract) and the one
    # opens ask for now. With the subscription's true, an open once every consumer has closed may switch it
    # (KeySharedSubscriptionTest.testAllowOutOfOrderDeliveryChangedAfterAllConsumerDisconnected): the ordered
    # phases are then judged by the more lenient contract, never the other way round. Not after a crash: the
    # broker may still count the crashed consumer, and refuses a changed flag while it does.
    out_of_order = bool(form["out_of_order"])
    zero_queue = (
        bool(form["zero_queue"])
        and form["batching"] == "none"
        and not form.non_persistent
        and not form.partitions
        and not (form.deduplication and "batch_highest" in kinds)
    )
    first_queue: dict[str, object] = {"receiver_queue": 0} if zero_queue else {}
    flag = out_of_order
    ever_opened = crashed = False

    def open_(handle: str, behaviour: Behaviour | None = None, **extra: object) -> None:
        nonlocal ever_opened
        ranges = form.sticky_ranges(handle)
        if flag != out_of_order:
            extra["allow_out_of_order_delivery"] = flag
        emit(Open(consumer=handle, behaviour=behaviour or Behaviour(), ranges=ranges, **extra))  # type: ignore[arg-type]
        open_now[handle] = False
        ever_opened = True

    delays = False  # some publish was delayed: sleep past the delay before the end

    def publish(count: int, amount: int) -> None:
        nonlocal published, resendable, delays
        batching = form.batching(amount)
        delay = DELAY_MS if opts.delayed and amount % 4 == 3 else 0
        delays = delays or bool(delay)
        spacing = SPACING_MS if form.spaced and batching == "default" else 0
        emit(
            Publish(
                count=count,
                keys=form.key_set(opts.keys),
                batching=batching,
                deliver_after_ms=delay,
                spacing_ms=spacing,
            )
        )
        resendable = max(resendable, published + 1 if batching != "none" else published + count)
        published += count

    # keys held from the start: joins must drain them (and, with the ack timeout on, a long wait sends them back)
    open_("c1", Behaviour("hold"), ack_timeout_ms=ACK_TIMEOUT_MS if opts.ack_timeout else 0, **first_queue)
    for raw in moves:
        kind_index, consumer_index, amount = (int(x) for x in raw)
        kind = kinds[kind_index % len(kinds)]
        handle = handles[consumer_index % len(handles)]
        amount = 1 + (amount - 1) % MAX_AMOUNT
        is_open = handle in open_now
        if kind == "publish":
            publish(amount, amount)
        elif kind == "open" and not is_open:
            if out_of_order and ever_opened and not open_now and not crashed and amount % 2 == 0:
                flag = not flag  # every consumer has left: the next ones ask for the other value
            timeout = ACK_TIMEOUT_MS if opts.ack_timeout and amount % 3 == 0 else 0
            queue = (0 if zero_queue else 5) if amount % 5 == 0 else None
            open_(handle, _behaviour(amount), receiver_queue=queue, ack_timeout_ms=timeout)
        elif kind == "open_same_name" and not is_open:
            other = handles[(consumer_index + 1) % len(handles)]
            open_(handle, _behaviour(amount), name=other)
        elif kind == "join_one_outstanding" and not is_open and open_now:
            publish(1, amount)
            emit(WaitQuiet())
            open_(handle, _behaviour(amount))
        elif kind == "leave_alone":
            if not is_open:
                open_(handle, Behaviour("hold"))
            publish(amount, amount)
            for other in sorted(open_now):
                if other != handle:
                    emit(Close(consumer=other))
                    del open_now[other]
        elif kind == "resend" and resendable and form.deduplication:  # without deduplication: a duplicate
            first = max(1, resendable - amount + 1)
            emit(Resend(producer="p1", from_seq=first, to_seq=resendable, reconnect=True))
        elif kind == "gap" and form["dedup"] != "off":  # without deduplication the lower id is stored: allowed
            higher = published + amount + 1
            emit(Publish(count=1, keys=form.key_set(opts.keys), sequence_ids=(higher,)))
            emit(Publish(count=1, keys=form.key_set(opts.keys), sequence_ids=(published + 1,)))
            published = higher
            resendable = max(resendable, higher)
        elif kind == "batch_highest" and form.deduplication:
            ids = tuple(range(batch_next, batch_next + 1 + amount % 3))
            keys = form.key_set(opts.keys)
            emit(Publish(count=len(ids), keys=keys, producer="pb", sequence_ids=ids, highest_sequence_id=ids[-1]))
            batch_next = ids[-1] + 1
            if amount % 2 == 0:  # under an id at or below the pushed one: -1:-1 whole, the new id never stored
                again = (ids[-1], batch_next)
                emit(Publish(count=2, keys=keys, producer="pb", sequence_ids=again, highest_sequence_id=batch_next))
                batch_next += 1
        elif kind == "dedup_switch" and form.deduplication:
            emit(Deduplication(enabled=False))
            if amount % 2:  # stored whatever its ids: the broker judges nothing while it is off
                publish(amount, amount)
            emit(Deduplication(enabled=True))
        elif kind == "producer_cycle" and form.deduplication:
            emit(CloseProducer(producer="p1"))
            if amount % 2 == 0:
                emit(Sleep(ms=PURGE_SLEEP_MS))  # past the timeout plus one purge period: p1 must be forgotten
            elif amount % 4 == 3:  # past the timeout by less than a period: forgotten or not, as the purge's phase
                emit(Sleep(ms=PURGE_TIMEOUT_MINUTES * 60_000 + 2_000 * amount))  # says (the schedule is judged)
            emit(OpenProducer(producer="p1"))
        elif kind == "restart" and opts.restart and not form.non_persistent:
            emit(RestartBroker(kill=amount % 2 == 0))
        elif kind == "wait_quiet":
            emit(WaitQuiet())
            if opts.ack_timeout and amount % 2 == 0:
                emit(Sleep(ms=ACK_TIMEOUT_MS + 1_500))  # past the timeout: held messages come back
            elif opts.expiry and amount % 4 == 1:
                emit(Sleep(ms=1_500))
                emit(ExpireMessages(seconds=1))  # what was published before the sleep expires (a TTL of 1 s)
        elif not is_open:
            continue  # every other move needs an open consumer
        elif kind in ("hold", "ack", "nack"):
            emit(SetBehaviour(consumer=handle, behaviour=Behaviour(kind)))
        elif kind == "ack_held":
            emit(AckHeld(consumer=handle, count=amount if amount % 2 else None))
        elif kind == "nack_held":
            emit(NackHeld(consumer=handle, count=amount if amount % 2 else None))
        elif kind == "redeliver":
            emit(Redeliver(consumer=handle))
        elif kind == "close":
            emit(Close(consumer=handle))
            del open_now[handle]
        elif kind == "crash" and opts.crash:
            emit(Crash(consumer=handle))
            del open_now[handle]
            crashed = True
            if sticky:  # let the broker notice before the handle's ranges are asked for again (else: a conflict)
                emit(WaitQuiet())
        elif kind == "pause" and not open_now[handle]:
            emit(Pause(consumer=handle))
            open_now[handle] = True
        elif kind == "resume" and open_now[handle]:
            emit(Resume(consumer=handle))
            open_now[handle] = False
    # Epilogue: someone must be there to drain (in STICKY mode, every range), and nobody may stay paused.
    for handle in handles if sticky else ("c1",) * (not open_now):
        if handle not in open_now:
            open_(handle)
    for handle, paused in sorted(open_now.items()):
        if paused:
            emit(Resume(consumer=handle))
    if not any(isinstance(step, Publish) for step in steps):
        publish(MAX_AMOUNT, MAX_AMOUNT)
    if delays:
        emit(Sleep(ms=DELAY_MS + 500))  # the delayed messages come due before the drain, which waits only so long
    emit(WaitQuiet())
    return Scenario(
        name=name,
        steps=tuple(steps),
        description="A generated program (conformance.generated): random joins, leaves, holds, acks and nacks.",
        subscription=SubscriptionSettings(
            mode=str(form["mode"]), allow_out_of_order_delivery=bool(form["out_of_order"])
        ),
        settings=form.settings(opts.settings) if opts.dimensions else opts.settings,
        tags=("generated",),
        broker=form.broker() + purge,
    )


def program_from_seed(seed: int, *, length: int = 16, options: GeneratorOptions | None = None) -> Scenario:
    """The program ``random.Random(seed)`` draws: ``length`` moves (and, with ``options.dimensions``, a shape),
    what Hypothesis draws."""
    opts = options or GeneratorOptions()
    rng = random.Random(seed)
    kinds = opts.move_kinds()
    handles = MANY_CONSUMERS if opts.dimensions else CONSUMERS
    moves = [
        Move(rng.randrange(len(kinds)), rng.randrange(len(handles)), rng.randint(1, MAX_AMOUNT)) for _ in range(length)
    ]
    # each dimension keeps its plain default about half the time (as the Hypothesis strategy draws it): drawn
    # uniformly, the persistent, ordered, AUTO_SPLIT programs where draining is judged were one in eight
    shape = (
        [0 if rng.random() < 0.5 else rng.randrange(len(SHAPE_CHOICES[d])) for d in SHAPE_DIMENSIONS]
        if opts.dimensions
        else []
    )
    return program_from_moves(moves, name=f"program-{seed:02d}", options=opts, shape=shape)


#: Seeds of the programs stored in ``programs/`` (replayed against every target).
STORED_SEEDS: tuple[int, ...] = tuple(range(8))


def stored_programs() -> dict[str, Scenario]:
    """The fixed programs shipped in ``conformance/generated/programs/``, by name."""
    folder = resources.files("conformance.generated.programs")
    out: dict[str, Scenario] = {}
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        if entry.name.endswith(".toml"):
            scenario = loads_scenario(
                entry.read_text(encoding="utf-8"), "toml", source=f"generated program {entry.name}"
            )
            out[scenario.name] = scenario
    return out
