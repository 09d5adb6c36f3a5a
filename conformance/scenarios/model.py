"""A scenario as plain data: the subscription, the run settings and the steps of a workload.

A scenario says *what* the clients do, never *how* a target does it: the same value runs against the
embedded pulsar-lite broker, any broker by URL, Apache Pulsar in a container and the in-process model.
The driver (:mod:`pytest_keyshared.driver`) applies it; the trace it records is what the checkers judge.

Everything here is frozen and compares by value, so a scenario loaded from a file, written back and loaded
again is equal to the original (the plugin stores shrunk generated scenarios this way).  The file format is
specified in ``docs/scenarios.md``; :mod:`conformance.scenarios.loader` validates it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import ClassVar, Union

from reference_model.errors import InvalidArgument

__all__ = [
    "BATCHING_MODES",
    "BEHAVIOURS",
    "BROKER_SETTINGS",
    "FAILOVER_STEPS",
    "HASH_RANGE_MAX",
    "KEY_FIELDS",
    "KEY_ORDERS",
    "KEY_SHARED_MODES",
    "MIN_ACK_TIMEOUT_MS",
    "SELECTORS",
    "SEQUENCE_MODES",
    "TOPIC_KINDS",
    "AckHeld",
    "AckPlan",
    "Behaviour",
    "Close",
    "CloseProducer",
    "ClusterDown",
    "ClusterUp",
    "Compact",
    "Consume",
    "Crash",
    "Deduplication",
    "DeleteSubscription",
    "ExpireMessages",
    "FailOver",
    "InvalidScenario",
    "KeySet",
    "LinkDown",
    "LinkUp",
    "NackHeld",
    "Open",
    "OpenProducer",
    "Pause",
    "Publish",
    "Read",
    "Redeliver",
    "ReplicatedStatus",
    "ReplicatorFaults",
    "Resend",
    "RestartBroker",
    "Resume",
    "ResumeConnection",
    "Scenario",
    "SetBehaviour",
    "Settings",
    "Sleep",
    "Snapshot",
    "StallConnection",
    "Step",
    "StorageDown",
    "StorageUp",
    "SubscriptionSettings",
    "WaitDelivered",
    "WaitQuiet",
    "WaitReceived",
]

#: Largest sticky hash; sticky ranges are inclusive ``[start, end]`` pairs within ``[0, HASH_RANGE_MAX]``.
HASH_RANGE_MAX = 65535
KEY_SHARED_MODES: tuple[str, ...] = ("AUTO_SPLIT", "STICKY")
#: What a consumer does with each message it receives (see :class:`Behaviour`).
BEHAVIOURS: tuple[str, ...] = ("ack", "ack_after", "hold", "nack", "alternate")
#: the shortest client ack timeout (``ack_timeout_ms`` of ``open``): the C++ client behind ``pulsar-client``
#: refuses less ("should be greater than 10 seconds"); 0 switches it off
MIN_ACK_TIMEOUT_MS = 10_000
#: Which message field carries a publish step's key.  ``both`` sets the ordering key to the key and the
#: partition key to ``"pk-" + key`` (Pulsar routes by the ordering key); ``none`` sends keyless messages,
#: whose sticky key is Pulsar 4.0's ``producerName-sequenceId`` fallback.
KEY_FIELDS: tuple[str, ...] = ("partition_key", "ordering_key", "both", "none")
#: ``none``: one message per send; ``key_based``: Pulsar's KeyBasedBatchContainer (what Key_Shared producers
#: should use); ``default``: the default container, which routes a whole batch by its first message's key.
BATCHING_MODES: tuple[str, ...] = ("none", "key_based", "default")
#: ``cycle``: message i carries key i mod |keys|; ``shuffle``: the same multiset, shuffled with the run's seed.
KEY_ORDERS: tuple[str, ...] = ("cycle", "shuffle")
#: ``sequence`` of a ``publish`` step: the driver's own ids (``explicit``), or the client numbers each message from
#: the last sequence id the broker answered when the producer connected (``auto``)
SEQUENCE_MODES: tuple[str, ...] = ("explicit", "auto")
#: ``[broker]``: the ``broker.conf`` names a scenario may set for its run, and what each does.  The model target
#: builds the run's broker with them; a target that cannot apply one skips the scenario, naming it
#: (``docs/scenarios.md``, "Broker settings").
BROKER_SETTINGS: dict[str, str] = {
    "maxUnackedMessagesPerConsumer": "a consumer at this many unacked messages gets no more until half are acked",
    "maxUnackedMessagesPerSubscription": "the subscription stops dispatching at this many unacknowledged messages",
    "keySharedLookAheadMsgInReplayThresholdPerConsumer": "look-ahead limit per consumer (PIP-379; 0 disables)",
    "keySharedLookAheadMsgInReplayThresholdPerSubscription": "look-ahead limit of the subscription (0 disables)",
    "keySharedUnblockingIntervalMs": "delay between a hash being unblocked and the replay read that redelivers",
    "dispatcherMaxReadBatchSize": "entries per read",
    "delayedDeliveryTickTimeMillis": "a delayed message due within this many ms is delivered now (up to a tick early)",
    "brokerDeduplicationEnabled": "deduplication for every topic",
    "brokerDeduplicationEntriesInterval": "a deduplication snapshot every this many entries",
    "brokerDeduplicationSnapshotIntervalSeconds": "time-based deduplication snapshots (0 disables)",
    "brokerDeduplicationSnapshotFrequencyInSeconds": "how often the time-based snapshot check runs (0: never)",
    "brokerDeduplicationProducerInactivityTimeoutMinutes": "a producer gone this long is forgotten by deduplication",
    "managedLedgerMaxEntriesPerLedger": "entries per ledger: a ledger every cursor has consumed is deleted whole",
}
BrokerValue = Union[int, bool]  # noqa: UP007 - a runtime alias

#: ``[settings] selector``: the AUTO_SPLIT selector a scenario asks for (``""``: whatever the target has).
SELECTORS: tuple[str, ...] = ("consistent-hashing", "auto-split")
#: ``[settings] topic``: the kind of topic the run uses (``persistent://`` or ``non-persistent://``)
TOPIC_KINDS: tuple[str, ...] = ("persistent", "non-persistent")


class InvalidScenario(InvalidArgument):
    """A scenario file or value is not acceptable; the message names the place, the value and what would work."""


@dataclass(frozen=True, slots=True)
class SubscriptionSettings:
    """The one Key_Shared subscription a scenario's consumers join (each ``open`` may override the policy)."""

    name: str = "ks-sub"
    mode: str = "AUTO_SPLIT"  #: ``AUTO_SPLIT`` or ``STICKY``
    allow_out_of_order_delivery: bool = False


