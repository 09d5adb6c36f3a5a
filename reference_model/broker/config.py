"""Settings of the model broker: Key_Shared dispatch, deduplication, and what the model adds (crash detection).

``BrokerConfig(key_shared=DispatcherSettings(...), dedup=DedupConfig(...), ...)``; or from ``broker.conf`` names
with :meth:`BrokerConfig.from_broker_conf` (``{"keySharedUnblockingIntervalMs": 0, "brokerDeduplicationEnabled":
True}``), so a scenario can carry settings under the names Pulsar users know.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from reference_model.dedup import DedupConfig
from reference_model.errors import InvalidArgument, did_you_mean
from reference_model.keyshared import BROKER_CONF_NAMES, DispatcherSettings
from reference_model.versions import PROPOSED_FIXES

__all__ = ["BrokerConfig"]

_SUBSCRIPTION_TYPES = ("Exclusive", "Shared", "Failover", "Key_Shared")
#: ``broker.conf``: the most entries a ledger holds; a consumed ledger is deleted whole (``trim_batch``)
_LEDGER_ENTRIES = "managedLedgerMaxEntriesPerLedger"

_DEDUP_CONF_NAMES: Mapping[str, str] = {
    "brokerDeduplicationEnabled": "broker_enabled",
    "brokerDeduplicationEntriesInterval": "entries_interval",
    "brokerDeduplicationMaxNumberOfProducers": "max_producers",
    "brokerDeduplicationProducerInactivityTimeoutMinutes": "producer_inactivity_timeout_ms",
    "brokerDeduplicationSnapshotFrequencyInSeconds": "snapshot_frequency_ms",
    "brokerDeduplicationSnapshotIntervalSeconds": "snapshot_interval_ms",
}
#: ``broker.conf`` units -> the model's milliseconds, for the settings that are not counts or flags
_DEDUP_CONF_UNITS_MS: Mapping[str, int] = {
    "brokerDeduplicationProducerInactivityTimeoutMinutes": 60_000,
    "brokerDeduplicationSnapshotFrequencyInSeconds": 1_000,
    "brokerDeduplicationSnapshotIntervalSeconds": 1_000,
}


@dataclass(frozen=True, slots=True)
class BrokerConfig:
    """Everything configurable about a :class:`~reference_model.broker.ModelBroker`.

    ``key_shared``
        Key_Shared dispatcher settings (look-ahead limits, unblocking interval, max unacked, selector).
    ``dedup``
        Deduplication settings; ``dedup.broker_enabled`` is ``brokerDeduplicationEnabled``.
    ``crash_detection_delay_ms``
        How long after a client crashes the broker notices (keep-alive: Pulsar's default
        ``keepAliveIntervalSeconds`` is 30 and a connection is dropped after a missed ping, so about 60 s).
        Until then the crashed consumer keeps its permits and pending messages.
    ``subscription_types_enabled``
        ``subscriptionTypesEnabled``: removing ``"Key_Shared"`` makes subscribing fail with NotAllowedError.
    ``trim_consumed_entries``
        Forget the entries every cursor has marked deleted (the subscriptions', and the deduplication
        snapshot's while deduplication is on), as Pulsar deletes consumed ledgers of a topic without retention;
        the model's memory is then bounded by what is outstanding, not by what was ever published (long soaks).
        Off by default: the whole log stays readable (tests and scenarios inspect it, a subscription created
        later at ``Earliest`` sees every entry). Refused by replicated clusters, whose replicators read the log
        from positions the broker does not know.
    ``trim_batch``
        The fewest consumed entries a trim forgets at once (0: the model's default, 4096, which bounds the cost
        of re-indexing in long soaks). ``managedLedgerMaxEntriesPerLedger`` = N turns trimming on with batches of
        N: Pulsar deletes a consumed ledger whole, and a ledger holds at most N entries (the model keeps its
        message ids in one ledger; only which entries it forgets, and when, follow the setting).
    ``proposed_fixes``
        References of fixes proposed for open Pulsar bugs (``reference_model.versions.PROPOSED_FIXES``, e.g.
        ``"apache/pulsar#10662"``) this broker applies although no release has them: what a generated program
        would do were the bug fixed (``conformance.generated.attribution``). Empty by default: every release
        runs as Pulsar does.
    """

    key_shared: DispatcherSettings = field(default_factory=DispatcherSettings)
    dedup: DedupConfig = field(default_factory=DedupConfig)
    crash_detection_delay_ms: int = 60_000
    subscription_types_enabled: tuple[str, ...] = _SUBSCRIPTION_TYPES
    trim_consumed_entries: bool = False
    trim_batch: int = 0
    proposed_fixes: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        for reference in self.proposed_fixes:
            if reference not in PROPOSED_FIXES:
                raise InvalidArgument(
                    f"Unknown proposed fix {reference!r}.{did_you_mean(str(reference), PROPOSED_FIXES)}"
                    f" Known: {', '.join(sorted(PROPOSED_FIXES))}."
                )
        if not isinstance(self.key_shared, DispatcherSettings):
            raise InvalidArgument(
                f"Expected DispatcherSettings for key_shared but got {self.key_shared!r}"
                f" (type={type(self.key_shared).__name__})."
            )
        if not isinstance(self.dedup, DedupConfig):
            raise InvalidArgument(
                f"Expected DedupConfig for dedup but got {self.dedup!r} (type={type(self.dedup).__name__})."
            )
        delay = self.crash_detection_delay_ms
        if isinstance(delay, bool) or not isinstance(delay, int) or delay < 0:
            raise InvalidArgument(f"crash_detection_delay_ms must be an int >= 0 but got {delay!r}.")
        if not isinstance(self.trim_consumed_entries, bool):
            raise InvalidArgument(
                f"trim_consumed_entries must be True or False but got {self.trim_consumed_entries!r}."
            )
        batch = self.trim_batch
        if isinstance(batch, bool) or not isinstance(batch, int) or batch < 0:
            raise InvalidArgument(f"trim_batch must be an int >= 0 but got {batch!r}.")
        for name in self.subscription_types_enabled:
            if name not in _SUBSCRIPTION_TYPES:
                raise InvalidArgument(
                    f"Unknown subscription type {name!r} in subscription_types_enabled."
                    f"{did_you_mean(str(name), _SUBSCRIPTION_TYPES)} Choices: {', '.join(_SUBSCRIPTION_TYPES)}."
                )

    @classmethod
    def from_broker_conf(cls, conf: Mapping[str, object]) -> BrokerConfig:
        """A config from ``broker.conf`` names (Key_Shared, dedup and ``subscriptionTypesEnabled`` keys)."""
        key_shared: dict[str, object] = {}
        dedup: dict[str, object] = {}
        other: dict[str, object] = {}
        known = [*BROKER_CONF_NAMES, *_DEDUP_CONF_NAMES, "subscriptionTypesEnabled", _LEDGER_ENTRIES]
        for name, value in conf.items():
            if name in BROKER_CONF_NAMES:
                key_shared[name] = value
            elif name in _DEDUP_CONF_NAMES:
                unit_ms = _DEDUP_CONF_UNITS_MS.get(name)
                if unit_ms is not None:
                    if isinstance(value, bool) or not isinstance(value, int):
                        raise InvalidArgument(
                            f"Expected a whole number for {name} but got {value!r} (type={type(value).__name__})."
                        )
                    value = value * unit_ms
                dedup[_DEDUP_CONF_NAMES[name]] = value
            elif name == "subscriptionTypesEnabled":
                types = value.split(",") if isinstance(value, str) else list(value)  # type: ignore[call-overload]
                other["subscription_types_enabled"] = tuple(str(t).strip() for t in types)
            elif name == _LEDGER_ENTRIES:
                if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                    raise InvalidArgument(f"Expected a whole number >= 1 for {name} but got {value!r}.")
                other["trim_consumed_entries"] = True
                other["trim_batch"] = value
            else:
                raise InvalidArgument(
                    f"Unknown broker setting {name!r}.{did_you_mean(name, known)} Known: {', '.join(sorted(known))}."
                )
        return cls(
            key_shared=DispatcherSettings.from_broker_conf(key_shared),
            dedup=replace(DedupConfig(), **dedup),  # type: ignore[arg-type]
            **other,  # type: ignore[arg-type]
        )

    def with_broker_conf(self, conf: Mapping[str, object]) -> BrokerConfig:
        """This config with the ``broker.conf`` names of ``conf`` applied on top (a scenario's ``[broker]``).

        Validated as :meth:`from_broker_conf` validates; the settings ``conf`` does not name keep this config's
        values (a target's own options), so a scenario changes only what it names.
        """
        named = BrokerConfig.from_broker_conf(conf)
        key_shared = {BROKER_CONF_NAMES[n]: None for n in conf if n in BROKER_CONF_NAMES}
        dedup = {_DEDUP_CONF_NAMES[n]: None for n in conf if n in _DEDUP_CONF_NAMES}
        return replace(
            self,
            key_shared=replace(self.key_shared, **{f: getattr(named.key_shared, f) for f in key_shared}),
            dedup=replace(self.dedup, **{f: getattr(named.dedup, f) for f in dedup}),
            subscription_types_enabled=named.subscription_types_enabled
            if "subscriptionTypesEnabled" in conf
            else self.subscription_types_enabled,
            trim_consumed_entries=True if _LEDGER_ENTRIES in conf else self.trim_consumed_entries,
            trim_batch=named.trim_batch if _LEDGER_ENTRIES in conf else self.trim_batch,
        )
