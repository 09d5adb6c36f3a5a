"""The seam between the suite and a broker under test: what a target offers, and the errors it raises.

This module sits low in the stack (it imports only ``reference_model.errors`` and the trace header) so that
``conformance`` — its cases and its failover workload — can name targets without importing the plugin.
``pytest_keyshared.targets`` implements these protocols (pulsar-lite, a URL, containers, the model); a third
party implements them in a class of its own and hands it to the plugin through the
``pytest_keyshared_make_target`` hook.  Every target opens its own run session (:meth:`Target.open_session`),
so the driver never asks what kind of target it has.

Replicated subscriptions need several clusters: a target with the ``replication`` capability offers them as
:class:`ReplicationSites` (:meth:`ReplicationTarget.replication_sites`), which the failover workload drives and
records as an ordinary trace.

Errors (exit codes of the ``keyshared`` commands)::

    KeySharedError
     +-- TargetError            3: the target failed (would not start, died, stopped answering in its bound)
     +-- UnsupportedByTarget    2: the case needs something this target cannot do; the plugin skips it
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple, Protocol, runtime_checkable

from reference_model.errors import KeySharedError

__all__ = [
    "Delivery",
    "ReplicationSites",
    "ReplicationTarget",
    "SiteConsumer",
    "SiteProducer",
    "Target",
    "TargetError",
    "UnsupportedByTarget",
]


class TargetError(KeySharedError):
    """The target failed: it would not start, died, or stopped answering within its bound (exit code 3)."""

    exit_code = 3


class UnsupportedByTarget(KeySharedError):
    """The scenario needs something this target cannot do (a crash, a broker restart, ...); nothing was run.

    Exit code 2: the combination of inputs is not runnable.  The plugin turns it into a skip with the reason.
    """

    exit_code = 2


@runtime_checkable
class Target(Protocol):
    """A broker under test, as the driver and the cases use it.

    ``capabilities`` (``has(name)``, ``reasons``) and ``claims`` (the Pulsar version, implementation and
    selector it is held to) go into every trace header.  :meth:`open_session` returns the session one run
    drives (``pytest_keyshared.driver.session.Session``: consumers, producers, the scheduler).
    """

    name: str
    artifacts_dir: Path
    capabilities: Any
    claims: Any

    @property
    def deterministic(self) -> bool: ...

    @property
    def broker_log(self) -> Path | None: ...

    def header_extra(self) -> dict[str, Any]: ...

    def describe(self) -> str: ...

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def open_session(self, topic: str, run_dir: Path, nonce: str, *, seed: int) -> Any: ...

    def restart_broker(self, *, kill: bool = False) -> None:
        """Only with ``capabilities.broker_restart``; else :class:`UnsupportedByTarget`."""

    def set_topic_deduplication(self, topic: str, enabled: bool) -> None:
        """Only with ``capabilities.dedup_switch``; else :class:`UnsupportedByTarget`."""

    def log_position(self) -> int:
        """Current size of the broker log (0 without one)."""

    def copy_log(self, since: int, dest: Path) -> Path | None:
        """The broker log from byte ``since``, copied to ``dest``; None without one."""


class Delivery(NamedTuple):
    """A message a failover consumer received: its payload (the harness's uid), key, message id, and the
    client's own message object (``token``) to acknowledge it with."""

    payload: str
    key: str | None
    msg_id: str
    token: Any


class SiteProducer(Protocol):
    def send(self, payload: str, key: str) -> str:
        """Publish ``payload`` with partition key ``key``; its message id (``ledger:entry:partition:batch``)."""


class SiteConsumer(Protocol):
    def receive(self, timeout_ms: int) -> Delivery | None:
        """The next message, or None when none arrived within ``timeout_ms``."""

    def acknowledge(self, token: Any) -> None: ...

    def close(self) -> None: ...


#: The replicated-subscription snapshot counters a ``snapshot`` event's ``metrics`` carries: Apache Pulsar's
#: Prometheus names (``/metrics``, broker-wide, no topic label; every release since PIP-33): the summary of the time
#: each completed snapshot took (its ``_count``: snapshots completed, ``ReplicatedSubscriptionsSnapshotBuilder``) and
#: the counter of snapshots that timed out (``ReplicatedSubscriptionsController.cleanupTimedOutSnapshots``).
SNAPSHOT_METRICS = (
    "pulsar_replicated_subscriptions_snapshot_ms_count",
    "pulsar_replicated_subscriptions_timedout_snapshots",
)


class ReplicationSites(Protocol):
    """Clusters with a replicated namespace, as the failover workload uses them.

    ``topic`` and ``subscription`` name the replicated topic and subscription (the same on every cluster).
    ``consume_timeout_ms`` bounds each receive while consuming in the first cluster, ``failover_timeout_ms``
    each receive after the failover (the consumer stops at the first receive that times out while it is
    connected; a consumer may offer ``is_connected()``, else it counts as always connected).  ``now_ns``
    is the clock of the trace (the model's simulated one, so a seed gives the same trace byte for byte);
    ``elapse`` lets time pass; ``settle`` waits, bounded, until replication is idle and returns a note when
    its bound expired; ``backlog`` reads the subscription's backlog on a cluster (None: it cannot be read).
    Sites may offer ``settle_periods``: how many whole snapshot periods ``settle`` lets pass between two waits for
    idle replication (recorded as a ``snapshot``'s ``snapshot_periods``; ``redelivered_after_failover`` needs 1),
    and a settable ``receiver_queue``: the ``receiver_queue_size`` of the consumers ``subscribe`` makes (a failover
    scenario's ``[settings] receiver_queue``; sites without it refuse a scenario that sets one).  Sites may offer
    ``snapshot_metrics(cluster)``: the cluster's replicated-subscription snapshot counters as its brokers' ``/metrics``
    show them (:data:`SNAPSHOT_METRICS`; None when they cannot be read), recorded in each ``snapshot`` event.
    """

    clusters: tuple[str, ...]
    topic: str
    subscription: str
    consume_timeout_ms: int
    failover_timeout_ms: int

    def now_ns(self) -> int: ...

    def producer(self, cluster: str) -> SiteProducer: ...

    def subscribe(self, cluster: str) -> SiteConsumer:
        """A Key_Shared consumer of the replicated subscription (``replicateSubscriptionState``, Earliest)."""

    def elapse(self, ms: int) -> None: ...

    def settle(self) -> str | None: ...

    def backlog(self, cluster: str) -> int | None: ...

    def set_down(self, cluster: str, down: bool) -> None: ...

    def close(self) -> None: ...


@runtime_checkable
class ReplicationTarget(Protocol):
    """A target with several clusters (``capabilities.replication``)."""

    def replication_sites(
        self,
        *,
        case: str,
        seed: int,
        clusters: Sequence[str],
        delays_ms: Mapping[tuple[str, str], int] | None = None,
    ) -> ReplicationSites:
        """Fresh clusters (or a fresh topic on them) for one failover; :class:`UnsupportedByTarget` when this
        target cannot give ``clusters`` or the replication ``delays_ms`` asked for."""