@dataclass(frozen=True, slots=True)
class Settings:
    """Run settings.  Times are milliseconds; every wait the driver makes is bounded by one of them."""

    receiver_queue: int = 1000  #: default ``receiver_queue_size`` of consumers
    nack_delay_ms: int = 200  #: ``negative_ack_redelivery_delay_ms`` (Pulsar's default, 60 s, is too slow for tests)
    deduplication: bool = False  #: ask the target to enable producer deduplication on the run's topic
    drain: bool = True  #: end with the drain phase (every open consumer receives and acks until quiet)
    drain_timeout_ms: int = 15_000  #: bound on the drain phase
    quiet_ms: int = 600  #: no receive for this long counts as quiet (``wait_quiet``; the drain once all is acked)
    drain_quiet_ms: int = 2_000  #: the drain gives up this long after the last receive while messages are missing
    step_timeout_ms: int = 10_000  #: bound on each step that waits (open, close, publish, wait_received)
    send_timeout_ms: int = 5_000  #: a send not confirmed within this is recorded as ``info``
    payload_bytes: int = 16  #: size of each message body (a uid property identifies the message)
    #: the AUTO_SPLIT selector the broker must use for this run: ``""`` (the target's own), ``consistent-hashing``
    #: or ``auto-split``; a target that cannot switch its selector skips the scenario, saying why
    selector: str = ""
    points: int = 0  #: consistent-hashing ring points per consumer for this run (0: the target's own)
    #: a failover scenario's clusters (two or more; the consumer starts in the first): empty for every other
    #: scenario.  The target must have the ``replication`` capability (``docs/scenarios.md``, "Failovers").
    clusters: tuple[str, ...] = ()
    #: ``(from, to, ms)``: the replication link ``from -> to`` delivers ``ms`` late (failover scenarios only)
    replication_delays: tuple[tuple[str, str, int], ...] = ()
    #: the kind of topic the run uses: ``persistent`` or ``non-persistent`` (no backlog, no redelivery: the
    #: checker allows loss there, ``docs/checker.md``); recorded in the trace header as ``topic_kind``
    topic: str = "persistent"
    #: the topic as a partitioned topic of this many partitions (0: not partitioned); the consumers subscribe to
    #: the partitioned name (every partition), the admin calls name it too.  A Key_Shared scenario needs the
    #: ``partitioned_topics`` capability, a failover one its sites' (``docs/scenarios.md``)
    partitions: int = 0
    #: the consumers' dead-letter policy: ``max_redeliver_count`` (0: none).  The dead-letter topic is the
    #: client's default, ``<run topic>-<subscription>-DLQ``; the driver reads it and records each message routed
    #: there as a ``dead_letter`` event (``docs/scenarios.md``, "Dead letters")
    dead_letter: int = 0
    #: producers the driver creates without a ``producer_name``, so the broker generates one (Pulsar's
    #: ``generateUniqueProducerName``: unique per broker); the trace names each by the name the broker gave it.
    #: Such a producer is created once per run: no ``close_producer``, no ``resend`` with ``reconnect``, one
    #: batching mode, no ``highest_sequence_id`` (a new incarnation would be a new producer to the broker)
    unnamed_producers: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Behaviour:
    """What a consumer does with each message it receives.

    ``ack``: acknowledge at once.  ``ack_after``: acknowledge ``delay_ms`` after receiving.  ``hold``: keep it
    unacknowledged (until an ``ack_held`` step, a behaviour change or the drain).  ``nack``: negatively
    acknowledge it while its redelivery count is below ``nack_times``, then acknowledge the redelivery.
    ``alternate``: of the messages received for the first time, acknowledge the 1st, 3rd, 5th ... and hold the
    others; acknowledge at once a message received again (Pulsar's ``KeySharedSubscriptionTest.receiveAndCheck``,
    which leaves every other message to the ack timeout).
    """

    kind: str = "ack"
    delay_ms: int = 0  #: ``ack_after`` only
    nack_times: int = 1  #: ``nack`` only

    def __post_init__(self) -> None:
        if self.kind not in BEHAVIOURS:
            raise InvalidScenario(f"Expected a behaviour in {', '.join(BEHAVIOURS)} but got {self.kind!r}.")
        if self.delay_ms < 0 or self.nack_times < 1:
            raise InvalidScenario(
                f"Behaviour {self.kind!r} needs delay_ms >= 0 and nack_times >= 1,"
                f" got delay_ms={self.delay_ms}, nack_times={self.nack_times}."
            )


