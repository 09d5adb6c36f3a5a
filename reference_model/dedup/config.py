"""Settings of broker-side deduplication, with Apache Pulsar's defaults.

Each field is a ``broker.conf`` key (or the broker default of a namespace/topic policy), converted to
milliseconds so the model never mixes units: the model's clock is nanoseconds and its settings are
milliseconds, exactly as :class:`reference_model.dedup.MessageDeduplication` consumes them.
"""

from __future__ import annotations

from dataclasses import dataclass

from reference_model.errors import InvalidArgument

__all__ = ["DEDUP_CURSOR_NAME", "DedupConfig"]

#: The managed-ledger cursor whose mark-delete position and properties hold a dedup snapshot
#: (``PersistentTopic.DEDUPLICATION_CURSOR_NAME``).
DEDUP_CURSOR_NAME = "pulsar.dedup"


@dataclass(frozen=True, slots=True)
class DedupConfig:
    """Broker settings that shape :class:`~reference_model.dedup.MessageDeduplication`.

    Defaults are Apache Pulsar's (``ServiceConfiguration``):

    ``entries_interval``
        ``brokerDeduplicationEntriesInterval`` (1000): a snapshot is taken every N persisted entries.
    ``max_producers``
        ``brokerDeduplicationMaxNumberOfProducers`` (10000): at most N producers are written into a snapshot.
    ``producer_inactivity_timeout_ms``
        ``brokerDeduplicationProducerInactivityTimeoutMinutes`` (360 min): a producer disconnected for longer
        is forgotten by the purge; the purge itself runs every third of this (``BrokerService``).
    ``snapshot_frequency_ms``
        ``brokerDeduplicationSnapshotFrequencyInSeconds`` (120 s): how often the broker runs the time-based
        snapshot check (0 disables the timer).
    ``snapshot_interval_ms``
        ``brokerDeduplicationSnapshotIntervalSeconds`` (120 s), the broker default of the namespace/topic policy
        ``deduplicationSnapshotInterval``: the time-based check snapshots only if this long passed since the last
        snapshot (0 disables time-based snapshots).
    ``broker_enabled``
        ``brokerDeduplicationEnabled`` (false): the last fallback of the effective flag
        (see :func:`~reference_model.dedup.effective_deduplication`).
    """

    entries_interval: int = 1000
    max_producers: int = 10000
    producer_inactivity_timeout_ms: int = 360 * 60_000
    snapshot_frequency_ms: int = 120_000
    snapshot_interval_ms: int = 120_000
    broker_enabled: bool = False

    def __post_init__(self) -> None:
        for name in (
            "entries_interval",
            "max_producers",
            "producer_inactivity_timeout_ms",
            "snapshot_frequency_ms",
            "snapshot_interval_ms",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidArgument(
                    f"Expected an int for DedupConfig({name}=...) but got {name}={value!r}"
                    f" (type={type(value).__name__})."
                )
            if value < 0:
                raise InvalidArgument(f"DedupConfig({name}={value}) must be >= 0, e.g. {name}=1000.")
        if not isinstance(self.broker_enabled, bool):
            raise InvalidArgument(
                f"Expected a bool for DedupConfig(broker_enabled=...) but got broker_enabled="
                f"{self.broker_enabled!r} (type={type(self.broker_enabled).__name__})."
            )

    @property
    def purge_check_interval_ms(self) -> int:
        """How often the broker runs the inactive-producer purge: a third of the inactivity timeout."""
        return self.producer_inactivity_timeout_ms // 3
