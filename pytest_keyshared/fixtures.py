"""What the keyshared fixtures hand to a test: the session target, a scenario runner, a checker, a recorder.

Imported only when a test asks for one of them (the plugin module stays import-light).  Every verdict that
passes through here is noted on the case (its violations, the contracts they break, the paths of trace and
scenario), which is what the summary, the JUnit properties and the results file report.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Generator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_keyshared.contracts import ContractViolation, UnknownVerdict, check_contract, contract_of_kind
from pytest_keyshared.results import ViolationSummary
from pytest_keyshared.state import CaseState, SessionState

__all__ = [
    "CAPABILITY_ALIASES",
    "Checker",
    "FailoverFactory",
    "ScenarioRunner",
    "SoakRunner",
    "TraceFactory",
    "missing_capability",
    "open_session_target",
    "target_capabilities",
]


# -- the target ----------------------------------------------------------------------------------------------


def _worker_suffix() -> str:
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    return f"-{worker}" if worker else ""


@contextlib.contextmanager
def open_session_target(config: pytest.Config, state: SessionState) -> Generator[Any, None, None]:
    """Start the session's target (a ``pytest_keyshared_make_target`` hook first, else ``open_target``).

    ``--keyshared-pulsar-version`` replaces the version the target claims (its ``claims``, which go into
    every trace header and pick the reference selector); ``--keyshared-admin-url`` goes to a
    ``pulsar://`` target.  A target that cannot start fails every case that needs it with one line naming
    the target and the cause; whatever was started is stopped when the session ends, also after a failure.
    """
    spec = state.target
    artifacts = state.artifacts / f"target{_worker_suffix()}"
    admin_url = state.value("admin_url")
    claimed = state.value("pulsar_version")
    with contextlib.ExitStack() as stack:
        try:
            manager = config.hook.pytest_keyshared_make_target(config=config, spec=spec, artifacts_dir=artifacts)
            if manager is None:
                from pytest_keyshared.targets import open_target, parse_target

                options: dict[str, Any] = {}
                if admin_url:
                    if parse_target(spec).kind != "url":
                        raise ValueError(
                            f"--keyshared-admin-url applies to pulsar://HOST:PORT targets, not to {spec!r}"
                        )
                    options["admin_url"] = admin_url
                manager = open_target(spec, artifacts_dir=artifacts, options=options)
            target = stack.enter_context(manager)
            claims = getattr(target, "claims", None)
            if claimed and claims is not None:
                target.claims = dataclasses.replace(claims, pulsar_version=str(claimed))
        except Exception as exc:
            pytest.fail(f"keyshared: cannot start target {spec!r}: {type(exc).__name__}: {exc}", pytrace=False)
        version = getattr(getattr(target, "claims", None), "pulsar_version", None)
        if version is not None and state.claimed_version is None:
            state.claimed_version = str(version)
        yield target


def target_capabilities(target: Any) -> Mapping[str, str | None]:
    """``{capability: None if present else why it is missing}``, whatever shape the target declares.

    Accepts a mapping of name -> bool / reason, a set of names, or an object with boolean attributes and an
    optional ``reasons`` mapping.  Names are normalised to hyphens (``crash_consumer`` -> ``crash-consumer``).
    """
    declared = getattr(target, "capabilities", None)
    out: dict[str, str | None] = {}
    if declared is None:
        return out
    reasons: Mapping[str, str] = getattr(declared, "reasons", None) or getattr(target, "capability_reasons", {}) or {}
    items: list[tuple[Any, Any]]
    if isinstance(declared, Mapping):
        items = list(declared.items())
    elif isinstance(declared, (set, frozenset, list, tuple)):
        items = [(name, True) for name in declared]
    else:
        names = getattr(declared, "__dataclass_fields__", None) or {
            n: None for n in dir(declared) if not n.startswith("_")
        }
        items = [(n, getattr(declared, n)) for n in names if isinstance(getattr(declared, n, None), bool)]
    normalised_reasons = {_normal(k): v for k, v in reasons.items()}
    for name, present in items:
        key = _normal(name)
        if present is True:
            out[key] = None
        else:
            why = present if isinstance(present, str) and present else normalised_reasons.get(key, "not supported")
            out[key] = str(why)
    return out


#: User-facing capability names (``keyshared_requires(...)``) -> the names targets declare, when they differ.
CAPABILITY_ALIASES: dict[str, str] = {
    "deduplication-switch": "dedup-switch",
    "crash-injection": "crash-consumer",
    "restart": "broker-restart",
}


def _normal(name: str) -> str:
    key = str(name).replace("_", "-").lower()
    return CAPABILITY_ALIASES.get(key, key)


def missing_capability(target: Any, needed: str) -> str | None:
    """Why ``target`` cannot run something needing ``needed``; ``None`` when it can."""
    caps = target_capabilities(target)
    key = _normal(needed)
    if key == "deterministic":  # a property of the target, not a declared capability
        if getattr(target, "deterministic", False):
            return None
        return f"target {_target_name(target)} lacks deterministic: a real broker's timing varies between runs"
    if key in caps and caps[key] is None:
        return None
    why = caps.get(key) or "the target does not declare it"
    return f"target {_target_name(target)} lacks {str(needed).replace('_', '-')}: {why}"


def _target_name(target: Any) -> str:
    return str(getattr(target, "name", None) or getattr(target, "spec", None) or type(target).__name__)


# -- recording verdicts on the case --------------------------------------------------------------------------


def _explanation(violation: Any) -> str:
    for attribute in ("explanation", "explain", "render"):
        value = getattr(violation, attribute, None)
        if isinstance(value, str):
            return value
        if callable(value):
            try:
                text = value()
            except TypeError:
                continue
            if isinstance(text, str):
                return text
    return str(violation)


def _kind_name(violation: Any) -> str:
    kind = getattr(violation, "kind", "unknown")
    return str(getattr(kind, "value", kind))


def _contract(violation: Any) -> str:
    try:
        return contract_of_kind(_kind_name(violation))
    except ValueError:
        return "delivery"  # a kind this plugin does not know yet: report it rather than hide it


#: Contracts judged only by the cases that declare them.  Key placement is a claim of its own: a broker
#: with another selector can keep every other promise, so only the assignment cases hold it to placement.
DECLARED_ONLY: frozenset[str] = frozenset({"assignment"})


@dataclass(frozen=True, slots=True)
class Judged:
    """A verdict as one case judges it: the violations that count, and the ones reported but not judged."""

    counted: tuple[Any, ...]
    set_aside: tuple[Any, ...]
    broken: tuple[str, ...]
    unknown: bool  #: the checker could not judge everything and the profile counts that as invalid


def judge_verdict(case: CaseState, verdict: Any) -> Judged:
    """Split a verdict's forbidden violations into those this case counts and those it sets aside."""
    declared = set(case.record.contracts)
    counted, set_aside, broken = [], [], []
    for violation in getattr(verdict, "violations", ()) or ():
        contract = _contract(violation)
        if contract in DECLARED_ONLY and contract not in declared:
            set_aside.append(violation)
            continue
        counted.append(violation)
        if contract not in broken:
            broken.append(contract)
    unknown = not counted and not set_aside and not getattr(verdict, "valid", True)
    return Judged(tuple(counted), tuple(set_aside), tuple(broken), unknown)


