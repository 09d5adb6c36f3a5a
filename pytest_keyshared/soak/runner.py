"""``run_soak``: a long randomized run (generator + nemesis) on the driver's run loop, traced to Parquet chunks.

The soak is the scenario driver (:mod:`pytest_keyshared.driver.run`) fed an endless step stream instead of a
scenario's list: :class:`_SoakRun` subclasses it, so it runs in the shape every run has
(:class:`~pytest_keyshared.driver.run_loop.RunLoop`: plan, open, steps, drain, ``end``, verdict, failure) and
reuses the driver's steps (publish, open, close, crash, behaviours, redeliver, pause, restart), its consumer
workers, sessions, recorder and drain.  What differs (the loop's hooks):

* steps come from :class:`~conformance.soak.SoakGenerator`, each waited for until due on the run's clock (the
  model's simulated clock against the model, so the same seed gives the same trace byte for byte);
* ``net_fault`` steps go to the nemesis (:class:`~.nemesis.ProxiedSession`), each recorded first as a ``fault``
  event naming the consumers (or producers) it touches;
* the trace goes to ``trace/part-NNNNNN.parquet`` chunks (:mod:`conformance.trace.chunks`), never held whole;
* the live check keeps its memory to what is outstanding (:mod:`.live`); the verdict is the full Python check of
  the chunks once the run has ended and drained;
* the counters the drain needs keep only the uids still outstanding (:class:`SoakRecorder`), and a
  per-second throughput series is kept for the summary.
* Ctrl-C ends the load, and the soak still ends as any run does, then returns its result (``interrupted``,
  exit code 130) instead of raising; a second one stops the waiting for the clients, a third the check
  (:mod:`.interrupt`);
* a broker that stops serving is judged (:mod:`.stall`): a ``stalled`` violation in the verdict, and the
  timed-out call that may have ended the load is not raised; a broker that died is a target failure.

Artifacts in ``out_dir``: ``trace/`` (the chunks), ``soak.json`` (the plan), ``verdict.json``, ``report.html``,
``summary.json`` (counters, faults, throughput per second, the stall), ``broker.log``, ``pulsar-client.log``,
``consumer-processes.log``, ``checker.log``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.scenarios import Scenario, Settings, Step, SubscriptionSettings
from conformance.soak import BEHAVIOUR_LABELS, PRODUCERS_CLIENT, SoakGenerator, SoakPlan
from conformance.trace import TraceHeader, TraceWriter
from conformance.trace.chunks import ChunkWriter, read_chunks
from conformance.trace.rows import Row
from pytest_keyshared.driver.pipeline import TracePipeline
from pytest_keyshared.driver.recorder import Counters, Recorder
from pytest_keyshared.driver.run import RunResult, StepOutcome, _Run
from pytest_keyshared.driver.session import Session, open_session
from pytest_keyshared.soak.interrupt import Interrupts, join_unless
from pytest_keyshared.soak.live import LiveCount
from pytest_keyshared.soak.sink import SinkError, TraceSink
from pytest_keyshared.soak.stall import MIN_SILENCE_S, Stall, StallWatch, broker_answers_tcp, with_stall
from pytest_keyshared.targets.base import PulsarTarget, Target, TargetError, UnsupportedByTarget
from reference_model.errors import InvalidArgument

__all__ = ["CLOSE_BOUND_S", "SoakRecorder", "SoakResult", "SoakStatus", "check_soak_plan", "resolve_auto", "run_soak"]

#: Failed step outcomes kept for the summary (the rest are counted).
_KEEP_FAILED = 50
#: Events per chunk.
CHUNK_ROWS = 20_000
#: Bound on closing the consumers at the end (they close in parallel), and on closing the producers.
CLOSE_BOUND_S = 10.0
#: A chunk is written at least this often against real brokers (seconds).
CHUNK_MAX_AGE_S = 10.0
#: Bound on the trace sink's last chunk and live check after the run (seconds).
_SINK_BOUND_S = 120.0
#: How often the recorded rows go to the trace sink (seconds): each hand-over wakes a thread of the clients'
#: process and the sink; the sink writes chunks every 10 s anyway, and the status line is read every second.
_HAND_OVER_S = 0.1
#: Bound on the trace sink's start-up (its imports), waited for before the load (seconds).
_SINK_READY_S = 30.0


@dataclass(frozen=True, slots=True)
class SoakStatus:
    """One status report: what the live status line shows."""

    elapsed_s: float
    produced_per_s: float
    consumed_per_s: float
    produced: int
    consumed: int
    outstanding: int
    consumers: int
    faults: int
    violations: int
    events: int
    phase: str  #: ``load``, ``drain``, ``stopping`` (the teardown), ``check``, ``report`` or ``done``
    #: what the teardown is waiting for now, with the time left (``stopping`` only), e.g. "3 consumers to close
    #: (8s left)"
    waiting: str = ""
    #: how many times the soak was interrupted (Ctrl-C, SIGTERM), at most 3 (:mod:`.interrupt`)
    interrupts: int = 0

    def line(self) -> str:
        waiting = f"  waiting for {self.waiting}" if self.waiting else ""
        return (
            f"[{self.phase}] {self.elapsed_s:7.1f}s{waiting}  produced {self.produced} ({self.produced_per_s:.0f}/s)"
            f"  consumed {self.consumed} ({self.consumed_per_s:.0f}/s)  outstanding {self.outstanding}"
            f"  consumers {self.consumers}  faults {self.faults}  violations {self.violations}"
            f"  events {self.events}"
        )


@dataclass(frozen=True)
class SoakResult:
    """Everything a soak produced.  ``verdict`` is the full check of the chunks (None if it could not run)."""

    plan: SoakPlan
    target: str
    topic: str
    verdict: Any
    trace_dir: Path
    out_dir: Path
    duration_s: float
    drained: bool
    quiet: bool
    counters: Counters
    faults: dict[str, int]
    live_violations: int
    live_kinds: dict[str, int]
    throughput: list[dict[str, float]]
    steps: dict[str, int]
    failed_steps: tuple[StepOutcome, ...] = ()
    notes: tuple[str, ...] = ()
    interrupted: bool = False
    events: int = 0
    artifacts: dict[str, Path] = field(default_factory=dict)
    #: the broker stopped serving (:class:`~.stall.Stall`): a ``stalled`` violation in the verdict, and the
    #: failure that ended the load is a finding, not a harness failure
    stall: Any = None

    @property
    def exit_code(self) -> int:
        """As ``keyshared run``: 0 valid, 1 violations, 4 no verdict (unknown), 130 interrupted."""
        if self.interrupted:
            return 130
        if self.verdict is None or str(getattr(self.verdict, "validity", "")) == "unknown":
            return 4
        return 0 if self.verdict.valid else 1

    def violation_kinds(self) -> list[str]:
        if self.verdict is None:
            return []
        return sorted({str(getattr(v.kind, "value", v.kind)) for v in self.verdict.violations})

    def summary(self) -> dict[str, Any]:
        """The JSON summary (also ``summary.json``)."""
        c = self.counters
        verdict = self.verdict
        return {
            "plan": self.plan.to_dict(),
            "target": self.target,
            "topic": self.topic,
            "valid": None if verdict is None else bool(verdict.valid),
            "validity": None if verdict is None else str(verdict.validity),
            "violation_kinds": self.violation_kinds(),
            "counts": {} if verdict is None else dict(verdict.counts),
            "exit_code": self.exit_code,
            "interrupted": self.interrupted,
            "drained": self.drained,
            "quiet": self.quiet,
            "events": self.events,
            "published_ok": c.published_ok,
            "published_info": c.published_info,
            "published_fail": c.published_fail,
            "received": c.received,
            "acknowledged": c.acked_expected,
            "expected": c.expected_uids,
            "faults": dict(sorted(self.faults.items())),
            "live_violations": self.live_violations,
            "live_kinds": dict(sorted(self.live_kinds.items())),
            "steps": dict(sorted(self.steps.items())),
            "failed_steps": [{"do": s.do, "note": s.note} for s in self.failed_steps],
            "notes": list(self.notes),
            "throughput": self.throughput,
            "duration_s": round(self.duration_s, 3),
            "artifacts": {name: str(path) for name, path in sorted(self.artifacts.items())},
            "stall": None if self.stall is None else self.stall.to_dict(),
        }


class SoakRecorder(Recorder):
    """The driver's recorder with counters whose memory is what is outstanding, not what was ever published.

    Each soak message is sent once, under a uid of its own; the counters keep the uids published ``ok`` and
    not yet acknowledged (and the few acknowledged before their receipt arrived), instead of every uid.
    """

    def __init__(self, writer: TraceWriter, topic: str, subscription: str) -> None:
        self._open_uids: set[str] = set()  # published ok, not yet acknowledged
        self._early_acks: set[str] = set()  # acknowledged before their publish receipt
        self._ok_count = 0
        super().__init__(writer, topic, subscription)

    def _observe(self, row: Row) -> None:
        with self._lock:
            op = row[2]
            if op == "receive":
                self._received += 1
                self._received_by[row[5] or ""] += 1
                self._last_receive_ns = row[1]
            elif op == "ack":
                self._acked += 1
                uid = row[10]
                if uid is not None:
                    if uid in self._open_uids:
                        self._open_uids.discard(uid)
                        self._acked_expected += 1
                    elif len(self._early_acks) < 1_000_000:
                        self._early_acks.add(uid)
            elif op == "publish":
                result = row[11] or "ok"
                self._published[result] += 1
                uid = row[10]
                if result == "ok" and uid is not None:
                    self._ok_count += 1
                    if uid in self._early_acks:
                        self._early_acks.discard(uid)
                        self._acked_expected += 1
                    else:
                        self._open_uids.add(uid)

    def _expected_uids(self) -> int:
        """A count, not the set of uids: the soak forgets settled uids so its memory stays bounded."""
        return self._ok_count

    def all_acked(self) -> bool:
        with self._lock:
            return not self._open_uids

    @property
    def outstanding(self) -> int:
        with self._lock:
            return len(self._open_uids)


def check_soak_plan(target: Target, plan: SoakPlan) -> None:
    """Raise (exit code 2) when ``target`` cannot do what ``plan`` asks; call before starting the target."""
    if "restart" in plan.faults and not target.capabilities.broker_restart:
        reason = target.capabilities.reasons.get("broker_restart", "it cannot restart its broker")
        raise UnsupportedByTarget(f"Target {target.name!r} cannot take the fault 'restart': {reason}.")
    if plan.net_faults and not isinstance(target, PulsarTarget):
        raise UnsupportedByTarget(
            f"Target {target.name!r} has no network connections to fault; the faults"
            f" {', '.join(plan.net_faults)} need a broker reached over TCP (pulsar-lite, pulsar://HOST:PORT)."
        )


def resolve_auto(target: Target, plan: SoakPlan) -> tuple[SoakPlan, list[str]]:
    """The plan with its ``auto`` choices made for ``target``, and a note for each trap it steers clear of.

    ``publish auto``: sync sends where pipelined sends are a known trap (``ClientQuirks.sync_publish``), else
    mixed.  Behaviours left to the default (all): without ``nack`` where a nack redelivery stops the
    subscription for good (``ClientQuirks.nack_stalls``): a soak that stalls in its first seconds judges
    nothing after them.  Asked for explicitly, they are used as asked (and the trap shows in the verdict).
    """
    quirks = getattr(target, "quirks", None)
    notes: list[str] = []
    if plan.publish == "auto":
        sync = bool(getattr(quirks, "sync_publish", False))
        plan = dataclasses.replace(plan, publish="sync" if sync else "mixed")
        if sync:
            notes.append(
                f"publish auto: sync sends only (pipelined sends stall {target.name}'s Key_Shared dispatch;"
                " --publish mixed to see it)"
            )
    if not plan.behaviours and getattr(quirks, "nack_stalls", False):
        plan = dataclasses.replace(plan, behaviours=tuple(b for b in BEHAVIOUR_LABELS if b != "nack"))
        notes.append(
            f"behaviours: all but nack (a nack redelivery stops {target.name}'s Key_Shared dispatch for good;"
            " --behaviours with nack to see it)"
        )
    return plan, notes


def run_soak(
    target: Target,
    plan: SoakPlan,
    *,
    out_dir: str | Path,
    profile: Any = None,
    live_check: bool = True,
    status: Callable[[SoakStatus], None] | None = None,
    status_every_s: float = 1.0,
    stop: threading.Event | None = None,
    buckets: int | None = None,
) -> SoakResult:
    """Soak ``target`` (already started, see :func:`~pytest_keyshared.targets.open_target`) as ``plan`` says.

    ``status`` is called about every ``status_every_s`` seconds of wall time; setting ``stop`` ends the load
    early (then drain and verdict, as at the planned end).  ``KeyboardInterrupt`` ends it too: the trace is
    completed, the chunks are checked, and the result says ``interrupted`` (exit code 130).  ``buckets``: the
    chunks are also stored in the bucketed layout of that many buckets once the trace has ended
    (``trace-buckets/``, :func:`conformance.trace.buckets.write_bucketed_copy`).
    """
    if not isinstance(plan, SoakPlan):
        raise InvalidArgument(f"Expected a conformance.soak.SoakPlan but got {type(plan).__name__}.")
    check_soak_plan(target, plan)
    plan, notes = resolve_auto(target, plan)
    run = _SoakRun(
        target, plan, out_dir=Path(out_dir), profile=profile, live_check=live_check, status=status, stop=stop
    )
    run.notes.extend(notes)
    run.status_every_s = status_every_s
    run.buckets = buckets
    return run.execute_soak()


class _SoakRun(_Run):
    """The soak on the run loop's shape (:class:`~pytest_keyshared.driver.run_loop.RunLoop`): its hooks below."""

    trace_name = "trace"  #: a directory of chunks
    returns_on_interrupt = True  #: Ctrl-C: the chunks are checked, and the result says ``interrupted`` (130)
    soak_result: SoakResult  #: made by :meth:`_finish`

    def __init__(
        self,
        target: Target,
        plan: SoakPlan,
        *,
        out_dir: Path,
        profile: Any,
        live_check: bool,
        status: Callable[[SoakStatus], None] | None,
        stop: threading.Event | None,
    ) -> None:
        settings = Settings(
            receiver_queue=plan.receiver_queue,
            drain_timeout_ms=plan.drain_timeout_ms,
            drain_quiet_ms=5_000,
            quiet_ms=1_000,
        )
        scenario = Scenario(name="soak", steps=(), subscription=SubscriptionSettings(), settings=settings)
        super().__init__(
            target, scenario, seed=plan.seed, out_dir=out_dir, profile=profile, live_check=live_check, progress=None
        )
        self.plan = plan
        self.generator = SoakGenerator(
            plan, can_crash=target.capabilities.crash_consumer, can_restart=target.capabilities.broker_restart
        )
        self.status_cb = status
        self.status_every_s = 1.0
        self.stop_event = stop or threading.Event()
        self.step_counts: dict[str, int] = {}
        self.failed: list[StepOutcome] = []
        self.faults: dict[str, int] = {}
        self.series: list[dict[str, float]] = []
        self.phase = "load"
        self._status_lock = threading.Lock()
        self._status_done = threading.Event()  #: set once the run has ended: the status thread stops
        self._sample_second = 0
        self._sample_counts = (0, 0)
        self.live_count: LiveCount | None = None
        self._live_final: tuple[int, dict[str, int]] | None = None  #: the sink's count, once it finished
        self._live_at_end: tuple[int, dict[str, int]] = (0, {})  #: the live count when the run ended
        self._sink_failed: str | None = None
        self.nemesis: Any = None
        self.interrupts = Interrupts()
        self._waiting: tuple[str, float | None] | None = None  #: what the teardown waits for, until when (monotonic)
        self._in_step: tuple[str, float] | None = None  #: the step under way and when it began (monotonic)
        self._failed_step: Step | None = None  #: the step that raised, if one did
        self.stall_watch: StallWatch | None = None
        self.stall: Stall | None = None  #: the broker stopped serving (:meth:`_judge_stall`)
        self._stall_failure: BaseException | None = None  #: the failure the stall explains

    # --- hooks into the driver's run loop ---------------------------------------------------------------

    def _stop_workers(self) -> None:
        """Tell every consumer loop to stop first, then join them (the driver joins one loop at a time)."""
        for loop in list(getattr(self.scheduler, "_threads", {}).values()):
            loop.stopping.set()
            loop.wake.set()
        super()._stop_workers()

    def _close_handles(self) -> None:
        """Close every consumer at once, each in a thread, bounded: a stuck broker answers no close (and a second
        Ctrl-C stops the waiting)."""
        workers = list(self.workers.values())
        self.workers.clear()
        threads = [threading.Thread(target=_close_quietly, args=(w.handle,), daemon=True) for w in workers]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + CLOSE_BOUND_S
        if threads:
            self._wait_for(f"{len(threads)} consumer(s) to close", deadline)
        for thread in threads:
            join_unless(thread, deadline, lambda: self.interrupts.stop_waiting_for_clients)
        stuck = sum(thread.is_alive() for thread in threads)
        if stuck:
            self.notes.append(f"{stuck} consumer(s) {_why_left(deadline)} (left to the client)")

    def _apply(self, step: Step) -> tuple[bool, str]:
        """The driver's step, noted for the status line while it runs; a Ctrl-C that the client library turned
        into a failed call (``pulsar.Interrupted``) still ends the load once the step returns."""
        self._in_step = (step.do, time.monotonic())
        try:
            outcome = super()._apply(step)
        except Exception:
            self._failed_step = step  # whose call failed, for the stall judgement
            raise
        finally:
            self._in_step = None
        if self.interrupts.level and self.interrupts.load_running:
            raise KeyboardInterrupt
        return outcome

    def _crashable(self, handle: str) -> bool:
        return handle in self.generator.crashable

    def _do_restart_broker(self, step: Any) -> tuple[bool, str]:
        self.faults["restart"] = self.faults.get("restart", 0) + 1
        return super()._do_restart_broker(step)

    def _header(self) -> TraceHeader:
        header = super()._header()
        extra = {**header.extra, "soak": self.plan.to_dict(), "publish_mode": "mixed"}
        return dataclasses.replace(header, extra=extra)

    # --- the run ----------------------------------------------------------------------------------------

    def _open_session(self) -> Session:
        if self.plan.net_faults and isinstance(self.target, PulsarTarget):
            from pytest_keyshared.soak.nemesis import ProxiedSession

            return ProxiedSession(self.target, self.topic, self.out_dir, self.nonce)
        return open_session(self.target, self.topic, self.out_dir, self.nonce, seed=self.seed)

    def execute_soak(self) -> SoakResult:
        """The run loop's :meth:`~.run_loop.RunLoop.execute` with Ctrl-C handled in steps (:mod:`.interrupt`);
        the soak's own result, made in :meth:`_finish`.  A failure that a stall of the broker explains
        (:mod:`.stall`) is a finding of the result, not raised."""
        try:
            with self.interrupts.installed():
                self.execute()
        except Exception as exc:
            if exc is not self._stall_failure:
                raise
        return self.soak_result

    def _save_plan(self) -> Path:
        path = self.out_dir / "soak.json"
        path.write_text(json.dumps(self.plan.to_dict(), indent=2, sort_keys=True) + "\n")
        return path

    def _open(self, trace_path: Path) -> None:
        """The session (proxied, for network faults), the writer and where its rows go: chunks and the live
        check inline against the model, a sink process fed in batches against real brokers; then the status
        thread."""
        out = self.out_dir
        self.log_since = self.target.log_position()
        self.session = self._open_session()
        self.session.keep_memory_bounded()
        header = self._header()
        deterministic = self.target.deterministic
        # the scheduler's clock is the session's (the model's simulated one, or the wall clock read directly)
        self.writer = TraceWriter(None, header, clock=self.session.scheduler.now_ns, keep=False)
        self.chunks: ChunkWriter | None = None
        self.pipeline: TracePipeline | None = None
        self.sink: TraceSink | None = None
        self._status_path = out / ".live-status"
        self.resolved_profile = _resolve_profile(self.profile)
        if deterministic:  # no threads: everything inline, in trace order
            self.chunks = ChunkWriter(trace_path, header, rows=CHUNK_ROWS)
            self.writer.add_row_listener(self.chunks.append_row)
            if self.live_check:
                self.live_count = LiveCount(header, self.resolved_profile)
                self.writer.add_listener(self.live_count.feed)
        else:  # chunks and live check in a process of their own, fed in batches off the clients' threads
            self.sink = TraceSink(
                trace_path,
                header,
                rows=CHUNK_ROWS,
                max_age_s=CHUNK_MAX_AGE_S,
                live=self.live_check,
                profile=self.resolved_profile,
                status_path=self._status_path,
                log_path=out / "checker.log",
            )
            self.pipeline = TracePipeline(
                None, header, [], event_listeners=[self.sink.feed], batch=1024, flush_every_s=_HAND_OVER_S
            )
            self.writer.add_row_listener(self.pipeline.append)  # rows: no Event is made in this process
        self.recorder = SoakRecorder(self.writer, self.topic, self.scenario.subscription.name)
        if not deterministic:  # what the stall judgement needs (real brokers only: the model never stops serving)
            self.stall_watch = StallWatch()
            self.writer.add_row_listener(self.stall_watch.observe)
        self.session.watch_faults(self.recorder)
        self.scheduler = self.session.scheduler
        self.scheduler.on_tick(self._tick)
        self.started_ns = self.scheduler.now_ns()
        if self.status_cb is not None:
            threading.Thread(target=self._status_loop, name="ks-soak-status", daemon=True).start()

    def _before_steps(self) -> None:
        if self.sink is not None and not self.sink.wait_ready(_SINK_READY_S):
            self.notes.append(f"the trace sink was not ready within {_SINK_READY_S:g}s; the load started anyway")
        self._start_nemesis()

    def _steps(self) -> Iterator[Step]:
        """The generator's steps, each when due, until the duration, the message count or a stop; after each,
        nothing kept of its messages (the soak never resends) and the throughput sampled."""
        plan = self.plan
        bound_ns = None if plan.duration_s is None else int(plan.duration_s * 1e9)
        generator = self.generator
        for timed in generator:
            due_ns = timed.at_ms * 1_000_000
            if bound_ns is not None and due_ns >= bound_ns:
                self._wait_until_ns(bound_ns)
                return
            self._wait_until_ns(due_ns)
            if self.stop_event.is_set():
                return
            if bound_ns is not None and self.scheduler.now_ns() - self.started_ns >= bound_ns:
                return  # running late (a slow broker, a fault): the duration holds all the same
            yield timed.step
            self.sent.clear()
            self._tick()
            if plan.messages is not None and generator.published >= plan.messages:
                return

    def _record_step(self, outcome: StepOutcome) -> None:
        """A count per kind of step, and the first failed ones: a soak's steps are too many to keep."""
        self.step_counts[outcome.do] = self.step_counts.get(outcome.do, 0) + 1
        if not outcome.ok and len(self.failed) < _KEEP_FAILED:
            self.failed.append(outcome)

    def _after_steps(self) -> None:
        self._check_broker_up()
        self._judge_stall(None)  # a broker that stopped serving before the end of the load
        self._stop_nemesis()
        self._status("drain")
        self.quiet = self._drain()
        self.drained = not self.unreachable

    def _close(self, interrupted: bool, failure: BaseException | None) -> None:
        """Stop the load, write ``end``, close the consumers, the writer, the chunks or the sink, the session:
        each part bounded, the slow ones noted; what it waits for is in the status (``stopping``).  A failure
        that a stall of the broker explains is judged here, before the consumers are closed."""
        self.interrupts.load_running = False
        if failure is not None and not interrupted:
            self._judge_stall(failure)
        self._status("stopping")
        timer = _Timer(self.notes)
        if self.nemesis is not None:
            self._wait_for("the nemesis to heal its faults", time.monotonic() + 10.0)
        self._stop_nemesis()
        self._wait_for("the consumer loops to stop", None)
        self._stop_workers()
        timer.lap("stopping the consumer loops")
        self.notes.extend(self.session.stop_watching())
        timer.lap("reading the client logs")
        self._end(interrupted, failure)
        self._close_handles()
        timer.lap("closing the consumers")
        self.writer.close()
        if self.live_count is not None:
            self.live_count.close()
        self._close_trace()
        if self.chunks is not None:
            self.chunks.close()
        closer = threading.Thread(target=_close_quietly, args=(self.session,), daemon=True)
        closer.start()
        deadline = time.monotonic() + CLOSE_BOUND_S
        self._wait_for("the producers to close", deadline)
        join_unless(closer, deadline, lambda: self.interrupts.stop_waiting_for_clients)
        if closer.is_alive():
            self.notes.append(f"the producers {_why_left(deadline)} (left to the client)")
        timer.lap("closing the session")
        self._waiting = None

    def _close_trace(self) -> None:
        """The pipeline's last rows to the sink and the sink's last chunk (bounded; a third Ctrl-C stops it)."""
        try:
            with self.interrupts.breakable():
                if self.pipeline is not None:
                    self._wait_for("the trace's last events to reach the trace sink", time.monotonic() + 120.0)
                    if not self.pipeline.close():
                        self.notes.append("the trace pipeline did not finish in time; the last events may be missing")
                    self.notes.extend(f"trace sink: {e}" for e in self.pipeline.errors)
                if self.sink is not None:
                    self._wait_for("the trace sink's last chunk", time.monotonic() + _SINK_BOUND_S)
                self._finish_sink()
        except KeyboardInterrupt:
            self._sink_failed = "stopped (Ctrl-C)"
            self.notes.append(
                "the trace sink's last chunk was not waited for (Ctrl-C): the trace chunks may lack the last"
                " events, so the run has no verdict"
            )

    def _wait_for(self, what: str, deadline: float | None) -> None:
        """The teardown now waits for ``what`` (until ``deadline``, monotonic): the status line says so."""
        self._waiting = (what, deadline)
        self._emit_status()

    def _judge(self, trace_path: Path) -> Any:
        """The full Python check of the chunks (the live check only counted), with the stall if there was one;
        a third Ctrl-C stops it (no verdict)."""
        self._live_at_end = self._live_result()
        self._status("check")
        try:
            with self.interrupts.breakable():
                verdict = self._final_verdict(trace_path, self.resolved_profile)
        except KeyboardInterrupt:
            self.notes.append("the check was stopped (Ctrl-C): no verdict")
            return None
        finally:
            self._status_done.set()
        if verdict is not None and self.stall is not None:
            verdict = with_stall(verdict, self.stall, end_i=self.writer.count - 1)  # the end event is the last
        return verdict

    def _check_broker_up(self) -> None:
        """A broker whose port no longer accepts connections died or cannot be reached: a target failure (exit
        code 3), raised before the drain (nothing could be delivered); the trace is still ended and judged."""
        if self.stall_watch is None or not isinstance(self.target, PulsarTarget):
            return
        url = self.target.service_url
        if not broker_answers_tcp(url):
            raise TargetError(
                f"the broker at {url} stopped accepting connections during the load (it died or cannot be reached);"
                " what was recorded is judged in verdict.json"
            )

    def _judge_stall(self, failure: BaseException | None) -> None:
        """Whether the broker has stopped serving (:mod:`.stall`): at the end of the load, or on the ``failure``
        that ended it; if so, the stall is a finding (and that failure is not raised)."""
        watch = self.stall_watch
        if watch is None or self.stall is not None:
            return
        stall = watch.judge(
            failure,
            service_url=self.target.service_url if isinstance(self.target, PulsarTarget) else None,
            started_ns=self.started_ns,
            now_ns=self.scheduler.now_ns(),
            unacked=self.recorder.outstanding if isinstance(self.recorder, SoakRecorder) else 0,
            consumers=list(self.workers),
            subscription=self.scenario.subscription.name,
            call_timeout_s=float(getattr(getattr(self.target, "quirks", None), "operation_timeout_s", MIN_SILENCE_S)),
            failure_client=_client_of(self._failed_step),
        )
        if stall is not None:
            self.stall, self._stall_failure = stall, failure
            self.notes.append(f"{stall.sentence()}: a finding, not a harness failure")

    def _finish(self, result: RunResult) -> None:
        """The report page, the soak's result and ``summary.json``."""
        self._sample(final=True)
        live_violations, live_kinds = self._live_at_end
        report_notes: list[str] = []
        report = self._write_report(result, report_notes)
        self.soak_result = SoakResult(
            plan=self.plan,
            target=self.target.name,
            topic=self.topic,
            verdict=result.verdict,
            trace_dir=result.trace_path,
            out_dir=self.out_dir,
            duration_s=time.monotonic() - self.started,
            drained=result.drained,
            quiet=result.quiet,
            counters=self.recorder.counters(),
            faults=dict(self.faults),
            live_violations=live_violations,
            live_kinds=live_kinds,
            throughput=self.series,
            steps=dict(self.step_counts),
            failed_steps=tuple(self.failed),
            notes=(*result.notes, *report_notes),
            interrupted=result.interrupted or self.interrupts.level > 0,
            events=self.writer.count,
            artifacts={**self._artifacts(result), **({"report": report} if report is not None else {})},
            stall=self.stall,
        )
        summary = json.dumps(self.soak_result.summary(), indent=2, sort_keys=True)
        (self.out_dir / "summary.json").write_text(summary + "\n")

    def _report(self, final: bool = False) -> None:
        """The run loop's progress reports: only its final one is a status report (``done``), the last; the
        soak reports its phases itself (:meth:`_status`) and its status thread the rest."""
        if final:
            self._status_done.set()  # (already, unless the run failed before its check)
            self._status("done")
            with contextlib.suppress(OSError):
                self._status_path.unlink()

    def _start_nemesis(self) -> None:
        from pytest_keyshared.soak.nemesis import Nemesis, ProxiedSession

        if not isinstance(self.session, ProxiedSession):
            return
        self.nemesis = Nemesis(
            self.session,
            self.recorder,
            self.generator.nemesis(),
            lambda: list(self.workers),
            started=time.monotonic() - (self.scheduler.now_ns() - self.started_ns) / 1e9,
        )
        self.nemesis.start()

    def _stop_nemesis(self) -> None:
        nemesis, self.nemesis = self.nemesis, None
        if nemesis is None:
            return
        nemesis.stop()
        for kind, count in nemesis.counts.items():
            self.faults[kind] = self.faults.get(kind, 0) + count
        self.notes.extend(f"nemesis: {e}" for e in nemesis.errors)

    def _wait_until_ns(self, offset_ns: int) -> None:
        """Let the consumers work until ``offset_ns`` after the start on the run's clock (or a stop)."""
        remaining_ms = (self.started_ns + offset_ns - self.scheduler.now_ns()) // 1_000_000
        if remaining_ms <= 0:
            return
        if self.target.deterministic:
            self.scheduler.sleep(int(remaining_ms))
        else:
            self.scheduler.wait_until(self.stop_event.is_set, int(remaining_ms))

    # --- status, throughput -----------------------------------------------------------------------------

    def _tick(self) -> None:
        self._sample()

    def _status_loop(self) -> None:
        """The status reporter's thread: a report every ``status_every_s`` of wall time, whatever blocks the run,
        and one at once (within 0.1 s) when the soak is interrupted."""
        seen, last = 0, time.monotonic()
        while not self._status_done.wait(0.1):
            level = self.interrupts.level
            if level != seen or time.monotonic() - last >= self.status_every_s:
                seen, last = level, time.monotonic()
                self._emit_status()

    def _sample(self, final: bool = False) -> None:
        """One row per whole second of the run's clock (messages published ok and received in it); ``final``
        adds the part-second at the end."""
        elapsed_ns = self.scheduler.now_ns() - self.started_ns
        second = elapsed_ns // 1_000_000_000
        c = self.recorder.counters()
        if second > self._sample_second:
            n = second - self._sample_second
            d_prod = (c.published_ok - self._sample_counts[0]) / n
            d_cons = (c.received - self._sample_counts[1]) / n
            for k in range(1, n + 1):
                self.series.append(
                    {"t": float(self._sample_second + k), "produced": round(d_prod, 1), "consumed": round(d_cons, 1)}
                )
            self._sample_second = second
            self._sample_counts = (c.published_ok, c.received)
        elif final:
            part = elapsed_ns / 1e9 - self._sample_second
            d_prod = c.published_ok - self._sample_counts[0]
            d_cons = c.received - self._sample_counts[1]
            if part > 0.05 and (d_prod or d_cons):
                self.series.append(
                    {
                        "t": round(elapsed_ns / 1e9, 3),
                        "produced": round(d_prod / part, 1),
                        "consumed": round(d_cons / part, 1),
                    }
                )

    def _status(self, phase: str) -> None:
        """The run is now in ``phase``: a status report says so."""
        self.phase = phase
        self._emit_status()

    def _emit_status(self) -> None:
        """One status report (from the run's thread or the status thread, one at a time)."""
        if self.status_cb is None:
            return
        with self._status_lock:
            self._emit_status_locked()

    def _emit_status_locked(self) -> None:
        assert self.status_cb is not None
        now = time.monotonic()
        c = self.recorder.counters()
        recent = self.series[-5:]
        produced_rate = sum(r["produced"] for r in recent) / len(recent) if recent else 0.0
        consumed_rate = sum(r["consumed"] for r in recent) / len(recent) if recent else 0.0
        phase = self.phase
        if self.interrupts.level and phase in ("load", "drain"):
            phase = "stopping"  # interrupted: the run's thread is on its way out of the load
        waiting = ""
        in_step = self._in_step
        if phase == "stopping" and self.interrupts.load_running and in_step is not None:
            # the run's thread is still in a client call (each bounded by the client's timeouts)
            waiting = f"the {in_step[0]} under way to return ({now - in_step[1]:.0f}s so far; its calls time out)"
        elif phase == "stopping" and self._waiting is not None:
            what, deadline = self._waiting
            waiting = what if deadline is None else f"{what} ({max(0.0, deadline - now):.0f}s left)"
        with contextlib.suppress(Exception):
            self.status_cb(
                SoakStatus(
                    elapsed_s=now - self.started,
                    produced_per_s=produced_rate,
                    consumed_per_s=consumed_rate,
                    produced=c.published_ok,
                    consumed=c.received,
                    outstanding=self.recorder.outstanding if isinstance(self.recorder, SoakRecorder) else 0,
                    consumers=len(self.workers),
                    faults=sum(self.faults.values()) + (sum(self.nemesis.counts.values()) if self.nemesis else 0),
                    violations=self._live_result()[0],
                    events=c.events,
                    phase=phase,
                    waiting=waiting,
                    interrupts=self.interrupts.level,
                )
            )

    def _live_result(self) -> tuple[int, dict[str, int]]:
        if self.live_count is not None:
            return self.live_count.violations, dict(self.live_count.kinds)
        if self._live_final is not None:
            return self._live_final[0], dict(self._live_final[1])
        try:
            text = self._status_path.read_text(encoding="utf-8").split()
            return int(text[1]), {}
        except (OSError, IndexError, ValueError):
            return 0, {}

    # --- the end ----------------------------------------------------------------------------------------

    def _finish_sink(self) -> None:
        """Wait (bounded) for the sink's last chunk; a sink that failed leaves the trace incomplete."""
        if self.sink is None:
            return
        try:
            summary = self.sink.finish(_SINK_BOUND_S)
        except SinkError as exc:
            self._sink_failed = str(exc)
            self.notes.append(f"{exc}: the trace chunks may lack events, so the run has no verdict")
            return
        self._live_final = (int(summary["violations"]), dict(summary["kinds"]))
        self.notes.extend(summary["notes"])

    def _final_verdict(self, trace_dir: Path, profile: Any) -> Any:
        if self.live_count is not None:
            self.notes.extend(self.live_count.notes)
        if self._sink_failed is not None:
            return None
        try:
            from conformance.checks import check_trace
        except ImportError as exc:
            self.notes.append(f"trace not judged: no checker installed ({exc})")
            return None
        try:
            header, events = read_chunks(trace_dir)
            return check_trace(events, header=header, profile=profile)
        except Exception as exc:  # an unreadable trace (a chunk lost to a crash): no verdict, exit code 4
            self.notes.append(f"the trace chunks could not be checked: {type(exc).__name__}: {exc}")
            return None

    def _write_report(self, result: RunResult, notes: list[str]) -> Path | None:
        """``report.html`` (:func:`pytest_keyshared.report.write_report`) of the chunks and the verdict, when there
        is one.  Its pass over the trace is the checker's columnar fast path and summarises a large trace
        (``docs/report.md``, "Large traces"): a fraction of the check's time, a page of bounded size.  A page
        that cannot be drawn is a note, never the soak's outcome; a third Ctrl-C skips it."""
        if result.verdict is None:
            return None
        from pytest_keyshared.report import REPORT_NAME, write_report

        self._status("report")
        plan = self.plan
        bound = f"{plan.messages} messages" if plan.messages else f"{plan.duration_s:g}s"
        title = f"keyshared soak: {self.target_name}, {bound}, seed {plan.seed}"
        try:
            with self.interrupts.breakable():
                return write_report(
                    result.trace_path, self.out_dir / REPORT_NAME, result.verdict, title=title, writer="keyshared soak"
                )
        except KeyboardInterrupt:
            notes.append("no report page: stopped (Ctrl-C)")
        except Exception as exc:  # the soak's verdict stands; the page is a convenience
            notes.append(f"no report page: {type(exc).__name__}: {exc}")
        return None

    def _artifacts(self, result: RunResult) -> dict[str, Path]:
        """The run's artifacts (:attr:`RunResult.artifacts`), its plan named ``plan``, and ``summary.json``."""
        out = {"trace": result.trace_path, "plan": result.scenario_path, "summary": self.out_dir / "summary.json"}
        out.update((name, path) for name, path in result.artifacts.items() if name not in ("trace", "scenario"))
        return out


