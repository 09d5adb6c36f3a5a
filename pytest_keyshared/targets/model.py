"""The in-process reference model as a target: ``model``, ``model:classic``, ``model:pulsar-3.3``, ...

Each run gets a fresh :class:`~reference_model.broker.ModelBroker` seeded with the run's seed, driven on its
simulated clock without threads (:class:`~pytest_keyshared.driver.workers.SteppedScheduler`), so the same
scenario and seed give the same trace byte for byte.

A crash here is what the driver's crash is on a real broker: the client process dies and the kernel resets
its connection, so the broker learns of it at once (``crash_detection_delay_ms = 0``).  The model's own
default (60 s, a keep-alive timeout) describes a silent network loss instead; pass the option to get it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from pytest_keyshared.targets.base import Capabilities, Claims, Target, TargetError, check_options
from reference_model.errors import InvalidArgument
from reference_model.versions import DEFAULT_VERSION, check_released

__all__ = ["ModelTarget", "parse_model_spec"]

IMPLEMENTATIONS = ("pip379", "classic")
_OPTIONS: dict[str, type | tuple[type, ...]] = {
    "broker_conf": dict,  #: broker.conf names, e.g. {"keySharedUnblockingIntervalMs": 0}
    "crash_detection_delay_ms": int,
    "pulsar_version": str,
    "implementation": str,
    #: fixes proposed for open Pulsar bugs to apply (reference_model.versions.PROPOSED_FIXES), for attribution
    "proposed_fixes": (list, tuple),
    #: gates (reference_model.versions.GATES, by name) to run this release with as if backported, for attribution
    "backports": (list, tuple),
}


def parse_model_spec(spec: str) -> tuple[str, str | None]:
    """``model[:VERSION][:IMPLEMENTATION]`` (either order) -> ``(version, implementation or None)``."""
    kind, _, rest = spec.partition(":")
    if kind != "model":
        raise InvalidArgument(f"Expected a model target like 'model' or 'model:classic' but got {spec!r}.")
    version: str | None = None
    implementation: str | None = None
    for part in [p for p in rest.split(":") if p] if rest else []:
        if part in IMPLEMENTATIONS:
            if implementation is not None:
                raise InvalidArgument(
                    f"Model target {spec!r} names two implementations; give one of {IMPLEMENTATIONS}."
                )
            implementation = part
        else:
            if version is not None:
                raise InvalidArgument(f"Model target {spec!r} names two versions ({version!r}, {part!r}).")
            check_released(part)  # one line: unknown line, unreleased patch or older than 2.8.0
            version = part
    return (version or str(DEFAULT_VERSION)), implementation


class ModelTarget(Target):
    """The reference model; nothing to start, a fresh broker per run."""

    kind: ClassVar[str] = "model"

    def __init__(self, name: str, artifacts_dir: Path, options: Mapping[str, Any] | None = None) -> None:
        super().__init__(name, artifacts_dir)
        opts = check_options(options, _OPTIONS, name)
        #: the options that are not the release (``at_release`` gives them to a sibling target)
        self._options = {k: v for k, v in opts.items() if k not in ("pulsar_version", "implementation")}
        self._broker_conf: dict[str, Any] = {}  #: a scenario's ``[broker]`` settings this run applies (header)
        version, implementation = parse_model_spec(name)
        version = opts.get("pulsar_version", version)
        implementation = opts.get("implementation", implementation)
        from reference_model.broker import BrokerConfig
        from reference_model.keyshared.factory import check_implementation

        self.version = check_released(version)
        if opts.get("backports"):
            from reference_model.versions import with_backports

            self.version = with_backports(self.version, [str(b) for b in opts["backports"]])
        self.implementation = check_implementation(implementation, self.version)
        config = BrokerConfig.from_broker_conf(opts.get("broker_conf", {}))
        delay = opts.get("crash_detection_delay_ms", 0)
        if delay < 0:
            raise InvalidArgument(f"Option crash_detection_delay_ms={delay}: expected an int >= 0.")
        proposed = opts.get("proposed_fixes", ())
        self.config = replace(
            config, crash_detection_delay_ms=delay, proposed_fixes=frozenset(str(p) for p in proposed)
        )
        uses_ring = self.config.key_shared.use_consistent_hashing
        self.claims = Claims(
            pulsar_version=str(self.version),
            implementation=self.implementation,
            selector="consistent-hashing" if uses_ring else "auto-split",
            points=self.config.key_shared.consistent_hashing_points,
            deduplication=bool(self.config.dedup.broker_enabled),
        )
        self.capabilities = Capabilities(
            admin_api=True,
            dedup_switch=True,
            replication=True,
            crash_consumer=True,
            broker_restart=True,
            storage_failure=True,
            delayed_delivery=True,
            message_expiry=True,
            raw_send=True,
            partitioned_topics=True,
        )

    @property
    def deterministic(self) -> bool:
        return True

    def with_selector(self, selector: str, points: int) -> ModelTarget:
        """A copy whose brokers use ``selector`` (``consistent-hashing`` or ``auto-split``) with ``points``."""
        key_shared = self.config.key_shared
        use_ring = key_shared.use_consistent_hashing if not selector else selector == "consistent-hashing"
        ring_points = points or key_shared.consistent_hashing_points
        if use_ring == key_shared.use_consistent_hashing and ring_points == key_shared.consistent_hashing_points:
            return self
        clone = copy.copy(self)
        clone.config = replace(
            self.config,
            key_shared=replace(key_shared, use_consistent_hashing=use_ring, consistent_hashing_points=ring_points),
        )
        clone.claims = replace(
            self.claims, selector="consistent-hashing" if use_ring else "auto-split", points=ring_points
        )
        return clone

    def at_release(self, spec: str) -> ModelTarget:
        """The model target ``spec`` (``model:3.0``, ``model:4.0:classic``) with this target's other options: a
        generated program that fails here is rerun at later releases to name the known bug that explains it
        (:mod:`conformance.generated.attribution`)."""
        return ModelTarget(spec, self.artifacts_dir, self._options)

    def with_broker_conf(self, conf: Mapping[str, Any]) -> ModelTarget:
        """A copy whose brokers apply ``conf`` (a scenario's ``[broker]``, ``broker.conf`` names) on top of
        this target's own settings; the claims follow (selector, points, deduplication)."""
        if not conf:
            return self
        clone = copy.copy(self)
        clone.config = self.config.with_broker_conf(conf)
        clone._broker_conf = {**self._broker_conf, **conf}
        key_shared = clone.config.key_shared
        clone.claims = replace(
            self.claims,
            selector="consistent-hashing" if key_shared.use_consistent_hashing else "auto-split",
            points=key_shared.consistent_hashing_points,
            deduplication=bool(clone.config.dedup.broker_enabled),
        )
        return clone

    def new_broker(self, seed: int) -> Any:
        from reference_model.broker import ModelBroker

        return ModelBroker(
            pulsar_version=self.version, implementation=self.implementation, config=self.config, seed=seed
        )

    def header_extra(self) -> dict[str, Any]:
        """The implementation, and the scenario's ``[broker]`` settings the run's broker applied (if any)."""
        extra = super().header_extra()
        if self._broker_conf:
            extra["broker_conf"] = dict(sorted(self._broker_conf.items()))
        return extra

    def describe(self) -> str:
        return f"reference model (Pulsar {self.version}, {self.implementation})"

    def open_session(self, topic: str, run_dir: Path, nonce: str, *, seed: int) -> Any:
        """A run stepped on the model's simulated clock (a fresh broker per run)."""
        from pytest_keyshared.driver.model_session import ModelSession

        return ModelSession(self, topic, run_dir, nonce, seed=seed)

    def replication_sites(
        self,
        *,
        case: str,
        seed: int,
        clusters: Sequence[str] = ("r1", "r2"),
        delays_ms: Mapping[tuple[str, str], int] | None = None,
        deduplication: bool = False,
        partitions: int = 0,
    ) -> Any:
        """Fresh model clusters (``reference_model.replication``) with this target's version and settings;
        ``deduplication`` turns ``brokerDeduplicationEnabled`` on in every cluster; ``partitions``: the topic is
        a partitioned topic of that many partitions, its producers routing ``SinglePartition``."""
        from pytest_keyshared.driver.model_sites import ModelSites

        config = self.config
        if deduplication:
            config = replace(config, dedup=replace(config.dedup, broker_enabled=True))
        return ModelSites(
            clusters=clusters,
            pulsar_version=self.version,
            implementation=self.implementation,
            config=config,
            seed=seed,
            delays_ms=delays_ms,
            partitions=partitions,
        )

    def start(self) -> None:
        """Nothing to start: each run builds its own broker."""

    def stop(self) -> None:
        """Nothing to stop."""

    def restart_broker(self, *, kill: bool = False) -> None:  # pragma: no cover - the session restarts its broker
        raise TargetError("The model restarts through the run's session (ModelSession.restart_broker).")
