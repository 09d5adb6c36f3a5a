"""Summary table, failure blocks, expectations, skip reasons, JUnit properties and the target fixture.

The cases here run against a small in-test target (``conftest.FAKE_TARGET_CONFTEST``) and hand-made
verdicts, so each plugin mechanism is tested on its own; ``test_plugin_model_target.py`` runs real
scenarios on the real model.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from plugin_helpers import assert_in_order

pytest_plugins = ["pytester"]

CASES = """
import os
import pytest
from conftest import FakeVerdict, FakeViolation

BROKEN = os.environ.get("FAKE_BROKEN", "overlap,replication").split(",")

@pytest.mark.keyshared_contract("ordering")
def test_holds(keyshared_check):
    if "holds" in BROKEN:
        keyshared_check(FakeVerdict(FakeViolation("out_of_order", "k1", "k1 reordered")))
    keyshared_check(FakeVerdict())

@pytest.mark.keyshared_contract("key-exclusivity", "ordering")
def test_overlap(keyshared_check, keyshared_artifacts):
    (keyshared_artifacts / "trace.jsonl").write_text("{}")
    keyshared_check.case.record.traces.append(str(keyshared_artifacts / "trace.jsonl"))
    if "overlap" in BROKEN:
        explanation = "Let: E12 = ...\\nThen: c1 and c2 held k7 at once"
        keyshared_check(FakeVerdict(FakeViolation("key_overlap", "k7", explanation)))

@pytest.mark.keyshared_contract("deduplication")
@pytest.mark.keyshared_requires("deduplication-switch")
def test_dedup(keyshared_check):
    raise AssertionError("must be skipped before it runs")

@pytest.mark.keyshared_contract("replication")
def test_replication(keyshared_check):
    if "replication" in BROKEN:
        keyshared_check.violation("replication", "consumer in r2 skipped message 3 it never acknowledged")
"""


@pytest.fixture(autouse=True)
def _no_keyshared_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in list(os.environ):
        if name.startswith("KEYSHARED_"):
            monkeypatch.delenv(name)


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("--keyshared-target=fake", "--keyshared-seed=11", "-rA", *args)


def test_summary_table_counts_each_contract(fake_target_conftest: pytest.Pytester) -> None:
    pytester = fake_target_conftest
    pytester.makepyfile(test_cases=CASES)
    result = run(pytester)
    result.assert_outcomes(passed=1, failed=2, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "*keyshared conformance: target=fake seed=11*",
            "contract *passed*failed*xfailed*xpassed*skipped",
            "ordering  *2*0*0*0*0",  # held in test_holds, and in test_overlap (only exclusivity broke)
            "key-exclusivity *0*1*0*0*0",
            "deduplication *0*0*0*0*1",
            "replication *0*1*0*0*0",
            "cases *1*2*0*0*1",
        ]
    )


def test_failures_are_explained_with_trace_paths(fake_target_conftest: pytest.Pytester) -> None:
    pytester = fake_target_conftest
    pytester.makepyfile(test_cases=CASES)
    result = run(pytester)
    assert_in_order(
        result,
        "keyshared failures",
        "FAILED test_cases.py::test_overlap [key-exclusivity]  seed=",
        "  key_overlap (key-exclusivity) key=k7",
        "    Let: E12 = ...",
        "    Then: c1 and c2 held k7 at once",
        f"/keyshared-artifacts/{(pytester.path / 'keyshared-artifacts' / 'latest').resolve().name}/"
        "test_cases.py--test_overlap/trace.jsonl",
        "FAILED test_cases.py::test_replication [replication]  seed=",
        "    consumer in r2 skipped message 3 it never acknowledged",
    )


def test_skip_reason_names_the_missing_capability(fake_target_conftest: pytest.Pytester) -> None:
    pytester = fake_target_conftest
    pytester.makepyfile(test_cases=CASES)
    result = run(pytester, "-k", "dedup")
    result.assert_outcomes(skipped=1)
    assert_in_order(result, "keyshared skipped", "  1 x target fake lacks deduplication-switch: fake has no admin API")
    # said once: pytest's own short summary (-rA here, -ra in the project's addopts) leaves out what the
    # keyshared section listed (issue 28, item 7)
    assert sum("fake has no admin API" in line for line in result.outlines) == 1
    assert not any(line.startswith("SKIPPED [") for line in result.outlines)


def test_expected_failures_and_skips_are_listed_once_under_dash_ra(fake_target_conftest: pytest.Pytester) -> None:
    """The README's first command runs from the repository root, where the project's ``addopts = "-ra"`` apply:
    pytest's short summary repeated every XFAIL line and skip reason of the keyshared sections (issue 28)."""
    pytester = fake_target_conftest
    pytester.makepyfile(test_cases=CASES)
    pytester.path.joinpath("fake.toml").write_text(EXPECTATIONS.format(holds_status="may-fail"))
    result = pytester.runpytest(
        "--keyshared-target=fake", "-ra", "-k", "overlap or holds or dedup", "--keyshared-expectations=fake.toml"
    )
    result.assert_outcomes(xfailed=1, xpassed=1, skipped=1)
    for words in ("fake has no draining hashes", "flaky on fake", "fake has no admin API"):
        assert sum(words in line for line in result.outlines) == 1, (words, result.outlines)