def note_judged(case: CaseState, judged: Judged) -> None:
    """Record the counted violations on the case (kinds, contracts, explanations) and the broken contracts."""
    for violation in judged.counted:
        key = getattr(violation, "key", None)
        summary = ViolationSummary(
            _kind_name(violation), _contract(violation), None if key is None else str(key), _explanation(violation)
        )
        case.record.add_violation(summary)
    case.record.add_broken(judged.broken)


def _render(verdict: Any) -> str:
    render = getattr(verdict, "render", None)
    if callable(render):
        text = render()
        if isinstance(text, str):
            return text
    return "\n".join(_explanation(v) for v in getattr(verdict, "violations", ()) or ())


def render_judged(verdict: Any, judged: Judged, *, max_per_kind: int = 3) -> str:
    """The failure text: the counted violations explained (capped per kind), and what was set aside."""
    lines = []
    summary = getattr(verdict, "render", None)
    first = summary().splitlines()[0] if callable(summary) else "INVALID"
    lines.append(first)
    shown: dict[str, int] = {}
    for violation in judged.counted:
        kind = _kind_name(violation)
        shown[kind] = shown.get(kind, 0) + 1
        if shown[kind] <= max_per_kind:
            lines += ["", _explanation(violation)]
    for kind, n in shown.items():
        if n > max_per_kind:
            lines.append(f"... and {n - max_per_kind} more {kind}; the verdict file lists them all")
    if judged.set_aside:
        kinds = sorted({_kind_name(v) for v in judged.set_aside})
        lines.append(
            f"(also found {len(judged.set_aside)} {', '.join(kinds)}: not judged here; the assignment cases judge it)"
        )
    return "\n".join(lines)


