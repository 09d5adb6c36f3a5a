"""``run_scenario`` for failover scenarios: the steps of a scenario with ``[settings] clusters`` applied to the
failover workload (:class:`~pytest_keyshared.driver.replication.Failover`) on the target's clusters.

A failover scenario is a file like any other (``docs/scenarios.md``, "Failovers"), so ``keyshared run``,
``keyshared replay``, ``keyshared check``, the report and the replication cases all run a failover the same
way: this module maps each step to the workload (``publish`` -> :meth:`Failover.publish_keys`, ``consume`` ->
:meth:`Failover.consume` then :meth:`Failover.ack_held`, ``sleep`` -> :meth:`Failover.advance`, ``snapshot``,
``cluster_down`` / ``cluster_up``, ``failover``) and returns the same :class:`~.run.RunResult` as a Key_Shared
run, with the same artifacts (``trace.jsonl``, ``scenario.toml``, ``verdict.json``).  The trace is judged
after the run by the ordinary checker (:func:`conformance.checks.check_trace`); the replication check reads it.

A target without clusters is refused before anything runs (:class:`UnsupportedByTarget`, exit code 2), as is
one that cannot give the clusters or replication delays the scenario asks for.
"""

from __future__ import annotations

import contextlib
import inspect
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conformance.scenarios import (
    ClusterDown,
    ClusterUp,
    Compact,
    Consume,
    DeleteSubscription,
    FailOver,
    LinkDown,
    LinkUp,
    Publish,
    Read,
    ReplicatedStatus,
    ReplicatorFaults,
    Scenario,
    Settings,
    Sleep,
    Snapshot,
    Step,
)
from conformance.target import ReplicationTarget, UnsupportedByTarget
from pytest_keyshared.driver.progress import Progress
from pytest_keyshared.driver.recorder import Counters
from pytest_keyshared.driver.replication import Failover, failover_header
from pytest_keyshared.driver.run_loop import RunLoop, RunResult

__all__ = ["run_failover_scenario"]


class _Tally:
    """Counters of the run, fed by the trace writer (what ``keyshared run`` shows while it runs)."""

    def __init__(self) -> None:
        self.published = self.received = self.acked = self.events = 0
        self.last_receive_ns = 0
        self.uids: set[str] = set()
        self.acked_uids: set[str] = set()
        self.uid_of: dict[tuple[str | None, str | None], str] = {}

    def feed(self, event: Any) -> None:
        self.events += 1
        op = event.op.value
        if op == "publish" and event.uid is not None:
            self.published += 1
            self.uids.add(event.uid)
        elif op == "receive":
            self.received += 1
            self.last_receive_ns = int(event.t)
            if event.uid is not None:
                self.uid_of[(event.topic, event.msg_id)] = event.uid
        elif op == "ack":
            self.acked += 1
            uid = self.uid_of.get((event.topic, event.msg_id))
            if uid is not None:
                self.acked_uids.add(uid)

    def counters(self) -> Counters:
        return Counters(
            published_ok=self.published,
            published_info=0,
            published_fail=0,
            received=self.received,
            acked=self.acked,
            expected_uids=len(self.uids),
            acked_expected=len(self.uids & self.acked_uids),
            last_receive_ns=self.last_receive_ns,
            events=self.events,
        )


def _apply(run: Failover, step: Step, rng: random.Random) -> None:
    if isinstance(step, Publish):
        run.publish_keys(step.message_keys(rng), cluster=step.cluster)
    elif isinstance(step, Consume):
        run.consume(step.ack.acks)
        run.ack_held(step.ack.acks)
    elif isinstance(step, Sleep):
        run.advance(step.ms)
    elif isinstance(step, Snapshot):
        run.snapshot()
    elif isinstance(step, (ClusterDown, ClusterUp)):
        run.set_down(step.cluster, isinstance(step, ClusterDown))
    elif isinstance(step, (LinkDown, LinkUp)):
        run.set_link_down(step.cluster, step.remote, isinstance(step, LinkDown))
    elif isinstance(step, Read):
        run.read(step.cluster, compacted=step.compacted)
    elif isinstance(step, Compact):
        run.compact(step.cluster)
    elif isinstance(step, ReplicatorFaults):
        run.set_replicator_faults(
            step.cluster, step.remote, lose_receipts=step.lose_receipts, repeat_window=step.repeat_window
        )
    elif isinstance(step, DeleteSubscription):
        run.delete_subscription(step.cluster)
    elif isinstance(step, ReplicatedStatus):
        run.set_replicated(step.cluster, step.enabled)
    elif isinstance(step, FailOver):
        run.fail_over(step.to)
    else:  # the loader admits only the failover steps in a failover scenario
        raise UnsupportedByTarget(f"step {step.do!r} is not a failover step")