def test_a_test_outside_the_keyshared_sections_keeps_its_short_summary_line(
    fake_target_conftest: pytest.Pytester,
) -> None:
    """A skip the keyshared sections do not list (a plain test of the run) keeps pytest's line, and so do the
    case skips beside it: pytest's summary is left out only when the sections list every one."""
    pytester = fake_target_conftest
    pytester.makepyfile(
        test_cases=CASES,
        test_plain="import pytest\n\ndef test_plain():\n    pytest.skip('no reason to run')\n",
    )
    result = pytester.runpytest("--keyshared-target=fake", "-ra", "-k", "dedup or plain")
    result.assert_outcomes(skipped=2)
    assert any(line.startswith("SKIPPED [1] test_plain.py") and "no reason to run" in line for line in result.outlines)


def test_junit_carries_contract_and_verdict(fake_target_conftest: pytest.Pytester) -> None:
    pytester = fake_target_conftest
    pytester.makepyfile(test_cases=CASES)
    run(pytester, "--junitxml=junit.xml")
    root = ET.parse(pytester.path / "junit.xml").getroot()
    props = {
        case.get("name"): {p.get("name"): p.get("value") for p in case.iter("property")}
        for case in root.iter("testcase")
    }
    assert props["test_holds"]["keyshared_contract"] == "ordering"
    assert props["test_holds"]["keyshared_verdict"] == "valid"
    assert props["test_overlap"]["keyshared_contract"] == "key-exclusivity,ordering"
    assert props["test_overlap"]["keyshared_verdict"] == "invalid"
    assert props["test_overlap"]["keyshared_broken"] == "key-exclusivity"
    assert props["test_overlap"]["keyshared_violations"] == "key_overlap=1"
    assert props["test_overlap"]["keyshared_trace"].endswith("trace.jsonl")
    assert props["test_replication"]["keyshared_verdict"] == "invalid"
    assert props["test_holds"]["keyshared_case"] == "test_cases.py::test_holds"


def test_target_starts_once_per_session(fake_target_conftest: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester = fake_target_conftest
    log = pytester.path / "starts.jsonl"
    monkeypatch.setenv("FAKE_TARGET_LOG", str(log))
    pytester.makepyfile(
        """
        def test_a(keyshared_target): assert keyshared_target.name == "fake"
        def test_b(keyshared_target): pass
        def test_c(keyshared_target): pass
        """
    )
    run(pytester).assert_outcomes(passed=3)
    assert len(log.read_text().splitlines()) == 1


def test_a_target_that_cannot_start_is_one_line_per_case(
    fake_target_conftest: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester = fake_target_conftest
    monkeypatch.setenv("FAKE_TARGET_BROKEN", "1")
    pytester.makepyfile("def test_a(keyshared_target): pass\ndef test_b(keyshared_target): pass")
    result = run(pytester)
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(
        ["*keyshared: cannot start target 'fake': ConnectionRefusedError: nothing listens on 127.0.0.1:1*"]
    )
    assert "Traceback" not in result.stdout.str()


def test_case_finished_hook_sees_every_record(fake_target_conftest: pytest.Pytester) -> None:
    pytester = fake_target_conftest
    pytester.makepyfile(test_cases=CASES)
    pytester.makeconftest(
        (pytester.path / "conftest.py").read_text()
        + """
SEEN = []
def pytest_keyshared_case_finished(config, record):
    SEEN.append((record.case, record.outcome, tuple(record.broken)))
def pytest_unconfigure(config):
    print("SEEN", sorted(SEEN))
"""
    )
    result = run(pytester, "-s")
    result.stdout.fnmatch_lines(
        [
            "SEEN [('test_cases.py::test_dedup', 'skipped', ()), ('test_cases.py::test_holds', 'passed', ()),"
            " ('test_cases.py::test_overlap', 'failed', ('key-exclusivity',)),"
            " ('test_cases.py::test_replication', 'failed', ('replication',))]"
        ]
    )


# -- expectations ----------------------------------------------------------------------------------------------

EXPECTATIONS = """
target = "fake"

[cases."test_cases.py::test_overlap"]
status = "fails"
contracts = ["key-exclusivity"]
reason = "fake has no draining hashes"

[cases."test_cases.py::test_holds"]
status = "{holds_status}"
reason = "flaky on fake"
"""


def test_expected_failures_are_xfailed_and_do_not_fail_the_run(fake_target_conftest: pytest.Pytester) -> None:
    pytester = fake_target_conftest
    pytester.makepyfile(test_cases=CASES)
    pytester.path.joinpath("fake.toml").write_text(EXPECTATIONS.format(holds_status="may-fail"))
    result = run(pytester, "-k", "overlap or holds", "--keyshared-expectations=fake.toml")
    result.assert_outcomes(xfailed=1, xpassed=1)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["key-exclusivity *0*0*1*0*0"])
    assert_in_order(
        result,
        "keyshared expected failures",
        "XPASS  test_cases.py::test_holds: flaky on fake",
        "XFAIL  test_cases.py::test_overlap [key-exclusivity]: fake has no draining hashes",
    )


def test_a_fails_case_that_passes_fails_the_run(fake_target_conftest: pytest.Pytester) -> None:
    pytester = fake_target_conftest
    pytester.makepyfile(test_cases=CASES)
    pytester.path.joinpath("fake.toml").write_text(EXPECTATIONS.format(holds_status="fails"))
    result = run(pytester, "-k", "holds", "--keyshared-expectations=fake.toml")
    result.assert_outcomes(failed=1)
    assert_in_order(result, "[XPASS(strict)] keyshared expectation: flaky on fake")


def test_failing_another_contract_than_expected_is_a_failure(fake_target_conftest: pytest.Pytester) -> None:
    pytester = fake_target_conftest
    pytester.makepyfile(test_cases=CASES)
    pytester.path.joinpath("fake.toml").write_text(
        """
[cases."test_cases.py::test_overlap"]
status = "fails"
contracts = ["ordering"]
reason = "reorders after a leave"
"""
    )
    result = run(pytester, "-k", "overlap", "--keyshared-expectations=fake.toml")
    result.assert_outcomes(failed=1)
    assert_in_order(
        result,
        "  note: expected to break only ordering, but also broke key-exclusivity",
        "  expectation: reorders after a leave",
    )


def test_without_expectations_the_same_run_fails(fake_target_conftest: pytest.Pytester) -> None:
    pytester = fake_target_conftest
    pytester.makepyfile(test_cases=CASES)
    result = run(pytester, "-k", "overlap", "--keyshared-expectations=none")
    result.assert_outcomes(failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('[cases."a"]\nstatus = "broken"\nreason = "x"', "*status 'broken' is not one of fails, may-fail*"),
        ('[cases."a"]\nstatus = "fails"', "*cases.'a'*: expected a non-empty reason*"),
        (
            '[cases."a"]\nstatus = "fails"\nreason = "x"\ncontracts = ["orderin"]',
            "*Unknown contract 'orderin'*Did you mean 'ordering'?*",
        ),
        ("cases = [", "*not valid TOML*"),
        (
            '[cases."a"]\nstatus = "fails"\nreason = "x"\nwhy = "y"',
            "*unknown key 'why'; expected status, reason, contracts*",
        ),
    ],
)
def test_malformed_expectations_are_usage_errors(pytester: pytest.Pytester, body: str, message: str) -> None:
    pytester.makepyfile("def test_x(): pass")
    pytester.path.joinpath("bad.toml").write_text(body)
    result = pytester.runpytest("--keyshared-expectations=bad.toml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: Invalid expectations file *bad.toml*{message}"])