# -- fixtures' objects ---------------------------------------------------------------------------------------


class ScenarioRunner:
    """``keyshared_run(scenario, *, profile=None, label=None)``: run a scenario on the session's target."""

    def __init__(self, target: Any, case: CaseState, state: SessionState, *, spark: Any = None) -> None:
        self.target = target
        self.case = case
        self.state = state
        self.spark = spark  #: a SparkSession when the case checks with the Spark engine

    def load(self, scenario: Any) -> Any:
        """A ``Scenario`` from a built-in name, a file path, or a ``Scenario`` (returned as is)."""
        from conformance.scenarios import Scenario, load_scenario

        if isinstance(scenario, Scenario):
            return scenario
        try:
            return load_scenario(scenario)
        except ValueError as exc:
            pytest.fail(f"keyshared: {exc}", pytrace=False)

    def __call__(
        self,
        scenario: Any,
        *,
        profile: str | None = None,
        label: str | None = None,
        record: bool = True,
        target: Any = None,
        **options: Any,
    ) -> Any:
        """Run ``scenario``; ``record=False`` keeps its paths off the case (a Hypothesis example, say); ``target``
        runs it on another target than the session's (a generated program rerun at a later model release).

        A step or setting the target cannot perform skips the test with the target's reason, before the
        broker is touched.
        """
        from pytest_keyshared.driver import run_scenario
        from pytest_keyshared.targets import UnsupportedByTarget

        loaded = self.load(scenario)
        requires = getattr(loaded, "required_capabilities", None)
        for capability, where in (requires() if callable(requires) else {}).items():
            why = missing_capability(self.target, capability)
            if why is not None:
                pytest.skip(f"{why} (scenario {loaded.name!r} needs it for {where})")
        if loaded.settings.deduplication:
            why = missing_capability(self.target, "deduplication-switch")
            if why is not None:
                pytest.skip(f"{why} (scenario {loaded.name!r} turns deduplication on)")
        out_dir = self.case.next_run_dir(label)
        try:
            options.setdefault("buckets", self.state.value("trace_layout"))  # keyshared_trace_layout
            result = run_scenario(
                target or self.target, loaded, seed=self.case.seed, out_dir=out_dir, profile=profile, **options
            )
        except UnsupportedByTarget as exc:
            pytest.skip(str(exc))
        except ValueError as exc:  # a scenario the target refuses (bad input): one line, no traceback
            pytest.fail(f"keyshared: {exc}", pytrace=False)
        trace_path = getattr(result, "trace_path", None)
        scenario_path = getattr(result, "scenario_path", None)
        if record and trace_path is not None:
            self.case.record.traces.append(str(trace_path))
        if record and scenario_path is not None:
            self.case.record.scenarios.append(str(scenario_path))
        if self.spark is not None and trace_path is not None:  # re-judge the stored trace on Spark
            from conformance.checks import check_trace

            verdict = check_trace(trace_path, profile=profile, engine="spark", spark=self.spark)
            result = _with_verdict(result, verdict)
        return result