@dataclass(frozen=True, slots=True)
class KeySet:
    """The keys of a publish step: ``count`` generated keys ``prefix00..``, or an explicit list ``names``."""

    count: int = 0
    prefix: str = "key-"
    names: tuple[str, ...] = ()

    def keys(self) -> tuple[str, ...]:
        if self.names:
            return self.names
        width = max(2, len(str(self.count - 1)))
        return tuple(f"{self.prefix}{i:0{width}d}" for i in range(self.count))


# --- steps ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Open:
    """Subscribe consumer ``consumer`` (a handle name; may be reopened after ``close``/``crash``)."""

    do: ClassVar[str] = "open"
    consumer: str
    behaviour: Behaviour = field(default_factory=Behaviour)
    name: str | None = None  #: consumer name sent to the broker; defaults to the handle name
    #: overrides ``settings.receiver_queue``; 0: a zero-queue consumer (each receive asks the broker for one message)
    receiver_queue: int | None = None
    mode: str | None = None  #: overrides the subscription's key_shared mode for this consumer
    allow_out_of_order_delivery: bool | None = None  #: overrides the subscription's flag for this consumer
    ranges: tuple[tuple[int, int], ...] = ()  #: sticky ranges (STICKY mode only)
    paused: bool = False  #: start paused: subscribed, but the application does not receive yet
    #: the client's ack timeout (``unacked_messages_timeout_ms``): 0 off, else >= :data:`MIN_ACK_TIMEOUT_MS`
    ack_timeout_ms: int = 0

    def broker_name(self) -> str:
        return self.name if self.name is not None else self.consumer