# -- results and baseline --------------------------------------------------------------------------------------


def test_results_file_and_baseline_report_new_failures_and_fixes(
    fake_target_conftest: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester = fake_target_conftest
    pytester.makepyfile(test_cases=CASES)
    result = run(pytester, "--keyshared-results=before.json")
    result.stdout.fnmatch_lines(["keyshared results written to */before.json"])
    before = json.loads((pytester.path / "before.json").read_text())
    assert before["format"] == "pytest-keyshared-results/1"
    assert before["cases"]["test_cases.py::test_overlap"]["contracts"] == {
        "key-exclusivity": "failed",
        "ordering": "passed",
    }
    assert before["cases"]["test_cases.py::test_dedup"]["outcome"] == "skipped"

    # "upgrade": holds breaks ordering now, overlap is fixed; expected-to-fail does not excuse a regression
    monkeypatch.setenv("FAKE_BROKEN", "holds,replication")
    pytester.path.joinpath("fake.toml").write_text(
        '[cases."test_cases.py::test_holds"]\nstatus = "fails"\nreason = "known"\n'
    )
    result = run(pytester, "--keyshared-baseline=before.json", "--keyshared-expectations=fake.toml")
    assert_in_order(
        result,
        "keyshared baseline comparison",
        "/before.json (target=fake version=None)",
        "new failures: 1   fixes: 1",
        "  NEW FAILURE test_cases.py::test_holds [ordering]: passed -> xfailed",
        "  FIXED       test_cases.py::test_overlap [key-exclusivity]: failed -> passed",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_baseline_with_only_fixes_passes(
    fake_target_conftest: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester = fake_target_conftest
    pytester.makepyfile(test_cases=CASES)
    run(pytester, "-k", "overlap", "--keyshared-results=before.json")
    monkeypatch.setenv("FAKE_BROKEN", "")
    result = run(pytester, "-k", "overlap", "--keyshared-baseline=before.json")
    assert_in_order(result, "new failures: 0   fixes: 1")
    assert result.ret == pytest.ExitCode.OK


def test_malformed_baseline_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x(): pass")
    pytester.path.joinpath("base.json").write_text('{"format": "junit"}')
    result = pytester.runpytest("--keyshared-baseline=base.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: Invalid baseline results file *base.json:"
            " expected \"format\": 'pytest-keyshared-results/1' but got 'junit'*"
        ]
    )
