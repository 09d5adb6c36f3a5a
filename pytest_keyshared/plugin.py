"""The pytest plugin (entry point ``pytest_keyshared``): options, markers, fixtures, expectations, summary.

Kept import-light: only the standard library and pytest at module level; targets, pulsar-client, checkers
and pyspark are imported inside the fixtures and hooks that need them.  The plugin is inert in a session
without keyshared cases: it prints its header line and nothing else, and starts no broker.

How a case flows (see ``docs/plugin.md``):

1. ``pytest_configure`` resolves the settings (marker > CLI > ``KEYSHARED_*`` > ini > default), chooses the
   root seed once and ships it to xdist workers.
2. A case's fixtures run scenarios against the session's target and check the traces; every verdict is
   noted on the case (``item.stash``).
3. ``pytest_runtest_makereport`` judges the outcome against the target's expectations (a known failure
   becomes ``xfailed``; an expected failure that passes fails the run when it was ``fails``), adds the
   contract and verdict to the JUnit properties, and attaches the case record to the report.
4. The controller collects the records (``pytest_runtest_logreport``; xdist ships report attributes),
   compares with a baseline, writes the results file and prints the contract table.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import random
import time
from collections.abc import Generator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_keyshared.state import CASE_KEY, STATE_KEY, CaseState, SessionState, case_seed

if TYPE_CHECKING:
    from pytest_keyshared.fixtures import Checker, FailoverFactory, ScenarioRunner, SoakRunner, TraceFactory
    from pytest_keyshared.results import CaseRecord

__all__ = [
    "_keyshared_requirements",
    "keyshared_artifacts",
    "keyshared_check",
    "keyshared_failover",
    "keyshared_run",
    "keyshared_seed",
    "keyshared_settings",
    "keyshared_soak",
    "keyshared_spark",
    "keyshared_target",
    "keyshared_trace",
    "pytest_addhooks",
    "pytest_addoption",
    "pytest_collection_modifyitems",
    "pytest_configure",
    "pytest_ignore_collect",
    "pytest_report_header",
    "pytest_runtest_makereport",
    "pytest_runtest_setup",
]

#: Markers, registered with their signatures in ``pytest_configure`` (``pytest --markers`` lists them).
MARKERS: dict[str, str] = {
    "keyshared_contract": "keyshared_contract(*contracts): the contracts this case checks: ordering, "
    "key-exclusivity, delivery, redelivery, deduplication, assignment, replication.",
    "keyshared_requires": "keyshared_requires(*capabilities): run only if the target has these capabilities "
    "(e.g. deduplication-switch, crash-injection); otherwise skip, saying what the target lacks and why.",
    "keyshared": "keyshared(seed=None, engine=None): per-test keyshared settings; they win over "
    "the command line, KEYSHARED_* variables and the ini file.",
    "keyshared_case": "keyshared_case(id): the stable case id that keys the expectations and results files.",
}

#: Prefix of the JUnit properties the plugin adds to every case.
JUNIT_PREFIX = "keyshared_"

_STATE_FIXTURES = frozenset(
    {"keyshared_run", "keyshared_check", "keyshared_trace", "keyshared_target", "keyshared_seed",
     "keyshared_artifacts", "keyshared_failover"}
)  # fmt: skip


# -- configuration -------------------------------------------------------------------------------------------


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_keyshared import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    from pytest_keyshared.options import SETTINGS

    group = parser.getgroup("keyshared", "Key_Shared conformance (pytest-keyshared)")
    for setting in SETTINGS.values():
        group.addoption(
            setting.flag,
            dest=setting.dest,
            default=None,
            metavar=setting.metavar,
            help=f"{setting.help} [env {setting.env}; ini {setting.ini}]",
        )
        parser.addini(setting.ini, setting.help, default=None)


def _resolve_settings(config: pytest.Config) -> dict[str, Any]:
    from pytest_keyshared.options import SETTINGS, Resolved, SettingError, resolve

    resolved: dict[str, Resolved] = {}
    for name, setting in SETTINGS.items():
        try:
            value = resolve(setting, cli=config.getoption(setting.dest), ini=config.getini(setting.ini))
        except SettingError as exc:
            raise pytest.UsageError(str(exc)) from None
        if isinstance(value.value, Path) and not value.value.is_absolute():
            base = config.inipath.parent if value.source == "ini" and config.inipath else None
            base = base or config.invocation_params.dir
            value = Resolved((base / value.value).resolve(), value.source)
        resolved[name] = value
    return resolved


def _choose_seed(config: pytest.Config, chosen: object) -> tuple[int, str]:
    """The root seed: from the xdist controller, the cache (``last``), the option, or a fresh random one."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and "keyshared_seed" in workerinput:
        return int(workerinput["keyshared_seed"]), ""
    if chosen == "last":
        cached = config.cache.get("keyshared/seed", None) if getattr(config, "cache", None) is not None else None
        if isinstance(cached, int):
            return cached, "last"
        return random.randrange(2**32), "no previous seed cached: chose a new one"
    if chosen == "random":
        return random.randrange(2**32), ""
    assert isinstance(chosen, int)
    return chosen, ""