@dataclass(frozen=True, slots=True)
class Publish:
    """Publish ``count`` messages over a key set and wait until every send completed (bounded)."""

    do: ClassVar[str] = "publish"
    count: int
    keys: KeySet = field(default_factory=lambda: KeySet(count=10))
    producer: str = "p1"
    key_field: str = "partition_key"
    batching: str = "none"
    order: str = "cycle"
    #: ``auto``: send without a sequence id, so the client numbers the message from the broker's answer on
    #: connect (``last_sequence_id``); the trace still names it by the driver's id (``docs/scenarios.md``)
    sequence: str = "explicit"
    #: the driver's ids of the messages, in send order (``count`` of them), instead of the next ones: gapped or
    #: lower ids (``ClientDeduplicationTest.testProducerDeduplicationWithDiscontinuousSequenceId``); empty: the
    #: producer's next ids
    sequence_ids: tuple[int, ...] = ()

    #: failover scenarios: the cluster the messages are published in (None: the first one)
    cluster: str | None = None
    #: delayed delivery: each message is sent with ``deliver_after`` this many ms (0: delivered at once); the
    #: client turns it into the message's ``deliverAtTime`` (``docs/scenarios.md``, "Delayed delivery")
    deliver_after_ms: int = 0
    #: a batch's highest sequence id (``CommandSend.highest_sequence_id``): the step's ``count`` messages go in one
    #: send, a batch, through the harness's own protocol producer (``pulsar-client`` never sends this field);
    #: None: sent by ``pulsar-client`` (``docs/scenarios.md``, "A batch's highest sequence id")
    highest_sequence_id: int | None = None
    #: with ``highest_sequence_id``: the send's ``sequence_id`` (None: the step's first id); Java's key-based batches
    #: go under their highest id (``ClientDeduplicationTest.testKeyBasedBatchingOrder``)
    send_sequence_id: int | None = None
    #: with ``batching = "default"``: the driver waits this many ms between one send and the next (the sends of the
    #: step still end with a flush), so the client's batch timer, not only its size limits, closes batches
    #: (``batchingMaxPublishDelay``; judged by ``batch_flushed_early``, ``docs/scenarios.md``); 0: back to back
    spacing_ms: int = 0

    def message_keys(self, rng: random.Random) -> list[str]:
        """The key of each message, in send order (``rng`` is used only for ``order = "shuffle"``)."""
        keys = self.keys.keys()
        out = [keys[i % len(keys)] for i in range(self.count)]
        if self.order == "shuffle":
            rng.shuffle(out)
        return out


@dataclass(frozen=True, slots=True)
class Resend:
    """Send again the messages ``from_seq..to_seq`` (inclusive) of ``producer``, with the same keys and uids.

    With ``reconnect`` the producer is first closed and created again under the same name, as an
    application does after a failure: the retry deduplication must absorb (``dedup-retry``).
    """

    do: ClassVar[str] = "resend"
    producer: str
    from_seq: int
    to_seq: int
    reconnect: bool = True


@dataclass(frozen=True, slots=True)
class SetBehaviour:
    do: ClassVar[str] = "set_behaviour"
    consumer: str
    behaviour: Behaviour


@dataclass(frozen=True, slots=True)
class AckHeld:
    """Acknowledge the messages ``consumer`` holds (the oldest ``count`` of them, or all)."""

    do: ClassVar[str] = "ack_held"
    consumer: str
    count: int | None = None


@dataclass(frozen=True, slots=True)
class NackHeld:
    """Negatively acknowledge the messages ``consumer`` holds (the oldest ``count`` of them, or all)."""

    do: ClassVar[str] = "nack_held"
    consumer: str
    count: int | None = None


