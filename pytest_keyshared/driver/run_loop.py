"""The shape of every run, written once: Key_Shared runs (:mod:`.run`), failover runs (:mod:`.failover_run`)
and soaks (:mod:`pytest_keyshared.soak.runner`) differ in how they reach the broker, where their steps come
from and how they apply one, not in how a run goes.

:meth:`RunLoop.execute` is that shape:

1. the plan goes into the artifacts directory first (:meth:`RunLoop._save_plan`: ``scenario.toml``), then the
   run opens its side of the broker and its trace writer (:meth:`RunLoop._open`), outside the guard below: a
   run that cannot start raises at once;
2. the steps (:meth:`RunLoop._steps`: the scenario's) run one at a time in the calling thread, each reported to
   the progress callback, timed and framed by the trace events it recorded (:class:`StepOutcome`, kept by
   :meth:`RunLoop._record_step`), between :meth:`RunLoop._before_steps` and :meth:`RunLoop._after_steps` (the
   drain, where the run has one);
3. a failure or Ctrl-C stops the steps and is noted (``run stopped: ...``), and the run still ends:
   :meth:`RunLoop._close` writes the ``end`` event and closes what is open, so the trace is always complete;
4. then the verdict (:meth:`RunLoop._judge`), ``verdict.json``, the :class:`RunResult`, what the run adds to it
   (:meth:`RunLoop._finish`) and the final progress report, and only then is the failure raised again (Ctrl-C
   too, unless the run ``returns_on_interrupt``: then its result says ``interrupted``).

Every wait is bounded inside the step (or drain) that waits; a bound that expires is noted in the step's
outcome and the run goes on.
"""

from __future__ import annotations

import abc
import contextlib
import json
import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.scenarios import Scenario, Step, dump_scenario
from conformance.trace import TraceWriter
from pytest_keyshared.driver.progress import Progress
from pytest_keyshared.driver.recorder import Counters

__all__ = ["RunLoop", "RunResult", "StepOutcome", "write_verdict"]


@dataclass(frozen=True, slots=True)
class StepOutcome:
    """How one step went: ``ok`` is False when a bounded wait expired or the broker refused something."""

    index: int
    do: str
    ok: bool
    duration_s: float
    note: str = ""
    #: trace events ``first_event <= i < end_event`` were recorded while the step ran
    first_event: int = 0
    end_event: int = 0


@dataclass(frozen=True)
class RunResult:
    """Everything a run produced.  ``verdict`` is the checker's (None only if no checker is installed)."""

    scenario: str
    target: str
    seed: int
    topic: str
    verdict: Any
    trace_path: Path
    scenario_path: Path
    verdict_path: Path | None
    broker_log: Path | None
    artifacts_dir: Path
    duration_s: float
    drained: bool
    quiet: bool
    counters: Counters
    steps: tuple[StepOutcome, ...] = ()
    notes: tuple[str, ...] = ()
    interrupted: bool = False
    #: the trace in the bucketed layout too (``buckets`` set: :meth:`RunLoop._write_layout`), if written
    bucketed_path: Path | None = None

    @property
    def valid(self) -> bool | None:
        return None if self.verdict is None else bool(self.verdict.valid)

    @property
    def exit_code(self) -> int:
        """0 valid, 1 violations found, 3 no verdict (no checker could judge the trace), 4 verdict unknown."""
        if self.verdict is None:
            return 3
        return int(self.verdict.exit_code)

    @property
    def artifacts(self) -> dict[str, Path]:
        out = {"trace": self.trace_path, "scenario": self.scenario_path}
        if self.bucketed_path is not None:
            out["trace_buckets"] = self.bucketed_path
        if self.verdict_path is not None:
            out["verdict"] = self.verdict_path
        if self.broker_log is not None:
            out["broker_log"] = self.broker_log
        files = (
            ("client_log", "pulsar-client.log"),
            ("consumer_process_log", "consumer-processes.log"),
            ("checker_log", "checker.log"),
        )
        for name, file in files:
            path = self.artifacts_dir / file
            if path.exists() and path.stat().st_size:
                out[name] = path
        return out

    def violation_kinds(self) -> list[str]:
        """Distinct violation kinds of the verdict, sorted."""
        if self.verdict is None:
            return []
        return sorted({str(getattr(v.kind, "value", v.kind)) for v in self.verdict.violations})


