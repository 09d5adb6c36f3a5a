"""Build the Key_Shared dispatcher a Pulsar version and configuration would run.

Follows ``PersistentSubscription`` choosing the dispatcher class and the dispatcher constructor choosing the
selector: AUTO_SPLIT uses consistent hashing (``subscriptionKeySharedUseConsistentHashing``, default) or the
hash-range auto-split selector; STICKY the exclusive hash-range selector. Pulsar 3.x only has the classic
dispatcher; 4.x runs PIP-379 unless ``subscriptionKeySharedUseClassicPersistentImplementation`` is set; 5.0 removed
the classic dispatcher (apache/pulsar#26687) and runs PIP-379 only.
"""

from __future__ import annotations

from collections.abc import Callable

from reference_model.errors import InvalidArgument, did_you_mean
from reference_model.keyshared.classic import ClassicDispatcher
from reference_model.keyshared.dispatcher import KeySharedDispatcher, Scheduler
from reference_model.keyshared.nonpersistent import NonPersistentDispatcher
from reference_model.keyshared.pip379 import Pip379Dispatcher
from reference_model.keyshared.policy import KeySharedPolicy
from reference_model.keyshared.settings import DispatcherSettings
from reference_model.selectors import make_selector
from reference_model.storage.cursor import ManagedCursor
from reference_model.storage.entry import Entry
from reference_model.versions import PIP_379, PulsarVersion, has_classic_dispatcher, parse_version

__all__ = ["IMPLEMENTATIONS", "check_implementation", "default_implementation", "make_dispatcher"]

IMPLEMENTATIONS: tuple[str, ...] = ("pip379", "classic")


def default_implementation(version: PulsarVersion) -> str:
    """``"pip379"`` for 4.0 and later, ``"classic"`` before."""
    return "pip379" if version.has(PIP_379) else "classic"


def check_implementation(implementation: str | None, version: PulsarVersion) -> str:
    """Validate ``implementation`` for ``version`` (``None`` picks the version's default)."""
    if implementation is None:
        return default_implementation(version)
    if implementation not in IMPLEMENTATIONS:
        raise InvalidArgument(
            f"Expected a Key_Shared implementation but got implementation={implementation!r}."
            f"{did_you_mean(str(implementation), IMPLEMENTATIONS)} Choices: {', '.join(IMPLEMENTATIONS)}."
        )
    if implementation == "pip379" and not version.has(PIP_379):
        raise InvalidArgument(
            f"implementation='pip379' needs Pulsar 4.0 or later (PIP-379, apache/pulsar#23352), but the version"
            f" is {version}; use implementation='classic' (the only one in {version.major}.{version.minor})"
            " or a 4.x version."
        )
    if implementation == "classic" and not has_classic_dispatcher(version):
        raise InvalidArgument(
            f"implementation='classic' does not exist in Pulsar {version}: the classic Key_Shared dispatcher was"
            f" removed in {version.major}.{version.minor} (apache/pulsar#26687); use the PIP-379 dispatcher (the"
            " default) or a 4.x release for the classic one."
        )
    return implementation


def selector_kind(policy: KeySharedPolicy, settings: DispatcherSettings) -> str:
    if policy.is_sticky:
        return "sticky"
    return "consistent-hashing" if settings.use_consistent_hashing else "auto-split"


def make_dispatcher(
    *,
    cursor: ManagedCursor,
    policy: KeySharedPolicy,
    settings: DispatcherSettings | None = None,
    version: str | PulsarVersion = "4.0",
    implementation: str | None = None,
    schedule: Scheduler | None = None,
    on_marker: Callable[[Entry], None] | None = None,
    non_persistent: bool = False,
    clock: Callable[[], int] | None = None,
    proposed_fixes: frozenset[str] = frozenset(),
) -> KeySharedDispatcher:
    """A dispatcher for ``cursor`` with a fresh selector for ``policy`` under ``version`` and ``settings``.

    ``non_persistent``: the dispatcher of a non-persistent topic (``NonPersistentStickyKeyDispatcherMultipleConsumers``,
    whatever ``implementation`` says; its selector never tracks draining hashes). ``proposed_fixes``: fixes of open
    Pulsar bugs to apply although no release has them (``reference_model.versions.PROPOSED_FIXES``)."""
    pulsar = parse_version(version)
    impl = check_implementation(implementation, pulsar)
    settings = settings or DispatcherSettings()
    kind = selector_kind(policy, settings)
    classic = impl == "classic"
    if non_persistent:
        return NonPersistentDispatcher(
            cursor=cursor,
            selector=make_selector(
                kind,
                version=pulsar,
                points=settings.consistent_hashing_points,
                classic=classic,
                track_impacted=False if pulsar.has(PIP_379) else None,
            ),
            policy=policy,
            settings=settings,
            version=pulsar,
            schedule=schedule,
            on_marker=on_marker,
        )
    draining = not classic and kind != "sticky" and not policy.allow_out_of_order_delivery
    selector = make_selector(
        kind,
        version=pulsar,
        points=settings.consistent_hashing_points,
        classic=classic,
        track_impacted=draining if pulsar.has(PIP_379) else None,
    )
    cls: type[KeySharedDispatcher] = ClassicDispatcher if classic else Pip379Dispatcher
    return cls(
        cursor=cursor,
        selector=selector,
        policy=policy,
        settings=settings,
        version=pulsar,
        schedule=schedule,
        on_marker=on_marker,
        clock=clock,
        proposed_fixes=proposed_fixes,
    )