@dataclass(frozen=True, slots=True)
class Redeliver:
    """``redeliver_unacknowledged_messages()`` on ``consumer``: its held messages are given up.

    The application first drops what its client prefetched (as the Java client clears its queue), unless
    ``keep_prefetched``: then the queue stays, as the C++ client behind ``pulsar-client`` keeps it, and so does the
    consumer's lack of permits when the queue was full (apache/pulsar#26236's state: a replayed position for a
    consumer without permits).  A kept message reaches the application later although the broker took it back.
    """

    do: ClassVar[str] = "redeliver"
    consumer: str
    keep_prefetched: bool = False


@dataclass(frozen=True, slots=True)
class Close:
    do: ClassVar[str] = "close"
    consumer: str


@dataclass(frozen=True, slots=True)
class Crash:
    """Cut ``consumer``'s connection without a close (the client process dies)."""

    do: ClassVar[str] = "crash"
    consumer: str


@dataclass(frozen=True, slots=True)
class Pause:
    """The application stops receiving on ``consumer`` (its receiver queue fills; the broker runs out of permits)."""

    do: ClassVar[str] = "pause"
    consumer: str


@dataclass(frozen=True, slots=True)
class Resume:
    do: ClassVar[str] = "resume"
    consumer: str


@dataclass(frozen=True, slots=True)
class StallConnection:
    """``consumer``'s client stops reading its socket (``KeySharedSlowConsumerTest``'s auto-read off): what the
    broker sends backs up (TCP back-pressure) while the consumer keeps its permits; nothing reaches it until
    ``resume_connection``. On a real broker the consumer's client runs behind a proxy that stops forwarding the
    broker's bytes (``docs/targets.md``)."""

    do: ClassVar[str] = "stall_connection"
    consumer: str


@dataclass(frozen=True, slots=True)
class ResumeConnection:
    """``consumer``'s client reads its socket again: what backed up arrives, in order."""

    do: ClassVar[str] = "resume_connection"
    consumer: str


@dataclass(frozen=True, slots=True)
class WaitQuiet:
    """Wait until no consumer received anything for ``quiet_ms``, at most ``timeout_ms``."""

    do: ClassVar[str] = "wait_quiet"
    quiet_ms: int | None = None  #: defaults to ``settings.quiet_ms``
    timeout_ms: int | None = None  #: defaults to ``settings.step_timeout_ms``


@dataclass(frozen=True, slots=True)
class WaitReceived:
    """Wait until ``consumer`` (or all consumers together) received at least ``count`` messages since the run began."""

    do: ClassVar[str] = "wait_received"
    count: int
    consumer: str | None = None
    timeout_ms: int | None = None


@dataclass(frozen=True, slots=True)
class WaitDelivered:
    """Wait until nothing the broker owes is left undelivered: every message published ok is acknowledged, or held
    unacknowledged by a consumer that is still open, at most ``timeout_ms``.

    The bounded "expect progress within T" end of a case: a quiet wait followed by the drain hides a dispatcher
    that parked (the drain's acknowledgements and flow permits restart it), this does not.  A message released by
    its holder (a nack, the ack timeout, a ``redeliver``, a close or crash) is owed again until someone receives it.
    A paused consumer receives nothing, so a case waits for this only once the consumers that own keys receive.
    """

    do: ClassVar[str] = "wait_delivered"
    timeout_ms: int | None = None  #: defaults to ``settings.step_timeout_ms``


@dataclass(frozen=True, slots=True)
class Sleep:
    do: ClassVar[str] = "sleep"
    ms: int


@dataclass(frozen=True, slots=True)
class ExpireMessages:
    """Message expiry now (TTL): the subscription's messages published more than ``seconds`` ago and not yet
    acknowledged expire, as Pulsar's TTL check expires them (the admin API's ``expireMessages``;
    ``docs/scenarios.md``, "Message expiry")."""

    do: ClassVar[str] = "expire_messages"
    seconds: int