class SoakRunner:
    """``keyshared_soak(duration="30s", *, messages=None, **plan)``: a soak of the session's target.

    ``plan`` takes any :class:`conformance.soak.SoakPlan` field (``churn_per_min``, ``faults``, ``rate``, ...);
    the seed is the case's.  Faults the target cannot take skip the test, saying why; a bad value fails it in
    one line.
    """

    def __init__(self, target: Any, case: CaseState, *, buckets: int | None = None) -> None:
        self.target = target
        self.case = case
        self.buckets = buckets  #: the chunks' bucketed copy (``keyshared_trace_layout``), if any

    def __call__(self, duration: str | float | None = "30s", *, messages: int | None = None, **plan: Any) -> Any:
        from conformance.soak import SoakPlan, parse_duration
        from pytest_keyshared.soak import check_soak_plan, run_soak
        from pytest_keyshared.targets import UnsupportedByTarget

        try:
            seconds = None if messages is not None else parse_duration(str(duration))
            soak_plan = SoakPlan(duration_s=seconds, messages=messages, **{"seed": self.case.seed, **plan})
        except ValueError as exc:
            pytest.fail(f"keyshared_soak: {exc}", pytrace=False)
        try:
            check_soak_plan(self.target, soak_plan)
        except UnsupportedByTarget as exc:
            pytest.skip(str(exc))
        out_dir = self.case.next_run_dir(f"soak-{self.case.runs + 1}")
        result = run_soak(self.target, soak_plan, out_dir=out_dir, buckets=self.buckets)
        self.case.record.traces.append(str(result.trace_dir))
        return result


def _with_verdict(result: Any, verdict: Any) -> Any:
    try:
        return dataclasses.replace(result, verdict=verdict)
    except TypeError:
        result.verdict = verdict
        return result


class Checker:
    """``keyshared_check(subject, *, profile=None)``: judge and note a verdict; raise on a broken contract."""

    def __init__(self, case: CaseState, state: SessionState, *, spark: Any = None) -> None:
        self.case = case
        self.state = state
        self.spark = spark
        self.pending: list[tuple[str, str]] = []  #: (contract, explanation) noted with violation(defer=True)

    @staticmethod
    def contract_of(violation: Any) -> str:
        """The contract a violation breaks (``pytest_keyshared.contracts.KIND_CONTRACTS``)."""
        return _contract(violation)

    def verdict_of(self, subject: Any, *, profile: str | None = None) -> Any:
        """The verdict for a run result, a verdict, a trace recorder, a failover run or a trace file."""
        if hasattr(subject, "valid") and hasattr(subject, "violations"):
            return subject
        verdict = getattr(subject, "verdict", None)
        if verdict is not None and profile is None:
            return verdict
        engine = "spark" if self.spark is not None else "python"
        from conformance.checks import check_trace
        from pytest_keyshared.driver.replication import Failover

        if isinstance(subject, Failover):  # checking a failover means it is over: write its end first
            subject.close()
        trace_path = getattr(subject, "trace_path", None)
        if trace_path is not None:
            return check_trace(trace_path, profile=profile, engine=engine, spark=self.spark)
        if hasattr(subject, "header") and hasattr(subject, "events"):  # a recorder or a TraceWriter
            subject.close()
            if subject.path is not None:
                return check_trace(subject.path, profile=profile, engine=engine, spark=self.spark)
            return check_trace(subject, profile=profile, engine=engine, spark=self.spark)
        if isinstance(subject, (str, Path)):
            return check_trace(subject, profile=profile, engine=engine, spark=self.spark)
        raise TypeError(
            f"keyshared_check() expected a RunResult, a Verdict, a TraceWriter or a trace path, "
            f"but got {type(subject).__name__}"
        )

    def __call__(self, subject: Any, *, profile: str | None = None) -> Any:
        """Judge ``subject``; return its verdict when every contract this case judges held.

        A broken contract raises :class:`ContractViolation` with the explained violations.  Key placement
        (``misassigned``) counts only in cases that declare the ``assignment`` contract.  A verdict the
        checker could not reach (a crashed check, or ``unknown`` under a strict profile) raises
        :class:`UnknownVerdict`: the case never passes on it.
        """
        __tracebackhide__ = True
        verdict = self.verdict_of(subject, profile=profile)
        judged = judge_verdict(self.case, verdict)
        note_judged(self.case, judged)
        pending, self.pending = self.pending, []
        if judged.broken or pending:
            text = render_judged(verdict, judged) if judged.broken else ""
            extra = "\n\n".join(explanation for _, explanation in pending)
            raise ContractViolation(
                [*judged.broken, *(c for c, _ in pending)], "\n\n".join(t for t in (text, extra) if t)
            )
        if judged.unknown or bool(getattr(verdict, "crashed", None)):
            raise UnknownVerdict(_render(verdict))
        return verdict

    def violation(
        self,
        contract: str,
        explanation: str,
        *,
        kind: Any = None,
        key: str | None = None,
        defer: bool = False,
    ) -> None:
        """Report a contract the case judged itself (e.g. replication positions) as broken, and fail.

        With ``defer=True`` the violation is noted and raised by the next ``keyshared_check(...)`` call,
        together with what the checker finds, so one failure reports both.
        """
        __tracebackhide__ = True
        contract = check_contract(contract, source="keyshared_check.violation()")
        if kind is not None:  # one vocabulary: a kind is a conformance.violations.Kind, never a free string
            from conformance.violations import check_kind

            kind = check_kind(kind, source="keyshared_check.violation()").value
        self.case.record.add_violation(ViolationSummary(kind or contract, contract, key, explanation))
        self.case.record.add_broken([contract])
        if defer:
            self.pending.append((contract, explanation))
            return
        raise ContractViolation([contract], explanation)