class _XdistHooks:
    """Ships the root seed and the session's artifacts directory to every worker (pytest-randomly's way);
    registered only when xdist is active."""

    def __init__(self, seed: int, artifacts: Path) -> None:
        self.seed = seed
        self.artifacts = artifacts

    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput["keyshared_seed"] = self.seed
        node.workerinput["keyshared_artifacts"] = str(self.artifacts)


#: ``<artifacts>/latest``: a symbolic link to the last session's directory.
LATEST_LINK = "latest"


def _session_artifacts(config: pytest.Config, root: Path) -> Path:
    """This session's own directory under ``root``: ``<root>/<YYYYmmdd-HHMMSS>-p<pid>`` (xdist workers: the
    controller's).

    Every run keeps its artifacts apart, so a later run never overwrites the trace of an earlier failure (a
    main job that failed once in eleven could not be diagnosed when each run wrote over the last).  Time and
    the controller's pid make the name unique on a machine.  The directory is made only when a case writes.
    """
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and "keyshared_artifacts" in workerinput:
        return Path(workerinput["keyshared_artifacts"])
    base = f"{time.strftime('%Y%m%d-%H%M%S')}-p{os.getpid()}"
    candidates = (root / (base if n == 1 else f"{base}-{n}") for n in itertools.count(1))
    return next(path for path in candidates if not path.exists())  # in-process sessions share the pid


def _link_latest(artifacts: Path) -> None:
    """Point ``<root>/latest`` at this session's directory (replaced atomically; best effort)."""
    if not artifacts.is_dir():
        return
    link = artifacts.parent / LATEST_LINK
    staging = artifacts.parent / f".{LATEST_LINK}-{os.getpid()}"
    try:
        with contextlib.suppress(FileNotFoundError):
            staging.unlink()
        staging.symlink_to(artifacts.name, target_is_directory=True)
        os.replace(staging, link)
    except OSError:  # a file system without symbolic links: the directory itself is all that is needed
        with contextlib.suppress(OSError):
            staging.unlink()