@dataclass(frozen=True, slots=True)
class Deduplication:
    """Switch producer deduplication off or on for the run's topic while it runs (the topic policy: the model's,
    or a broker's admin API).  Off, the broker forgets every producer's sequence ids; on again, it starts afresh
    at the end of the topic (``docs/scenarios.md``, "Deduplication switched at run time")."""

    do: ClassVar[str] = "deduplication"
    enabled: bool


@dataclass(frozen=True, slots=True)
class OpenProducer:
    """Create producer ``producer`` now, without sending (recorded as its ``producer_open``); a later ``publish``
    from it uses this one."""

    do: ClassVar[str] = "open_producer"
    producer: str


@dataclass(frozen=True, slots=True)
class CloseProducer:
    """Close producer ``producer``; a later ``publish`` or ``open_producer`` creates it again under the same name."""

    do: ClassVar[str] = "close_producer"
    producer: str


@dataclass(frozen=True, slots=True)
class RestartBroker:
    """Stop the broker and start it again on the same storage; clients reconnect by themselves."""

    do: ClassVar[str] = "restart_broker"
    kill: bool = False  #: SIGKILL instead of a clean stop where the target distinguishes them


@dataclass(frozen=True, slots=True)
class StorageDown:
    """The broker's storage (BookKeeper) stops taking writes until ``storage_up``: each send stays in flight and
    fails ``fail_after_ms`` after the first one in flight (``docs/scenarios.md``, "Storage failures")."""

    do: ClassVar[str] = "storage_down"
    fail_after_ms: int = 200


@dataclass(frozen=True, slots=True)
class StorageUp:
    """The storage takes writes again; the writes still in flight complete."""

    do: ClassVar[str] = "storage_up"


@dataclass(frozen=True, slots=True)
class AckPlan:
    """Which messages of a failover run the consumer acknowledges, by message number ``n`` (0, 1, ... in
    publish order over the whole run): ``n % every == offset`` and, with ``below``, ``n < below``; ``invert``
    acknowledges exactly the others.  ``AckPlan()`` acknowledges everything, ``AckPlan(invert=True)`` nothing.
    """

    every: int = 1
    offset: int = 0
    below: int | None = None
    invert: bool = False

    def __post_init__(self) -> None:
        if self.every < 1 or not 0 <= self.offset < self.every or (self.below is not None and self.below < 0):
            raise InvalidScenario(
                f"An ack plan needs every >= 1, 0 <= offset < every and below >= 0, got every={self.every},"
                f" offset={self.offset}, below={self.below}."
            )

    def acks(self, number: int) -> bool:
        picked = number % self.every == self.offset and (self.below is None or number < self.below)
        return picked != self.invert