def run_failover_scenario(
    target: Any,
    scenario: Scenario,
    *,
    seed: int,
    out_dir: Path,
    profile: Any = None,
    progress: Callable[[Progress], None] | None = None,
    buckets: int | None = None,
) -> RunResult:
    """Run failover ``scenario`` on ``target``'s clusters; a :class:`~.run.RunResult` (see the module doc).
    ``buckets``: the trace in the bucketed layout too (as :func:`~.run.run_scenario`)."""
    settings = scenario.settings
    name = str(getattr(target, "name", target))
    if not isinstance(target, ReplicationTarget):
        raise UnsupportedByTarget(
            f"Target {name!r} cannot run failover scenario {scenario.name!r}: it offers"
            " no clusters (replication_sites)."
        )
    delays = {(origin, to): ms for origin, to, ms in settings.replication_delays} or None
    wanted: dict[str, Any] = {}
    if settings.deduplication:
        if "deduplication" not in inspect.signature(target.replication_sites).parameters:
            raise UnsupportedByTarget(
                f"Target {name!r} cannot turn deduplication on in its clusters (failover scenario {scenario.name!r}"
                " sets deduplication = true)."
            )
        wanted["deduplication"] = True
    if settings.partitions:
        if "partitions" not in inspect.signature(target.replication_sites).parameters:
            raise UnsupportedByTarget(
                f"Target {name!r} cannot run failover scenario {scenario.name!r}: it has no partitioned topics"
                f" (the scenario sets partitions = {settings.partitions})."
            )
        wanted["partitions"] = settings.partitions
    sites = target.replication_sites(
        case=scenario.name, seed=seed, clusters=settings.clusters, delays_ms=delays, **wanted
    )
    missing = sorted({step.do for step in scenario.steps if not hasattr(sites, _SITE_METHOD.get(type(step), "close"))})
    if missing:
        with contextlib.suppress(Exception):
            sites.close()
        raise UnsupportedByTarget(
            f"Target {name!r} cannot run failover scenario {scenario.name!r}: its clusters offer no"
            f" {', '.join(missing)} step."
        )
    if settings.receiver_queue != Settings().receiver_queue:
        if not hasattr(sites, "receiver_queue"):
            with contextlib.suppress(Exception):
                sites.close()
            raise UnsupportedByTarget(
                f"Target {name!r} cannot run failover scenario {scenario.name!r}: its clusters' consumers have a"
                f" fixed receiver queue (the scenario sets receiver_queue = {settings.receiver_queue})."
            )
        sites.receiver_queue = settings.receiver_queue
    run = _FailoverRun(target, sites, scenario, seed=seed, out_dir=out_dir, profile=profile, progress=progress)
    run.buckets = buckets
    return run.execute()


#: Steps the sites must offer a method for (the others every :class:`ReplicationSites` has).
_SITE_METHOD: dict[type, str] = {
    ReplicatedStatus: "set_replicated",
    LinkDown: "set_link_down",
    LinkUp: "set_link_down",
    DeleteSubscription: "delete_subscription",
    ReplicatorFaults: "set_replicator_faults",
    Read: "read_all",
    Compact: "compact",
}


class _FailoverRun(RunLoop):
    """A failover scenario on the clusters ``sites``: the steps drive a :class:`Failover`, which writes the
    trace (its ``end`` event included); the trace is judged once the run has ended."""

    def __init__(
        self,
        target: Any,
        sites: Any,
        scenario: Scenario,
        *,
        seed: int,
        out_dir: Path,
        profile: Any,
        progress: Callable[[Progress], None] | None,
    ) -> None:
        super().__init__(target, scenario, seed=seed, out_dir=out_dir, profile=profile, progress=progress)
        self.sites = sites
        self.topic = sites.topic
        self.tally = _Tally()

    def _open(self, trace_path: Path) -> None:
        claims: Any = getattr(self.target, "claims", None)
        selector = claims.selector_for("AUTO_SPLIT") if claims is not None else None
        header = failover_header(
            self.target,
            self.sites,
            seed=self.seed,
            selector=selector,
            deduplication=self.scenario.settings.deduplication,
            extra={
                "scenario": self.scenario.name,
                "topic": self.sites.topic,
                **({"partitions": self.scenario.settings.partitions} if self.scenario.settings.partitions else {}),
            },
        )
        try:
            self.failover = Failover(self.sites, header, trace_path)
        except BaseException:  # the standby subscriptions or the consumer could not be made: release the clusters
            with contextlib.suppress(Exception):
                self.sites.close()
            raise
        self.writer = self.failover.writer
        self.writer.add_listener(self.tally.feed)
        self.notes = self.failover.notes  # one list: the ``end`` event carries the notes, a failure's included

    def _apply(self, step: Step) -> tuple[bool, str]:
        """A step is ok when the workload noted nothing (each bounded wait that expires leaves a note)."""
        before = len(self.notes)
        _apply(self.failover, step, self.rng)
        new = self.notes[before:]
        return not new, "; ".join(new)

    def _close(self, interrupted: bool, failure: BaseException | None) -> None:
        self.failover.close()
        self.drained = self.quiet = self.failover.moved_to is not None
        save_logs = getattr(self.target, "save_cluster_logs", None)
        if callable(save_logs):
            with contextlib.suppress(Exception):
                save_logs(self.out_dir)

    def _judge(self, trace_path: Path) -> Any:
        from conformance.checks import check_trace

        return check_trace(trace_path, profile=self.profile)

    def _counters(self) -> Counters:
        return self.tally.counters()
