"""The ``keyshared_soak`` fixture and the suite's ``--keyshared-soak`` option, tested from outside."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]


def test_fixture_soaks_the_session_target(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        def test_soak(keyshared_soak, keyshared_check):
            result = keyshared_soak(messages=400, rate=400, churn_per_min=120, faults=("restart",))
            assert result.counters.published_ok == 400 and result.faults.get("restart", 0) >= 1
            keyshared_check(result)

        def test_network_faults_skip_on_the_model(keyshared_soak):
            keyshared_soak("2s", faults=("cut",))
        """
    )
    result = pytester.runpytest_subprocess("-p", "pytest_keyshared", "--keyshared-target=model", "--keyshared-seed=5")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*no network connections to fault*"])


def test_suite_soak_case_is_collected_only_with_the_option(pytester: pytest.Pytester) -> None:
    base = ("-p", "pytest_keyshared", "--pyargs", "conformance", "--keyshared-target=model", "--collect-only", "-q")
    without = pytester.runpytest_subprocess(*base)
    assert "test_soak" not in without.stdout.str()
    with_option = pytester.runpytest_subprocess(*base, "--keyshared-soak=5s")
    with_option.stdout.fnmatch_lines(["*test_soak.py::test_churn_and_faults*"])
    bad = pytester.runpytest_subprocess(*base, "--keyshared-soak=ten")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*Invalid keyshared_soak 'ten'*"])