# --- failover steps (scenarios with [settings] clusters) ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class Consume:
    """Failover scenarios: the consumer receives what has arrived (each receive bounded by the target), then
    acknowledges every message it holds (received now or earlier) that ``ack`` picks, and holds the rest."""

    do: ClassVar[str] = "consume"
    ack: AckPlan = field(default_factory=AckPlan)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Failover scenarios: let replication settle (bounded: idle, two snapshot periods, idle), then record each
    cluster's ``snapshot`` of the subscription (its backlog there, and ``snapshot_periods`` when it settled), as
    the harness reads it.  After a consume that acknowledged everything published so far, it is a point the
    replicated cursor must pass (``redelivered_after_failover``)."""

    do: ClassVar[str] = "snapshot"


@dataclass(frozen=True, slots=True)
class ClusterDown:
    """Failover scenarios: cut ``cluster`` off from the others (its replication links stop)."""

    do: ClassVar[str] = "cluster_down"
    cluster: str


@dataclass(frozen=True, slots=True)
class ClusterUp:
    """Failover scenarios: bring ``cluster`` back (replication catches up)."""

    do: ClassVar[str] = "cluster_up"
    cluster: str


@dataclass(frozen=True, slots=True)
class LinkDown:
    """Failover scenarios: disconnect the replicator of one direction only, ``cluster`` -> ``remote``
    (``testReplicatedSubscriptionWhenReplicatorProducerIsClosed``)."""

    do: ClassVar[str] = "link_down"
    cluster: str
    remote: str


@dataclass(frozen=True, slots=True)
class LinkUp:
    """Failover scenarios: reconnect the replicator ``cluster`` -> ``remote`` (it catches up)."""

    do: ClassVar[str] = "link_up"
    cluster: str
    remote: str


@dataclass(frozen=True, slots=True)
class Read:
    """Failover scenarios: let replication settle, then read ``cluster``'s copy of the topic from the earliest
    message with a new reader while it says more is available (``hasMessageAvailable``;
    ``ReplicatedSubscriptionTest.testReplicatedSubscriptionAcrossTwoRegionsGetLastMessage``): it must read every
    message published before, once each, and never a marker."""

    do: ClassVar[str] = "read"
    cluster: str
    #: a ``readCompacted`` reader: after a ``compact`` step there, only the latest value of each key up to the
    #: compaction horizon, then everything after it (``testReplicatedSubscriptionWithCompaction``)
    compacted: bool = False


@dataclass(frozen=True, slots=True)
class Compact:
    """Failover scenarios: compact ``cluster``'s copy of the topic (admin ``triggerCompaction``, waited for); a
    compacted ``read`` there then gets the latest value of each key up to this point and never a marker."""

    do: ClassVar[str] = "compact"
    cluster: str


@dataclass(frozen=True, slots=True)
class ReplicatorFaults:
    """Failover scenarios: faults of the replicator ``cluster`` -> ``remote``'s producer
    (``OneWayReplicatorDeduplicationTest``): ``lose_receipts`` (what it sends is stored but never confirmed, so it
    is sent again when the link next drops) and ``repeat_window`` N (every N-th send also repeats the previous N;
    0: off).  A remote with deduplication must store each message once."""

    do: ClassVar[str] = "replicator_faults"
    cluster: str
    remote: str
    lose_receipts: bool = False
    repeat_window: int = 0


@dataclass(frozen=True, slots=True)
class DeleteSubscription:
    """Failover scenarios: delete the subscription on ``cluster`` (not where the consumer is connected); a later
    cursor update must create it again (``testReplicatedSubscriptionWhenReplicatorProducerIsClosed``)."""

    do: ClassVar[str] = "delete_subscription"
    cluster: str


@dataclass(frozen=True, slots=True)
class ReplicatedStatus:
    """Failover scenarios: switch the subscription's replicated status on ``cluster`` off or on (the admin API's
    ``replicatedSubscriptionStatus``; ``ReplicatedSubscriptionTest.testReplicatedSubscriptionRestApi1``).  Off,
    the cluster neither caches snapshots for it nor writes its cursor updates (an update from another cluster that
    reaches it is still applied, as ``receiveSubscriptionUpdated`` does)."""

    do: ClassVar[str] = "replicated_status"
    cluster: str
    enabled: bool


@dataclass(frozen=True, slots=True)
class FailOver:
    """Failover scenarios: the application moves its consumer to cluster ``to``: it closes it, replication
    settles, each cluster's snapshot is recorded, and the consumer drains ``to`` (the last step)."""

    do: ClassVar[str] = "failover"
    to: str


Step = Union[  # noqa: UP007 - a runtime alias, also used with isinstance()
    Open,
    Publish,
    Resend,
    SetBehaviour,
    AckHeld,
    NackHeld,
    Redeliver,
    Close,
    Crash,
    Pause,
    Resume,
    StallConnection,
    ResumeConnection,
    WaitQuiet,
    WaitReceived,
    WaitDelivered,
    Sleep,
    ExpireMessages,
    Deduplication,
    OpenProducer,
    CloseProducer,
    RestartBroker,
    StorageDown,
    StorageUp,
    Consume,
    Snapshot,
    ClusterDown,
    ClusterUp,
    ReplicatedStatus,
    LinkDown,
    LinkUp,
    ReplicatorFaults,
    Read,
    Compact,
    DeleteSubscription,
    FailOver,
]

#: Steps a failover scenario may use (the failover workload: one consumer, ``c1``, that moves clusters).
FAILOVER_STEPS: tuple[type, ...] = (
    Publish,
    Consume,
    Sleep,
    Snapshot,
    ClusterDown,
    ClusterUp,
    ReplicatedStatus,
    LinkDown,
    LinkUp,
    ReplicatorFaults,
    Read,
    Compact,
    DeleteSubscription,
    FailOver,
)