class TraceFactory:
    """``keyshared_trace(subscription="orders", topic=None)``: a recorder for your own client code.

    Returns a :class:`~pytest_keyshared.recording.TraceRecorder` writing ``<case artifacts>/<name>.jsonl``,
    whose header names the target, the version and selector it claims and the case's seed.  Without
    ``topic`` a fresh one is chosen (``recorder.topic``), so reruns never see each other's messages.
    """

    def __init__(self, target: Any, case: CaseState, state: SessionState) -> None:
        self.target = target
        self.case = case
        self.state = state
        self.recorders: list[Any] = []

    def header(
        self, *, subscription: str, key_shared_mode: str, allow_out_of_order_delivery: bool, **extra: Any
    ) -> Any:
        from conformance.trace import SubscriptionSpec, TraceHeader

        claims = getattr(self.target, "claims", None)
        selector_for = getattr(claims, "selector_for", None)
        return TraceHeader(
            target=_target_name(self.target),
            subscription=SubscriptionSpec(
                name=subscription,
                key_shared_mode=key_shared_mode,
                allow_out_of_order_delivery=allow_out_of_order_delivery,
            ),
            pulsar_version=getattr(claims, "pulsar_version", None),
            deduplication=bool(extra.pop("deduplication", getattr(claims, "deduplication", False))),
            selector=selector_for(key_shared_mode) if callable(selector_for) else None,
            seed=self.case.seed,
            extra={"implementation": getattr(claims, "implementation", None), **extra},
        )

    def __call__(
        self,
        *,
        subscription: str = "sub",
        topic: str | None = None,
        name: str | None = None,
        key_shared_mode: str = "AUTO_SPLIT",
        allow_out_of_order_delivery: bool = False,
        **extra: Any,
    ) -> Any:
        from conformance.trace import TraceWriter
        from pytest_keyshared.recording import TraceRecorder

        label = name or f"trace-{len(self.recorders) + 1}"
        if topic is None:
            topic = f"persistent://public/default/ks-{case_slug_short(self.case.record.case)}-{os.urandom(4).hex()}"
        path = self.case.artifacts / f"{label}.jsonl"
        header = self.header(
            subscription=subscription,
            key_shared_mode=key_shared_mode,
            allow_out_of_order_delivery=allow_out_of_order_delivery,
            topic=topic,
            **extra,
        )
        recorder = TraceRecorder(TraceWriter(path, header), topic=topic, subscription=subscription)
        self.recorders.append(recorder)
        self.case.record.traces.append(str(path))
        return recorder

    def close(self) -> None:
        """Close every recorder; with ``keyshared_trace_layout = bucketed[:N]``, store each ended trace in the
        bucketed layout too (:func:`conformance.trace.buckets.write_bucketed_copy`, beside it)."""
        for recorder in self.recorders:
            recorder.close()
        buckets = self.state.value("trace_layout")
        if buckets is None:
            return
        from conformance.trace.buckets import write_bucketed_copy

        for recorder in self.recorders:
            try:
                write_bucketed_copy(recorder.path, buckets)
            except (ValueError, OSError) as exc:  # a trace the layout cannot hold: the trace as recorded stands
                import warnings

                warnings.warn(f"keyshared: no bucketed copy of {recorder.path}: {exc}", stacklevel=1)