def _client_of(step: Step | None) -> str:
    """The nemesis's name of the client a step's calls go through: its consumer, or ``producers``."""
    if step is None:
        return ""
    consumer = getattr(step, "consumer", None)
    return str(consumer) if consumer else (PRODUCERS_CLIENT if step.do in ("publish", "resend") else "")


def _why_left(deadline: float) -> str:
    """Why clients were left closing: the bound expired, or a second Ctrl-C stopped the waiting."""
    if time.monotonic() < deadline:
        return "were not waited for (Ctrl-C)"
    return f"did not close within {CLOSE_BOUND_S:g}s"


def _close_quietly(handle: Any) -> None:
    with contextlib.suppress(Exception):
        handle.close()


class _Timer:
    """Notes the teardown phases that took long (a stuck broker shows here)."""

    def __init__(self, notes: list[str]) -> None:
        self.notes = notes
        self.last = time.monotonic()

    def lap(self, what: str) -> None:
        now = time.monotonic()
        if now - self.last > 2.0:
            self.notes.append(f"teardown: {what} took {now - self.last:.1f}s")
        self.last = now


def _resolve_profile(profile: Any) -> Any:
    if profile is None or not isinstance(profile, str):
        return profile
    from conformance.checks import get_profile

    return get_profile(profile)