def pytest_configure(config: pytest.Config) -> None:
    for name, description in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {description}" if "(" not in description else description)
    settings = _resolve_settings(config)
    seed, note = _choose_seed(config, settings["seed"].value)
    is_worker = hasattr(config, "workerinput")
    artifacts = _session_artifacts(config, settings["artifacts"].value)
    state = SessionState(settings=settings, seed=seed, seed_note=note, artifacts=artifacts, is_worker=is_worker)
    config.stash[STATE_KEY] = state
    if not is_worker and getattr(config, "cache", None) is not None:
        config.cache.set("keyshared/seed", seed)
    if not is_worker:
        config.pluginmanager.register(_Controller(config, state), "keyshared-controller")
        if config.pluginmanager.hasplugin("xdist"):
            config.pluginmanager.register(_XdistHooks(seed, artifacts), "keyshared-xdist")
    # Files the user named are validated now, so a typo fails before anything runs.
    try:
        if settings["expectations"].source != "default":
            _ = state.expectations
        if settings["baseline"].value is not None and not is_worker:
            from pytest_keyshared.results import read_results_file

            state.baseline = read_results_file(settings["baseline"].value)
    except ValueError as exc:  # reference_model.errors.InvalidArgument is a ValueError
        raise pytest.UsageError(str(exc)) from None


def _state(config: pytest.Config) -> SessionState:
    return config.stash[STATE_KEY]


def pytest_report_header(config: pytest.Config) -> str:
    state = _state(config)
    version = state.value("pulsar_version") or "claimed-by-target"
    seed = f"{state.seed}" + (f" ({state.seed_note})" if state.seed_note else "")
    parts = [
        f"target={state.target}",
        f"version={version}",
        f"seed={seed}",
        f"engine={state.value('engine')}",
        f"hypothesis=keyshared-{state.value('hypothesis_profile')}",
        f"expectations={state.expectations_label()}",
    ]
    if state.baseline is not None:
        parts.append(f"baseline={state.baseline.source}")
    return "keyshared: " + " ".join(parts)


# -- collection ----------------------------------------------------------------------------------------------


def _is_case(item: pytest.Item) -> bool:
    """A keyshared case: marked with a keyshared marker, or using a keyshared fixture."""
    if any(item.get_closest_marker(name) for name in ("keyshared_contract", "keyshared_requires", "keyshared_case")):
        return True
    return bool(_STATE_FIXTURES & set(getattr(item, "fixturenames", ())))


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """The soak case (``conformance/cases/test_soak.py``) is collected only with ``--keyshared-soak=DURATION``."""
    if collection_path.name != "test_soak.py" or collection_path.parent.name != "cases":
        return None
    if collection_path.parent.parent.name != "conformance":
        return None
    return _state(config).value("soak") is None or None


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Validate keyshared markers up front: a typo in a contract or setting is a usage error, not a failure."""
    from pytest_keyshared.contracts import check_contract
    from pytest_keyshared.options import SettingError, resolve_marker

    cases = [item for item in items if _is_case(item)]
    for item in cases:
        for marker in item.iter_markers("keyshared_contract"):
            if not marker.args:
                raise pytest.UsageError(f"@pytest.mark.keyshared_contract on {item.nodeid} names no contract")
            for name in marker.args:
                try:
                    check_contract(name, source=f"@pytest.mark.keyshared_contract on {item.nodeid}")
                except ValueError as exc:
                    raise pytest.UsageError(str(exc)) from None
        for marker in item.iter_markers("keyshared"):
            try:
                resolve_marker(marker.kwargs, where=item.nodeid)
            except SettingError as exc:
                raise pytest.UsageError(str(exc)) from None
    if cases:
        try:
            _ = _state(config).expectations  # load (and validate) the target's expectations once
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None


# -- running a case ------------------------------------------------------------------------------------------


def _case_state(item: pytest.Item) -> CaseState:
    """The case's state, created on first use (by a fixture or by the report hook)."""
    existing = item.stash.get(CASE_KEY, None)
    if existing is not None:
        return existing
    from pytest_keyshared.caseid import case_id, case_slug
    from pytest_keyshared.options import resolve_marker
    from pytest_keyshared.results import CaseRecord

    state = _state(item.config)
    case = case_id(item)
    per_test = {name: state.value(name) for name in ("engine",)}
    from_marker: dict[str, Any] = {}
    for marker in reversed(list(item.iter_markers("keyshared"))):  # the closest marker is applied last and wins
        from_marker.update(resolve_marker(marker.kwargs, where=item.nodeid))
    per_test.update(from_marker)
    seed = from_marker.get("seed")
    if not isinstance(seed, int):  # the marker fixes a case's seed; otherwise it derives from the root seed
        seed = case_seed(state.seed, case)
    contracts: list[str] = []
    for marker in item.iter_markers("keyshared_contract"):
        contracts.extend(str(c) for c in marker.args if str(c) not in contracts)
    record = CaseRecord(case=case, nodeid=item.nodeid, contracts=contracts, seed=seed)
    created = CaseState(record=record, seed=seed, artifacts=state.artifacts / case_slug(case), settings=per_test)
    item.stash[CASE_KEY] = created
    return created


def pytest_runtest_setup(item: pytest.Item) -> None:
    if _is_case(item):
        _case_state(item)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield
    if not _is_case(item):
        return report
    case = _case_state(item)
    record = case.record
    record.duration = round(record.duration + report.duration, 3)
    if report.when == "setup":
        if report.skipped:
            record.outcome = "skipped"
            record.note = _skip_reason(report)
        elif report.failed:
            record.outcome = "error"
            record.error = _first_line(call)
    elif report.when == "call":
        _judge_call(item, call, report, case)
        _add_junit_properties(item, report, record)
    else:  # teardown: the record is complete; it rides to the controller on this report
        record.pulsar_version = _state(item.config).claimed_version
        report.keyshared_case = record.to_json()
    return report


def _judge_call(item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport, case: CaseState) -> None:
    from pytest_keyshared.contracts import ContractViolation
    from pytest_keyshared.expectations import judge

    record = case.record
    if hasattr(report, "wasxfail"):  # pytest's own xfail marker decided; keep its verdict
        record.outcome = "xfailed" if report.skipped else ("xpassed" if report.passed else "failed")
        record.reason = str(report.wasxfail)
        return
    if report.skipped:
        record.outcome = "skipped"
        record.note = _skip_reason(report)
        return
    if call.excinfo is not None and isinstance(call.excinfo.value, ContractViolation):
        record.add_broken(call.excinfo.value.contracts)
    passed = report.passed
    if not passed and not record.broken:
        record.error = _first_line(call)
    expectations = _state(item.config).expectations
    judgement = judge(passed, record.broken, expectations.get(record.case), expectations.contracts)
    record.outcome = judgement.outcome
    record.reason = judgement.reason
    record.note = judgement.note
    if judgement.outcome == "xfailed":
        report.outcome = "skipped"
        report.wasxfail = f"keyshared expectation: {judgement.reason}"
    elif judgement.outcome == "xpassed":
        report.outcome = "passed"
        report.wasxfail = f"keyshared expectation: {judgement.reason}"
    elif judgement.outcome == "failed" and passed:
        report.outcome = "failed"
        report.longrepr = f"[XPASS(strict)] keyshared expectation: {judgement.reason}"
    elif judgement.note:
        report.sections.append(("keyshared expectation", f"{judgement.note}\nexpectation: {judgement.reason}"))


def _add_junit_properties(item: pytest.Item, report: pytest.TestReport, record: CaseRecord) -> None:
    """Contract and verdict per case in the JUnit XML (pytest writes ``user_properties`` as <property>)."""
    verdict = {
        "passed": "valid",
        "xpassed": "valid",
        "failed": "invalid" if record.broken else "error",
        "xfailed": "invalid" if record.broken else "error",
    }.get(record.outcome, record.outcome)
    if verdict == "error" and (record.error or "").startswith("UnknownVerdict:"):
        verdict = "unknown"  # the checker could not reach a verdict (a check crashed): not a pass, not a finding
    properties = [
        ("case", record.case),
        ("contract", ",".join(record.contracts)),
        ("verdict", verdict),
        ("outcome", record.outcome),
        ("broken", ",".join(record.broken)),
        ("violations", ",".join(f"{k}={n}" for k, n in sorted(record.counts.items()))),
        ("seed", str(record.seed)),
    ]
    properties += [("trace", trace) for trace in record.traces]
    for name, value in properties:
        item.user_properties.append((JUNIT_PREFIX + name, value))
    report.user_properties = list(item.user_properties)


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def _first_line(call: pytest.CallInfo[None]) -> str | None:
    if call.excinfo is None:
        return None
    text = f"{call.excinfo.typename}: {call.excinfo.value}"
    return text.strip().splitlines()[0][:300] if text.strip() else call.excinfo.typename


# -- the controller: aggregate, compare, summarise -----------------------------------------------------------


class _Controller:
    """Collects case records and reports on them; registered only on the process that reports (not workers).

    Under xdist the records arrive on the teardown reports the workers send (report attributes cross
    processes, as Hypothesis' statistics do); without xdist they arrive the same way, in-process.
    """

    def __init__(self, config: pytest.Config, state: SessionState) -> None:
        self.config = config
        self.state = state
        self.comparison: Any = None
        self.report_index: Any = None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        text = getattr(report, "keyshared_case", None)
        if not text or report.when != "teardown":
            return
        from pytest_keyshared.results import CaseRecord

        record = CaseRecord.from_json(text)
        self.state.records.append(record)
        self.config.hook.pytest_keyshared_case_finished(config=self.config, record=record)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        state = self.state
        _link_latest(state.artifacts)
        if not state.records:
            return
        from pytest_keyshared.results import RunResults, compare_with_baseline, write_results_file

        claimed = next((r.pulsar_version for r in state.records if r.pulsar_version), None)
        results = RunResults(
            target=state.target,
            pulsar_version=state.value("pulsar_version") or state.claimed_version or claimed,
            seed=state.seed,
            cases={r.case: r for r in state.records},
        )
        if state.value("results") is not None:
            write_results_file(state.value("results"), results)
        if state.baseline is not None:
            self.comparison = compare_with_baseline(state.baseline, results.cases)
            if self.comparison.new_failures and session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if state.value("report") is not None:
            from pytest_keyshared.report_index import write_suite_report

            self.report_index = write_suite_report(state.value("report"), state, self.comparison)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        state = self.state
        if not state.records:
            return
        from pytest_keyshared.summary import (
            baseline_lines,
            contract_table,
            expected_failure_lines,
            failure_blocks,
            skip_reasons,
        )

        records = sorted(state.records, key=lambda r: r.case)
        write = terminalreporter.write_line
        terminalreporter.section(f"keyshared conformance: target={state.target} seed={state.seed}", sep="=")
        for line in contract_table(records):
            write(line)
        failures = failure_blocks(records)
        if failures:
            terminalreporter.section("keyshared failures", sep="-", red=True)
            for line in failures:
                write(line)
        expected = expected_failure_lines(records)
        if expected:
            terminalreporter.section("keyshared expected failures", sep="-")
            for line in expected:
                write(line)
        reasons = skip_reasons(records)
        if reasons:
            terminalreporter.section("keyshared skipped", sep="-")
            for reason, count in sorted(reasons.items()):
                write(f"{count:>3} x {reason}")
        if self.comparison is not None:
            terminalreporter.section("keyshared baseline comparison", sep="-", red=bool(self.comparison.new_failures))
            for line in baseline_lines(self.comparison):
                write(line)
        if state.value("results") is not None:
            write(f"keyshared results written to {state.value('results')}")
        if self.report_index is not None:
            write(f"keyshared report written to {self.report_index}")
        said = {"xfailed": sum(r.outcome == "xfailed" for r in records), "skipped": sum(reasons.values())}
        said["xpassed"] = sum(r.outcome == "xpassed" for r in records)
        _not_twice(terminalreporter, said)


#: pytest's short-summary letters (``-r``) for what the keyshared sections above already list, one per case.
_REPORT_CHARS = {"xfailed": "x", "xpassed": "X", "skipped": "s"}


def _not_twice(terminalreporter: Any, said: Mapping[str, int]) -> None:
    """Leave out of pytest's short test summary (``-ra``, as in this project's own ``addopts``) the expected
    failures, unexpected passes and skips the keyshared sections listed with their reasons: every one of them,
    or pytest still lists all of its own (a test of the run that is not a keyshared case)."""
    chars = getattr(terminalreporter, "reportchars", None)
    if not isinstance(chars, str):
        return
    for stat, char in _REPORT_CHARS.items():
        shown = len(terminalreporter.stats.get(stat, []))
        if shown and shown == said.get(stat, 0):
            chars = chars.replace(char, "")
    terminalreporter.reportchars = chars


# -- fixtures ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def keyshared_settings(pytestconfig: pytest.Config) -> SessionState:
    """The resolved session settings: ``.value("target")``, ``.seed`` (the root seed), ``.artifacts``."""
    return _state(pytestconfig)


@pytest.fixture(scope="session")
def keyshared_target(pytestconfig: pytest.Config) -> Generator[Any, None, None]:
    """The target under test, started once per session (once per xdist worker) and stopped at the end.

    Skipped nowhere: a target that cannot start is an error of every case that needs it, with one line
    saying why.
    """
    from pytest_keyshared.fixtures import open_session_target

    with open_session_target(pytestconfig, _state(pytestconfig)) as target:
        yield target


@pytest.fixture
def keyshared_seed(request: pytest.FixtureRequest) -> int:
    """This case's seed: the root seed plus crc32 of the case id, or ``@pytest.mark.keyshared(seed=N)``."""
    return _case_state(request.node).seed


@pytest.fixture
def keyshared_artifacts(request: pytest.FixtureRequest) -> Path:
    """This case's artifacts directory (traces, scenarios, verdicts): ``<artifacts>/<case id>/``."""
    path = _case_state(request.node).artifacts
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def keyshared_run(request: pytest.FixtureRequest, keyshared_target: Any) -> ScenarioRunner:
    """Run a scenario against the target: ``result = keyshared_run("join-while-pending")``.

    Accepts a built-in scenario name, a scenario file path or a ``conformance.scenarios.Scenario``; runs it
    with this case's seed, saves trace, scenario and verdict under the case's artifacts, and returns the
    driver's ``RunResult``.  It does not assert: pass the result to ``keyshared_check``.
    """
    from pytest_keyshared.fixtures import ScenarioRunner

    case = _case_state(request.node)
    return ScenarioRunner(keyshared_target, case, _state(request.config), spark=_spark_for(request, case))


@pytest.fixture
def keyshared_check(request: pytest.FixtureRequest) -> Checker:
    """Check a run, a trace file, a recorder or a verdict; raise ``ContractViolation`` with the explanation.

    ``keyshared_check(result)`` returns the verdict when valid.  ``keyshared_check.violation(contract,
    explanation)`` reports a broken contract a case judged itself.
    """
    from pytest_keyshared.fixtures import Checker

    case = _case_state(request.node)
    return Checker(case, _state(request.config), spark=_spark_for(request, case))


def _spark_for(request: pytest.FixtureRequest, case: CaseState) -> Any:
    """The session's Spark session when this case checks with the Spark engine, else None (no JVM started)."""
    if case.settings.get("engine") != "spark":
        return None
    return request.getfixturevalue("keyshared_spark")


@pytest.fixture
def keyshared_soak(request: pytest.FixtureRequest, keyshared_target: Any) -> SoakRunner:
    """Soak the target: ``result = keyshared_soak("2m", churn_per_min=12, faults=("cut", "restart"))``.

    Takes a duration (``"90s"``, ``"10m"``, seconds) or ``messages=N`` and any other ``conformance.soak.SoakPlan``
    field; runs with this case's seed, saves the chunks, verdict and summary under the case's artifacts, and
    returns the ``SoakResult`` (pass it to ``keyshared_check``).  Faults the target cannot take skip the test.
    """
    from pytest_keyshared.fixtures import SoakRunner

    return SoakRunner(keyshared_target, _case_state(request.node), buckets=_state(request.config).value("trace_layout"))


@pytest.fixture(scope="session")
def keyshared_spark() -> Generator[Any, None, None]:
    """A local Spark session (``local[2]``, loopback only) for ``--keyshared-engine=spark``, started once.

    Requested only by cases that check with the Spark engine; needs the ``spark`` extra and a Java runtime.
    """
    try:
        from conformance.spark.session import build_session, stop

        # many small traces: the settings for small jobs; the driver's classes from an archive after the first run
        spark = build_session("local[2]", for_tests=True, class_cache=True)
    except Exception as exc:
        pytest.fail(
            f"keyshared: --keyshared-engine=spark needs pyspark and Java: {type(exc).__name__}: {exc}", pytrace=False
        )
    yield spark
    stop(spark)


@pytest.fixture
def keyshared_trace(request: pytest.FixtureRequest, keyshared_target: Any) -> TraceFactory:
    """Record a trace of your own client code: ``trace = keyshared_trace(subscription="orders")``.

    Returns a ``conformance.trace.TraceWriter`` whose header names the target and the contract it claims,
    writing to this case's artifacts; closed when the test ends.  Check it with ``keyshared_check(trace)``.
    """
    from pytest_keyshared.fixtures import TraceFactory

    factory = TraceFactory(keyshared_target, _case_state(request.node), _state(request.config))
    request.addfinalizer(factory.close)
    return factory


@pytest.fixture
def keyshared_failover(request: pytest.FixtureRequest, keyshared_target: Any) -> FailoverFactory:
    """A replicated-subscription failover on the target's clusters, recorded as a trace of this case:
    ``with keyshared_failover("switch") as run: run.publish(10); ...; run.fail_over("r2")``, then
    ``keyshared_check(run)``.  Skips when the target has no clusters (``replication`` capability)."""
    from pytest_keyshared.fixtures import FailoverFactory

    factory = FailoverFactory(keyshared_target, _case_state(request.node), _state(request.config))
    request.addfinalizer(factory.close)
    return factory


@pytest.fixture(autouse=True)
def _keyshared_requirements(request: pytest.FixtureRequest) -> None:
    """Skip a case marked ``keyshared_requires(...)`` when the target lacks a capability, saying why.

    Autouse, but it touches the target only for marked tests: other tests never start a broker.
    """
    needed = [str(c) for marker in request.node.iter_markers("keyshared_requires") for c in marker.args]
    if not needed:
        return
    from pytest_keyshared.fixtures import missing_capability

    target = request.getfixturevalue("keyshared_target")
    for capability in needed:
        why = missing_capability(target, capability)
        if why is not None:
            pytest.skip(why)
