"""Broker settings that shape Key_Shared dispatch, with Apache Pulsar 4.0's defaults and ``broker.conf`` names.

Each field is one ``broker.conf`` key (``ServiceConfiguration``); :data:`BROKER_CONF_NAMES` maps the Pulsar
name to the field, so a scenario can carry the settings under the names users know.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

from reference_model.errors import InvalidArgument, did_you_mean

__all__ = ["BROKER_CONF_NAMES", "DispatcherSettings", "effective_lookahead_limit"]


@dataclass(frozen=True, slots=True)
class DispatcherSettings:
    """Key_Shared dispatcher settings (values are Pulsar 4.0.x defaults).

    ``lookahead_per_consumer`` / ``lookahead_per_subscription``
        ``keySharedLookAheadMsgInReplayThresholdPerConsumer`` (2000) / ``...PerSubscription`` (20000): how many
        entries the replay queue may hold before normal reads stop (PIP-379 only; 0 disables a term).
    ``unblocking_interval_ms``
        ``keySharedUnblockingIntervalMs`` (10): delay between "a hash was unblocked" and the re-read.
    ``max_read_batch_size``
        ``dispatcherMaxReadBatchSize`` (100): entries per read.
    ``max_unacked_per_consumer`` / ``max_unacked_per_subscription``
        ``maxUnackedMessagesPerConsumer`` (50000) / ``maxUnackedMessagesPerSubscription`` (200000); 0 disables.
        A consumer at its limit gets no more messages until it is down to half of it.
    ``use_consistent_hashing`` / ``consistent_hashing_points``
        ``subscriptionKeySharedUseConsistentHashing`` (true) / ``...ConsistentHashingReplicaPoints`` (100):
        the AUTO_SPLIT selector.
    ``delayed_delivery_tick_ms``
        ``delayedDeliveryTickTimeMillis`` (1000): with ``isDelayedDeliveryDeliverAtTimeStrict=false`` (the
        default) a delayed message whose delivery time is within one tick from now is delivered now
        (``InMemoryDelayedDeliveryTracker.getCutoffTime``): up to a tick early.
    """

    lookahead_per_consumer: int = 2000
    lookahead_per_subscription: int = 20000
    unblocking_interval_ms: int = 10
    max_read_batch_size: int = 100
    max_unacked_per_consumer: int = 50000
    max_unacked_per_subscription: int = 200000
    use_consistent_hashing: bool = True
    consistent_hashing_points: int = 100
    delayed_delivery_tick_ms: int = 1000

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.type in ("bool", bool):
                if not isinstance(value, bool):
                    raise InvalidArgument(
                        f"Expected a bool for {f.name} but got {value!r} (type={type(value).__name__})."
                    )
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidArgument(f"Expected an int for {f.name} but got {value!r} (type={type(value).__name__}).")
            if value < 0:
                raise InvalidArgument(f"{f.name} must be >= 0 (0 disables the limit) but got {value}.")
        if self.max_read_batch_size < 1:
            raise InvalidArgument(f"max_read_batch_size must be >= 1 but got {self.max_read_batch_size}.")
        if self.consistent_hashing_points < 1:
            raise InvalidArgument(f"consistent_hashing_points must be >= 1 but got {self.consistent_hashing_points}.")

    @classmethod
    def from_broker_conf(cls, conf: Mapping[str, object], base: DispatcherSettings | None = None) -> DispatcherSettings:
        """Settings from ``broker.conf`` names, e.g. ``{"keySharedUnblockingIntervalMs": 0}``."""
        changes: dict[str, object] = {}
        for name, value in conf.items():
            field_name = BROKER_CONF_NAMES.get(name)
            if field_name is None:
                raise InvalidArgument(
                    f"Unknown Key_Shared broker setting {name!r}.{did_you_mean(name, BROKER_CONF_NAMES)}"
                    f" Known: {', '.join(sorted(BROKER_CONF_NAMES))}."
                )
            changes[field_name] = value
        return replace(base or cls(), **changes)  # type: ignore[arg-type]


#: ``broker.conf`` key -> :class:`DispatcherSettings` field.
BROKER_CONF_NAMES: Mapping[str, str] = {
    "keySharedLookAheadMsgInReplayThresholdPerConsumer": "lookahead_per_consumer",
    "keySharedLookAheadMsgInReplayThresholdPerSubscription": "lookahead_per_subscription",
    "keySharedUnblockingIntervalMs": "unblocking_interval_ms",
    "dispatcherMaxReadBatchSize": "max_read_batch_size",
    "maxUnackedMessagesPerConsumer": "max_unacked_per_consumer",
    "maxUnackedMessagesPerSubscription": "max_unacked_per_subscription",
    "subscriptionKeySharedUseConsistentHashing": "use_consistent_hashing",
    "subscriptionKeySharedConsistentHashingReplicaPoints": "consistent_hashing_points",
    "delayedDeliveryTickTimeMillis": "delayed_delivery_tick_ms",
}

_INT_MAX = 2**31 - 1


def effective_lookahead_limit(settings: DispatcherSettings, consumer_count: int) -> int:
    """``PersistentStickyKeyDispatcherMultipleConsumers.getEffectiveLookAheadLimit``.

    Per-consumer limit times consumers, capped by the per-subscription limit; a disabled term falls back to the
    other; both disabled falls back to the max-unacked limits (``Integer.MAX_VALUE`` when those are off too).
    """
    per_consumer = settings.lookahead_per_consumer
    per_subscription = settings.lookahead_per_subscription
    if per_consumer <= 0:
        limit = per_subscription
    else:
        limit = per_consumer * consumer_count
        if 0 < per_subscription < limit:
            limit = per_subscription
    if limit <= 0:
        max_sub = settings.max_unacked_per_subscription or _INT_MAX
        max_by_consumers = consumer_count * settings.max_unacked_per_consumer or _INT_MAX
        limit = min(max_sub, max_by_consumers)
    return limit