class RunLoop(abc.ABC):
    """One run of ``scenario``: :meth:`execute` is the loop; subclasses fill in the hooks.

    A subclass sets ``topic`` before :meth:`execute`, and ``writer`` in :meth:`_open`
    (the step frames count its events).  ``drained`` and ``quiet`` are what the run reports about its drain:
    set them by the time :meth:`_close` returns.
    """

    target_name: str
    topic: str
    writer: TraceWriter
    #: the run drains after its steps (:meth:`_after_steps`), which the progress counts as one more step
    drains: bool = False
    #: the trace's name in the artifacts directory (a file, or a directory of chunks)
    trace_name: str = "trace.jsonl"
    #: Ctrl-C ends the run with its result (``interrupted``) instead of raising ``KeyboardInterrupt`` again
    returns_on_interrupt: bool = False
    #: buckets of the trace's bucketed copy (``--trace-layout bucketed``, ``keyshared_trace_layout``); None: none
    buckets: int | None = None

    def __init__(
        self,
        target: Any,
        scenario: Scenario,
        *,
        seed: int,
        out_dir: Path,
        profile: Any,
        progress: Callable[[Progress], None] | None,
    ) -> None:
        self.target = target
        self.target_name = str(getattr(target, "name", target))
        self.scenario = scenario
        self.seed = seed
        self.rng = random.Random(seed)  #: the scenario's random choices (keys drawn by publish steps)
        self.profile = profile
        self.out_dir = out_dir
        self.progress_cb = progress
        self.outcomes: list[StepOutcome] = []
        self.notes: list[str] = []
        self.step_index = 0
        self.drained = self.quiet = False
        self.started = time.monotonic()

    # --- what differs -----------------------------------------------------------------------------------

    def _save_plan(self) -> Path:
        """Write what the run will do into the artifacts directory, before anything starts; its path."""
        return dump_scenario(self.scenario, self.out_dir / "scenario.toml")

    @abc.abstractmethod
    def _open(self, trace_path: Path) -> None:
        """Reach the broker and start the trace at ``trace_path`` (sets ``writer``); nothing to close on error."""

    def _before_steps(self) -> None:
        """Work before the first step that may fail like a step (and then still ends the trace)."""
        return None

    def _steps(self) -> Iterable[Step]:
        """The steps to run, in order: the scenario's.  Each is applied before the next is asked for."""
        return self.scenario.steps

    @abc.abstractmethod
    def _apply(self, step: Step) -> tuple[bool, str]:
        """Apply one step: ``(ok, note)`` for its :class:`StepOutcome`."""

    def _record_step(self, outcome: StepOutcome) -> None:
        """Keep how a step went (every outcome goes into the :class:`RunResult`)."""
        self.outcomes.append(outcome)

    def _after_steps(self) -> None:
        """Work after the last step: the drain, where the run has one."""
        return None

    @abc.abstractmethod
    def _close(self, interrupted: bool, failure: BaseException | None) -> None:
        """Write the ``end`` event and close everything; runs after a failure too."""

    @abc.abstractmethod
    def _judge(self, trace_path: Path) -> Any:
        """The verdict on the saved trace."""

    @abc.abstractmethod
    def _counters(self) -> Counters:
        """What the run published, received and acknowledged so far."""

    def _broker_log(self) -> Path | None:
        """Copy the broker's log of this run into the artifacts; its path, if there is one."""
        return None

    def _finish(self, result: RunResult) -> None:
        """What the run adds once its result is made, before the final progress report (more artifacts)."""
        return None

    # --- the run ----------------------------------------------------------------------------------------

    def execute(self) -> RunResult:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        scenario_path = self._save_plan()
        trace_path = self.out_dir / self.trace_name
        self._open(trace_path)
        interrupted = False
        failure: BaseException | None = None
        try:
            self._before_steps()
            for index, step in enumerate(self._steps(), start=1):
                self.step_index = index
                self._report()
                self._step(step)
            self._after_steps()
        except KeyboardInterrupt as exc:
            interrupted, failure = True, exc
        except Exception as exc:
            failure = exc
            self.notes.append(f"run stopped: {type(exc).__name__}: {exc}")
        finally:
            self._close(interrupted, failure)
        verdict = self._judge(trace_path)
        verdict_path = self._write_verdict(verdict)
        bucketed_path = self._write_layout(trace_path)
        result = RunResult(
            scenario=self.scenario.name,
            target=self.target_name,
            seed=self.seed,
            topic=self.topic,
            verdict=verdict,
            trace_path=trace_path,
            scenario_path=scenario_path,
            verdict_path=verdict_path,
            broker_log=self._broker_log(),
            artifacts_dir=self.out_dir,
            duration_s=time.monotonic() - self.started,
            drained=self.drained,
            quiet=self.quiet,
            counters=self._counters(),
            steps=tuple(self.outcomes),
            notes=tuple(self.notes),
            interrupted=interrupted,
            bucketed_path=bucketed_path,
        )
        self._finish(result)
        self._report(final=True)
        if failure is not None and not (interrupted and self.returns_on_interrupt):
            raise failure
        return result

    def _step(self, step: Step) -> None:
        started, first = time.monotonic(), self.writer.count
        ok, note = self._apply(step)
        self._record_step(
            StepOutcome(self.step_index, step.do, ok, time.monotonic() - started, note, first, self.writer.count)
        )

    def _write_verdict(self, verdict: Any) -> Path | None:
        return write_verdict(verdict, self.out_dir)

    def _write_layout(self, trace_path: Path) -> Path | None:
        """The ended trace stored in the bucketed layout too, beside it (``buckets`` set), by the converter's
        writer (:func:`conformance.trace.buckets.write_bucketed_copy`); its directory.  A trace the layout
        cannot hold, or a failure to write it, is a note of the run, never its failure: the trace as recorded
        and its verdict stand."""
        if self.buckets is None:
            return None
        from conformance.trace.buckets import write_bucketed_copy

        try:
            return write_bucketed_copy(trace_path, self.buckets).directory
        except (ValueError, OSError) as exc:  # (TraceFormatError is a ValueError)
            self.notes.append(f"no bucketed copy of the trace: {type(exc).__name__}: {exc}")
            return None

    def _report(self, final: bool = False) -> None:
        """Tell the progress callback where the run is (a callback that fails is ignored)."""
        if self.progress_cb is None:
            return
        total = len(self.scenario.steps) + (1 if self.drains else 0)
        index = min(self.step_index, total)
        if index == 0:
            label = "starting"
        elif index > len(self.scenario.steps):
            label = "drain"
        else:
            label = self.scenario.steps[index - 1].do
        with contextlib.suppress(Exception):
            self.progress_cb(
                Progress(
                    step=index,
                    steps=total,
                    label="done" if final else label,
                    elapsed_s=time.monotonic() - self.started,
                    counters=self._counters(),
                    final=final,
                )
            )


def write_verdict(verdict: Any, out_dir: Path) -> Path | None:
    """``verdict.json`` in ``out_dir`` (None without a verdict): every run loop writes the same file."""
    if verdict is None:
        return None
    path = out_dir / "verdict.json"
    data = verdict.to_json() if hasattr(verdict, "to_json") else verdict
    text = data if isinstance(data, str) else json.dumps(data, indent=2, sort_keys=True)
    path.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
    return path