def case_slug_short(case: str) -> str:
    """A topic-safe, short form of a case id (topic names allow letters, digits, ``-``, ``_`` and ``.``)."""
    from pytest_keyshared.caseid import case_slug

    return case_slug(case).replace("--", "-")[-40:].strip("-._") or "case"


class FailoverFactory:
    """``keyshared_failover(name, *, clusters=("r1", "r2"), delays_ms=None, deduplication=False)``: a recorded
    failover on the target's clusters (:class:`pytest_keyshared.driver.replication.Failover`), writing
    ``<case artifacts>/<name>.jsonl``.

    The target must have the ``replication`` capability and offer the clusters (and replication delays, and
    producer deduplication on every cluster) asked for (``replication_sites``); otherwise the case skips with the
    target's reason.  Check the run with
    ``keyshared_check(run)`` after it is closed (leave its ``with`` block); it is closed when the test ends.
    """

    def __init__(self, target: Any, case: CaseState, state: SessionState) -> None:
        self.target = target
        self.case = case
        self.state = state
        self.runs: list[Any] = []

    def __call__(
        self,
        name: str,
        *,
        clusters: tuple[str, ...] = ("r1", "r2"),
        delays_ms: Mapping[tuple[str, str], int] | None = None,
        deduplication: bool = False,
    ) -> Any:
        import inspect

        from conformance.target import UnsupportedByTarget
        from pytest_keyshared.driver.replication import Failover, failover_header

        why = missing_capability(self.target, "replication")
        if why is not None:
            pytest.skip(
                f"{why} (the replication cases run on clusters of the reference model, --keyshared-target=model,"
                " or on two Apache Pulsar clusters, --keyshared-target=testcontainers-geo)"
            )
        extra: dict[str, Any] = {}
        if deduplication:
            if "deduplication" not in inspect.signature(self.target.replication_sites).parameters:
                pytest.skip(f"Target {self.target.name!r} cannot turn deduplication on in its clusters.")
            extra["deduplication"] = True
        try:
            sites = self.target.replication_sites(
                case=name, seed=self.case.seed, clusters=clusters, delays_ms=delays_ms, **extra
            )
        except UnsupportedByTarget as exc:
            pytest.skip(str(exc))
        selector = self.target.claims.selector_for("AUTO_SPLIT")
        header = failover_header(
            self.target, sites, seed=self.case.seed, selector=selector, deduplication=deduplication
        )
        path = self.case.artifacts / f"{name}.jsonl"
        run = Failover(sites, header, path)
        self.runs.append(run)
        self.case.record.traces.append(str(path))
        return run

    def close(self) -> None:
        """Close every run (writing its ``end``); keep the clusters' broker logs beside the traces."""
        for run in self.runs:
            run.close()
        save_logs = getattr(self.target, "save_cluster_logs", None)
        if self.runs and callable(save_logs):
            save_logs(self.case.artifacts)
