"""The replicated-subscription snapshot counters a failover run recorded, judged against what its trace proves.

Apache Pulsar shows a client two snapshot counters, broker-wide, on every broker's Prometheus ``/metrics`` (every
release since PIP-33): ``pulsar_replicated_subscriptions_snapshot_ms`` (a summary; its ``_count`` grows by one per
completed snapshot, ``ReplicatedSubscriptionsController.snapshotCompleted``) and
``pulsar_replicated_subscriptions_timedout_snapshots`` (one per pending snapshot dropped after
``replicatedSubscriptionsSnapshotTimeoutSeconds``, ``cleanupTimedOutSnapshots``).  The failover workload records
them in each ``snapshot`` event's ``metrics`` (:data:`conformance.target.SNAPSHOT_METRICS`; the model's clusters
export their controllers' counts).  Two floors, each a consequence of ``startNewSnapshot``'s rules (a snapshot
starts at a tick when data was written since the last completed one started, every outbound replicator is
connected, and not while the first one ever is still pending):

* **completed**: between two ``snapshot`` events of cluster X with ``metrics``, the later one settled (every
  cluster up, replication idle) with ``snapshot_periods`` >= 1, a message published ``ok`` (on any cluster: it is
  replicated, data written on X) makes X start a snapshot at its next tick, which completes within the settle
  (the reasoning of ``redelivered_after_failover``'s points): X's completed count must have grown.
* **timed out**: while the link R -> X alone is down (a ``fault`` ``link_down`` ``cluster`` R, ``remote`` X, and no
  other fault), a message published ``ok`` on X at time t makes X start a snapshot within one period (its own
  replicators are connected); R answers it, but the answer never reaches X, so it times out: by t + timeout + 2
  periods, X's timed-out count has grown past its value before the link went down.  The timeout and the period
  are the header's ``broker_conf`` values or Pulsar's defaults (30 s, 1 s).  Trace time only lengthens the wait
  judged: equal timestamps make no claim.

The counters only grow while no broker restarts (a broker restart resets them), so a ``fault`` between the two
events voids the first floor and any ``fault`` but the link's own voids the second; a subscription whose
replicated status was switched off or that was deleted may leave a cluster without a controller, so a trace with
such a fault is not judged from there on.  Other topics of a real broker only add to the counts: both are floors.
Reported as ``stats_mismatch`` (contract replication), one explanation per finding.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.target import SNAPSHOT_METRICS

__all__ = ["snapshot_metrics_problems"]

COMPLETED, TIMED_OUT = SNAPSHOT_METRICS
#: ``replicatedSubscriptionsSnapshotTimeoutSeconds`` and ``replicatedSubscriptionsSnapshotFrequencyMillis``
#: (Pulsar's defaults when the header's ``broker_conf`` does not set them)
TIMEOUT_NAME, PERIOD_NAME = (
    "replicatedSubscriptionsSnapshotTimeoutSeconds",
    "replicatedSubscriptionsSnapshotFrequencyMillis",
)
DEFAULT_TIMEOUT_S, DEFAULT_PERIOD_MS = 30, 1000
#: faults after which the trace is not judged: a cluster may have no controller for the subscription
UNJUDGED_AFTER = ("replicated_subscription_off", "subscription_deleted")


@dataclass
class _Reading:
    i: int
    values: Mapping[str, int]


@dataclass
class _Link:
    """A link R -> X down: when, X's timed-out count before it, and X's first ``ok`` publish since (time, event)."""

    i: int
    before: int | None
    publish: tuple[int, int] | None = None


def _conf_number(conf: object, name: str, default: int) -> int:
    value = conf.get(name) if isinstance(conf, Mapping) else None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


def _cluster(topic: object) -> str | None:
    return topic.rpartition("@")[2] or None if isinstance(topic, str) and "@" in topic else None


def _values(metrics: object) -> Mapping[str, int] | None:
    if not isinstance(metrics, Mapping):
        return None
    values = {name: metrics.get(name) for name in SNAPSHOT_METRICS}
    if any(isinstance(v, bool) or not isinstance(v, int) for v in values.values()):
        return None
    return values  # type: ignore[return-value]


def snapshot_metrics_problems(trace_path: str | Path) -> list[str]:
    """Explanations of snapshot counters below what the trace proves (module doc); [] when none were recorded."""
    from conformance.checks.replication import is_replication_run
    from conformance.trace.reader import open_trace

    trace = open_trace(trace_path)
    header = trace.header
    if not is_replication_run(header):
        return []
    conf = header.extra.get("broker_conf")
    if isinstance(conf, Mapping) and str(conf.get("enableReplicatedSubscriptions", "true")).lower() == "false":
        return []
    timeout_ns = _conf_number(conf, TIMEOUT_NAME, DEFAULT_TIMEOUT_S) * 1_000_000_000
    period_ns = _conf_number(conf, PERIOD_NAME, DEFAULT_PERIOD_MS) * 1_000_000
    problems: list[str] = []
    last: dict[str, _Reading] = {}  #: cluster -> its latest reading
    published_since: set[str] = set()  #: clusters whose latest reading came before an ``ok`` publish
    fault_since: set[str] = set()  #: clusters whose latest reading came before a fault
    links: dict[tuple[str, str], _Link] = {}  #: (R, X) -> the link R -> X, down alone
    other_fault = False  #: a fault besides one link down happened since it went down
    for event in trace.events():
        op = event.op.value if hasattr(event.op, "value") else str(event.op)
        if op == "fault":
            kind = event.extra.get("fault")
            if kind in UNJUDGED_AFTER:
                return problems
            fault_since.update(last)
            link_key = (str(event.extra.get("cluster")), str(event.extra.get("remote")))
            if kind == "link_down" and not links:
                before = last.get(link_key[1])
                links[link_key] = _Link(event.i, None if before is None else before.values[TIMED_OUT])
                other_fault = False
            elif kind == "link_up" and link_key in links:
                del links[link_key]
            else:
                other_fault = True
        elif op == "publish" and event.result is not None and event.result.value == "ok":
            published_since.update(last)
            cluster = _cluster(event.topic)
            for (_source, remote), link in links.items():
                if remote == cluster and link.publish is None:
                    link.publish = (int(event.t), event.i)
        elif op == "snapshot":
            cluster = event.extra.get("cluster")
            values = _values(event.extra.get("metrics"))
            if not isinstance(cluster, str) or values is None:
                continue
            previous = last.get(cluster)
            if (
                previous is not None
                and cluster in published_since
                and cluster not in fault_since
                and event.extra.get("settled") is True
                and _periods(event.extra.get("snapshot_periods")) >= 1
                and values[COMPLETED] <= previous.values[COMPLETED]
            ):
                problems.append(_completed_problem(cluster, previous, event.i, values))
            for (source, remote), link in links.items():
                if remote != cluster or other_fault or link.publish is None or link.before is None:
                    continue
                due = link.publish[0] + timeout_ns + 2 * period_ns
                if int(event.t) >= due and values[TIMED_OUT] <= link.before:
                    problems.append(_timed_out_problem(source, cluster, link, event.i, values, timeout_ns))
                    link.before = None  # one finding per link
            last[cluster] = _Reading(event.i, values)
            published_since.discard(cluster)
            fault_since.discard(cluster)
    return problems


def _periods(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _completed_problem(cluster: str, previous: _Reading, i: int, values: Mapping[str, int]) -> str:
    return (
        f"{COMPLETED} on {cluster} stayed at {values[COMPLETED]} from the snapshot E{previous.i} to the settled"
        f" snapshot E{i} though a message was published in between: {cluster} starts a snapshot at its next tick"
        " (data was written since the last one started, every cluster was up) and the settle lets it complete, so"
        " the count of completed snapshots (/metrics) must have grown"
    )


def _timed_out_problem(
    source: str, cluster: str, link: _Link, i: int, values: Mapping[str, int], timeout_ns: int
) -> str:
    assert link.publish is not None
    return (
        f"{TIMED_OUT} on {cluster} is {values[TIMED_OUT]} at E{i}, as before the link {source} -> {cluster} went"
        f" down (E{link.i}): the message published on {cluster} at E{link.publish[1]} made it start a snapshot"
        f" that {source} answered over the broken link, so it timed out after {timeout_ns // 1_000_000_000} s, and"
        " the count of timed-out snapshots (/metrics) must have grown"
    )