#: Capability a target must have for a step (names of :class:`pytest_keyshared.targets.Capabilities`).
_STEP_CAPABILITY: dict[type, str] = {
    Crash: "crash_consumer",
    RestartBroker: "broker_restart",
    StorageDown: "storage_failure",
    StorageUp: "storage_failure",
    ExpireMessages: "message_expiry",
    Deduplication: "dedup_switch",
}


@dataclass(frozen=True, slots=True)
class Scenario:
    """A named workload: one subscription, settings, and steps applied in order."""

    name: str
    steps: tuple[Step, ...]
    description: str = ""
    subscription: SubscriptionSettings = field(default_factory=SubscriptionSettings)
    settings: Settings = field(default_factory=Settings)
    tags: tuple[str, ...] = ()
    #: ``[broker]``: ``(broker.conf name, value)`` pairs, sorted by name, for the run's broker (see
    #: :data:`BROKER_SETTINGS`); empty: the target's own settings
    broker: tuple[tuple[str, BrokerValue], ...] = ()

    def __post_init__(self) -> None:
        # one order, so a scenario built in code equals the same scenario written and loaded again
        object.__setattr__(self, "broker", tuple(sorted(dict(self.broker).items())))

    def broker_conf(self) -> dict[str, BrokerValue]:
        """The ``[broker]`` section as a mapping (``{"maxUnackedMessagesPerConsumer": 4}``)."""
        return dict(self.broker)

    def required_capabilities(self) -> dict[str, str]:
        """``{capability: why}`` for everything a target must support to run this scenario."""
        needs: dict[str, str] = {}
        if self.settings.clusters:
            needs["replication"] = f"[settings] clusters = {list(self.settings.clusters)}"
        elif self.settings.partitions:  # a failover scenario's partitions are its sites' (failover_run.py)
            needs["partitioned_topics"] = f"[settings] partitions = {self.settings.partitions}"
        for index, step in enumerate(self.steps, start=1):
            capability = _STEP_CAPABILITY.get(type(step))
            if capability is not None:
                needs.setdefault(capability, f"step {index} ({step.do})")
            elif isinstance(step, Publish) and step.deliver_after_ms:
                needs.setdefault("delayed_delivery", f"step {index} (publish with deliver_after_ms)")
            if isinstance(step, Publish) and step.highest_sequence_id is not None:
                needs.setdefault("raw_send", f"step {index} (publish with highest_sequence_id)")
        return needs

    def raw_producers(self) -> frozenset[str]:
        """Producers that send some batch with its highest sequence id: the driver sends all of theirs through its
        own protocol producer (one producer per name on the broker)."""
        return frozenset(
            step.producer for step in self.steps if isinstance(step, Publish) and step.highest_sequence_id is not None
        )

    def uses_delayed_delivery(self) -> bool:
        """Whether some ``publish`` step sends delayed messages (the trace header then says so)."""
        return any(isinstance(step, Publish) and step.deliver_after_ms for step in self.steps)

    def is_failover(self) -> bool:
        """A failover scenario (``[settings] clusters``): the replication workload runs it, not the Key_Shared
        run loop (``docs/scenarios.md``, "Failovers")."""
        return bool(self.settings.clusters)

    def consumers(self) -> tuple[str, ...]:
        """Consumer handle names in the order they are first opened."""
        seen: dict[str, None] = {}
        for step in self.steps:
            if isinstance(step, Open):
                seen.setdefault(step.consumer, None)
        return tuple(seen)

    def crashed_consumers(self) -> frozenset[str]:
        """Handles that some step crashes (the driver runs them where a crash can be injected)."""
        return frozenset(step.consumer for step in self.steps if isinstance(step, Crash))

    def stalled_consumers(self) -> frozenset[str]:
        """Handles whose connection some step stalls (on a real broker the driver routes their client through a
        proxy of its own)."""
        return frozenset(step.consumer for step in self.steps if isinstance(step, StallConnection))

    def uses_batching(self) -> bool:
        return any(isinstance(s, Publish) and s.batching != "none" for s in self.steps)
