"""What every target offers the driver: a name, capabilities, the contract it claims, and its lifecycle.

A *target* is a broker to check: the embedded pulsar-lite (a subprocess), any broker by URL, Apache Pulsar in
a container, or the in-process reference model.  Real brokers are reached through ``pulsar-client`` at
``service_url`` (:class:`PulsarTarget`); the model is driven directly (:class:`~.model.ModelTarget`).

Each target declares its :class:`Capabilities` (so a scenario step it cannot perform is refused before the
run starts, with the reason) and the :class:`Claims` it is held to (Pulsar version, Key_Shared
implementation, selector), which go into the trace header for the checker.
"""

from __future__ import annotations

import contextlib
import shutil
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar

from conformance.target import TargetError, UnsupportedByTarget
from conformance.trace import SelectorSpec
from reference_model.errors import InvalidArgument, did_you_mean

__all__ = [
    "CAPABILITY_NAMES",
    "Capabilities",
    "Claims",
    "ClientQuirks",
    "PulsarTarget",
    "Target",
    "TargetError",
    "UnsupportedByTarget",
    "check_options",
]


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a target can do beyond publishing and consuming.  ``reasons`` says why a capability is missing."""

    admin_api: bool = False  #: an admin REST API (topic stats, policies)
    dedup_switch: bool = False  #: the harness can turn producer deduplication on for the run's topic
    replication: bool = False  #: several clusters with replicated subscriptions
    crash_consumer: bool = False  #: cut one consumer's connection without a close
    broker_restart: bool = False  #: stop and start the broker on the same storage during a run
    storage_failure: bool = False  #: make the broker's storage refuse writes for a while (``storage_down``)
    #: hold a message sent with ``deliver_after`` until its delivery time (``publish`` with ``deliver_after_ms``)
    delayed_delivery: bool = False
    #: expire a subscription's old messages now, as a TTL check does (admin ``expireMessages``; ``expire_messages``)
    message_expiry: bool = False
    #: send a batch with its highest sequence id through the harness's own protocol producer (``pulsar://``, no
    #: TLS; ``publish`` with ``highest_sequence_id``): pulsar-client never sends that field
    raw_send: bool = False
    #: create the run's topic as a partitioned topic (admin ``createPartitionedTopic``; ``[settings] partitions``)
    partitioned_topics: bool = False
    reasons: Mapping[str, str] = field(default_factory=dict)

    def has(self, name: str) -> bool:
        if name not in CAPABILITY_NAMES:
            raise InvalidArgument(
                f"Unknown capability {name!r}.{did_you_mean(name, CAPABILITY_NAMES)}"
                f" Capabilities: {', '.join(CAPABILITY_NAMES)}."
            )
        return bool(getattr(self, name))

    def require(self, needs: Mapping[str, str], target: str) -> None:
        """Raise :class:`UnsupportedByTarget` naming every capability in ``needs`` (``{name: why}``) that is missing."""
        missing = [(name, why) for name, why in needs.items() if not self.has(name)]
        if missing:
            parts = [
                f"{why} needs {name}" + (f" ({self.reasons[name]})" if name in self.reasons else "")
                for name, why in missing
            ]
            raise UnsupportedByTarget(f"Target {target!r} cannot run this scenario: {'; '.join(parts)}.")

    def to_dict(self) -> dict[str, bool]:
        return {name: bool(getattr(self, name)) for name in CAPABILITY_NAMES}


CAPABILITY_NAMES: tuple[str, ...] = tuple(f.name for f in fields(Capabilities) if f.name != "reasons")


@dataclass(frozen=True, slots=True)
class Claims:
    """The contract a target is held to: what a broker of this version and implementation must do.

    ``selector`` is the AUTO_SPLIT selector (``consistent-hashing``, Pulsar's default since 2.7, or
    ``auto-split``); STICKY subscriptions always use the ``sticky`` selector.  For pulsar-lite the claim is
    what Pulsar 4.0 would do, so that its own selector shows up as ``misassigned``: a finding, not a bug here.
    """

    pulsar_version: str = "4.0"
    implementation: str = "pip379"  #: ``pip379`` (Pulsar 4.0 default) or ``classic`` (3.x, or the 4.x flag)
    selector: str = "consistent-hashing"
    points: int = 100  #: consistent-hashing ring points per consumer
    deduplication: bool = False  #: deduplication on for every topic, whatever the scenario asks

    def selector_for(self, key_shared_mode: str) -> SelectorSpec:
        kind = "sticky" if key_shared_mode == "STICKY" else self.selector
        return SelectorSpec(kind=kind, pulsar_version=self.pulsar_version, points=self.points)


@dataclass(frozen=True, slots=True)
class ClientQuirks:
    """How the driver must use ``pulsar-client`` against this broker to keep the run meaningful.

    ``distinct_consumer_ids``: the broker keys a subscription's consumers by the client-chosen consumer id,
    which every fresh client starts at 0, so the driver makes ids distinct across clients (pulsar-lite §5.1).
    ``sync_publish``: pipelined ``send_async`` stalls Key_Shared dispatch and causes spurious duplicates
    (pulsar-lite §5.2, §5.5), so messages are sent one at a time unless a scenario asks for batching.
    ``nack_stalls``: the first negative-acknowledgement redelivery under load stops the Key_Shared
    subscription's dispatch for good (``docs/soak.md``, "Against pulsar-lite"), so a soak leaves the ``nack``
    behaviour out unless asked for it.
    """

    distinct_consumer_ids: bool = False
    sync_publish: bool = False
    nack_stalls: bool = False
    operation_timeout_s: int = 10


def check_options(
    options: Mapping[str, Any] | None, allowed: Mapping[str, type | tuple[type, ...]], target: str
) -> dict[str, Any]:
    """Validate target ``options`` against ``{name: type}``; one teaching error for the first bad entry."""
    out: dict[str, Any] = {}
    for key, value in (options or {}).items():
        if key not in allowed:
            names = sorted(allowed)
            raise InvalidArgument(
                f"Unknown option {key!r} for target {target!r}.{did_you_mean(key, names)}"
                f" Options of this target: {', '.join(names) or 'none'}."
            )
        expected = allowed[key]
        ok = isinstance(value, expected) and not (isinstance(value, bool) and expected in (int, float, (int, float)))
        if not ok:
            want = expected.__name__ if isinstance(expected, type) else " or ".join(t.__name__ for t in expected)
            raise InvalidArgument(
                f"Option {key}={value!r} (type={type(value).__name__}) for target {target!r}: expected {want}."
            )
        out[key] = value
    return out


class Target(ABC):
    """A broker under test.  Use through :func:`pytest_keyshared.targets.open_target`, which stops it."""

    #: ``"pulsar"`` (reached with pulsar-client at ``service_url``) or ``"model"`` (driven in process): for
    #: people and reports; the driver never switches on it (each target opens its own session).
    kind: ClassVar[str]

    def __init__(self, name: str, artifacts_dir: Path) -> None:
        self.name = name
        # Absolute from the start: a broker process runs in its own working directory (pulsar-lite in its data
        # directory), so a relative path handed to it would name a file that is not there.
        self.artifacts_dir = Path(artifacts_dir).absolute()
        self.capabilities = Capabilities()
        self.claims = Claims()

    @property
    def broker_log(self) -> Path | None:
        """The broker's log file, if this target keeps one (it grows for the target's whole life)."""
        return None

    @property
    def deterministic(self) -> bool:
        """True when the same scenario and seed give the same trace byte for byte (the model)."""
        return False

    def header_extra(self) -> dict[str, Any]:
        """Target facts for the trace header (implementation, image, binary, ...)."""
        return {"implementation": self.claims.implementation}

    @abstractmethod
    def start(self) -> None:
        """Bring the broker up and wait (bounded) until it is ready."""

    @abstractmethod
    def stop(self) -> None:
        """Stop everything :meth:`start` started.  Safe to call twice, and after a failed start."""

    @abstractmethod
    def open_session(self, topic: str, run_dir: Path, nonce: str, *, seed: int) -> Any:
        """The session one run drives on this target (``pytest_keyshared.driver.session.Session``)."""

    def with_selector(self, selector: str, points: int) -> Target:
        """This target with the AUTO_SPLIT selector a scenario asks for (``[settings] selector``, ``points``).

        ``""`` and ``0`` mean "the target's own".  A target that already claims what is asked returns itself;
        one that cannot switch (a running broker's configuration is fixed) raises :class:`UnsupportedByTarget`,
        which skips the scenario with the reason.  The model overrides this: it builds each run's broker anew.
        """
        claims = self.claims
        if (not selector or selector == claims.selector) and (not points or points == claims.points):
            return self
        asked = selector or claims.selector
        if points:
            asked += f" with {points} points"
        raise UnsupportedByTarget(
            f"Target {self.name!r} cannot switch its selector to {asked} for one scenario (it claims"
            f" {claims.selector} with {claims.points} points); the reference model can (--keyshared-target=model)."
        )

    def with_broker_conf(self, conf: Mapping[str, Any]) -> Target:
        """This target with a scenario's ``[broker]`` settings (``broker.conf`` names) for one run.

        An empty ``conf`` returns the target itself.  A running broker's configuration is fixed, so a target
        that cannot apply a setting raises :class:`UnsupportedByTarget` naming it, which skips the scenario:
        a run that went ahead without the setting would pass without testing what the scenario asks.  The
        model overrides this (it builds each run's broker anew).
        """
        if not conf:
            return self
        named = ", ".join(f"{name} = {value}" for name, value in sorted(conf.items()))
        raise UnsupportedByTarget(
            f"Target {self.name!r} cannot apply the scenario's broker settings ([broker] {named}) to one run;"
            f" the reference model can (--keyshared-target=model)."
        )

    def at_release(self, spec: str) -> Target | None:
        """This target at another release (``model:3.0``), to name the known bug that explains a generated
        program failing here (:mod:`conformance.generated.attribution`): it passes at the release that fixed it.
        None for a broker that is what it is (every real one); the model overrides this."""
        return None

    def restart_broker(self, *, kill: bool = False) -> None:
        """Stop the broker and start it on the same storage (only with ``capabilities.broker_restart``)."""
        raise UnsupportedByTarget(f"Target {self.name!r} cannot restart its broker.")

    def set_topic_deduplication(self, topic: str, enabled: bool) -> None:
        """Turn deduplication on or off for ``topic`` (only with ``capabilities.dedup_switch``)."""
        raise UnsupportedByTarget(f"Target {self.name!r} cannot switch deduplication.")

    def expire_messages(self, topic: str, subscription: str, expire_time_s: int) -> None:
        """Expire the subscription's messages older than ``expire_time_s`` (only with
        ``capabilities.message_expiry``: the admin API's ``expireMessages``, what a TTL check runs)."""
        raise UnsupportedByTarget(f"Target {self.name!r} cannot expire messages (message_expiry).")

    def describe(self) -> str:
        """One line for run summaries."""
        return self.name

    def log_position(self) -> int:
        """Current size of the broker log, to copy the part a run produced (see :meth:`copy_log`)."""
        log = self.broker_log
        try:
            return log.stat().st_size if log is not None else 0
        except OSError:
            return 0

    def copy_log(self, since: int, dest: Path) -> Path | None:
        """Copy the broker log from byte ``since`` to ``dest``; None when there is no log."""
        log = self.broker_log
        if log is None or not log.exists():
            return None
        dest.parent.mkdir(parents=True, exist_ok=True)
        if log.resolve() == dest.resolve():
            return dest
        with contextlib.suppress(OSError), log.open("rb") as src, dest.open("wb") as out:
            src.seek(since)
            shutil.copyfileobj(src, out)
            return dest
        return None


class PulsarTarget(Target):
    """A real broker spoken to through ``pulsar-client``."""

    kind: ClassVar[str] = "pulsar"

    def __init__(self, name: str, artifacts_dir: Path) -> None:
        super().__init__(name, artifacts_dir)
        self.quirks = ClientQuirks()

    def open_session(self, topic: str, run_dir: Path, nonce: str, *, seed: int) -> Any:
        """A run through ``pulsar-client`` (the seed does not steer a real broker)."""
        from pytest_keyshared.driver.session import PulsarSession

        return PulsarSession(self, topic, run_dir, nonce)

    @property
    @abstractmethod
    def service_url(self) -> str:
        """``pulsar://HOST:PORT`` of the running broker."""

    @property
    def admin_url(self) -> str | None:
        """``http://HOST:PORT`` of the admin REST API, if any."""
        return None
