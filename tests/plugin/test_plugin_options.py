"""Options, ini keys, environment variables and markers: resolution order, validation, header, seeds."""

from __future__ import annotations

import pytest

from pytest_keyshared.state import case_seed

pytest_plugins = ["pytester"]

SHOW_SETTINGS = """
import pytest

def test_show(keyshared_settings, keyshared_seed):
    print("ENGINE", keyshared_settings.value("engine"))
    print("ROOT", keyshared_settings.seed)
    print("CASESEED", keyshared_seed)
"""


@pytest.fixture(autouse=True)
def _no_keyshared_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The outer environment must not leak KEYSHARED_* settings into the runs under test."""
    import os

    for name in list(os.environ):
        if name.startswith("KEYSHARED_"):
            monkeypatch.delenv(name)


def test_header_names_target_version_and_seed(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest("--keyshared-target=model", "--keyshared-seed=7")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["keyshared: target=model version=claimed-by-target seed=7 engine=python *"])


def test_header_shows_the_claimed_version_when_given(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest("--keyshared-pulsar-version=pulsar-3.3", "--keyshared-seed=1")
    result.stdout.fnmatch_lines(["keyshared: target=pulsar-lite version=3.3 seed=1 *"])


def test_cli_beats_env_beats_ini_beats_default(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(SHOW_SETTINGS)
    result = pytester.runpytest("-s")
    result.stdout.fnmatch_lines(["*ENGINE python"])  # default
    pytester.makeini("[pytest]\nkeyshared_engine = spark\n")
    result = pytester.runpytest("-s")
    result.stdout.fnmatch_lines(["*ENGINE spark"])  # ini beats default
    monkeypatch.setenv("KEYSHARED_ENGINE", "python")
    result = pytester.runpytest("-s")
    result.stdout.fnmatch_lines(["*ENGINE python"])  # env beats ini
    result = pytester.runpytest("-s", "--keyshared-engine=spark")
    result.stdout.fnmatch_lines(["*ENGINE spark"])  # command line beats env


def test_marker_beats_command_line_for_per_test_settings(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.keyshared(seed=5)
        def test_fixed(keyshared_seed):
            assert keyshared_seed == 5

        def test_derived(keyshared_seed, keyshared_settings):
            print("DERIVED", keyshared_seed)
        """
    )
    result = pytester.runpytest("-s", "--keyshared-seed=7")
    result.assert_outcomes(passed=2)
    # an unmarked test derives its seed from the root seed and its stable case id (here the node id)
    result.stdout.fnmatch_lines(
        [f"*DERIVED {case_seed(7, 'test_marker_beats_command_line_for_per_test_settings.py::test_derived')}"]
    )


@pytest.mark.parametrize(
    ("how", "expected"),
    [
        (
            "cli",
            "Invalid keyshared_seed 'x' from the command line (--keyshared-seed);"
            " expected an integer, 'last' or 'random'",
        ),
        (
            "env",
            "Invalid keyshared_seed 'x' from the environment (KEYSHARED_SEED); expected an integer, 'last' or 'random'",
        ),
        ("ini", "Invalid keyshared_seed 'x' from the ini file; expected an integer, 'last' or 'random'"),
    ],
)
def test_bad_value_names_its_source(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, how: str, expected: str
) -> None:
    pytester.makepyfile("def test_x(): pass")
    args = []
    if how == "cli":
        args.append("--keyshared-seed=x")
    elif how == "env":
        monkeypatch.setenv("KEYSHARED_SEED", "x")
    else:
        pytester.makeini("[pytest]\nkeyshared_seed = x\n")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {expected}"])
    assert "Traceback" not in result.stderr.str()


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (
            "--keyshared-engine=sprak",
            "*Invalid keyshared_engine 'sprak'*expected one of python, spark. Did you mean 'spark'?",
        ),
        ("--keyshared-pulsar-version=9.9", "*Invalid keyshared_pulsar_version '9.9'*expected a Pulsar version*"),
        ("--keyshared-admin-url=127.0.0.1:8080", "*Invalid keyshared_admin_url*expected an http:// or https:// URL*"),
        ("--keyshared-hypothesis-profile=slow", "*Invalid keyshared_hypothesis_profile 'slow'*fast, thorough*"),
        ("--keyshared-baseline=missing.json", "*Cannot read baseline results file *missing.json*"),
        ("--keyshared-expectations=missing.toml", "*Cannot read expectations file *missing.toml*"),
    ],
)
def test_bad_options_are_one_line_usage_errors(pytester: pytest.Pytester, option: str, message: str) -> None:
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest(option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert "Traceback" not in result.stderr.str()


def test_bad_marker_setting_and_contract_are_usage_errors(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.keyshared(seed="soon")
        def test_a(keyshared_seed):
            pass
        """
    )
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: Invalid keyshared_seed 'soon' from @pytest.mark.keyshared(seed=...) on test_bad_marker*::test_a;*"]
    )
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.keyshared_contract("orderin")
        def test_a(keyshared_seed):
            pass
        """
    )
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: Unknown contract 'orderin' in @pytest.mark.keyshared_contract on *Did you mean 'ordering'?*"]
    )
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.keyshared(target="model")
        def test_a(keyshared_seed):
            pass
        """
    )
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: Unknown setting 'target' in @pytest.mark.keyshared on *Per-test settings: engine, seed."]
    )


def test_seed_last_reuses_the_previous_runs_seed(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(SHOW_SETTINGS)
    first = pytester.runpytest("-s", "-p", "cacheprovider")
    root = next(line.split()[1] for line in first.outlines if line.startswith("ROOT "))
    again = pytester.runpytest("-s", "--keyshared-seed=last")
    again.stdout.fnmatch_lines([f"keyshared: *seed={root} (last) *", f"ROOT {root}"])


def test_seed_last_without_a_cached_seed_says_so(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest("--keyshared-seed=last", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["keyshared: *seed=* (no previous seed cached: chose a new one)*"])


def test_random_seeds_differ_between_runs(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(SHOW_SETTINGS)
    seeds = set()
    for _ in range(3):
        result = pytester.runpytest("-s")
        seeds.add(next(line for line in result.outlines if line.startswith("ROOT ")))
    assert len(seeds) > 1


def test_markers_are_registered_with_their_signatures(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--markers")
    result.stdout.fnmatch_lines(
        [
            "@pytest.mark.keyshared_contract(*contracts): *",
            "@pytest.mark.keyshared_requires(*capabilities): *",
            "@pytest.mark.keyshared(seed=None, engine=None): *",
            "@pytest.mark.keyshared_case(id): *",
        ]
    )


def test_help_lists_every_option_with_its_env_and_ini_names(pytester: pytest.Pytester) -> None:
    from pytest_keyshared.options import SETTINGS

    result = pytester.runpytest("--help")
    out = result.stdout.str()
    for setting in SETTINGS.values():
        assert setting.flag in out
        assert setting.ini in out  # listed among the ini keys
    result.stdout.fnmatch_lines(["*--keyshared-target=TARGET*"])


def test_plugin_is_inert_for_sessions_without_keyshared_cases(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        def pytest_keyshared_make_target(config, spec, artifacts_dir):
            raise AssertionError("no target may be started")
        """
    )
    pytester.makepyfile("def test_a(): pass\ndef test_b(): assert 0")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    assert "keyshared conformance" not in result.stdout.str()
    assert not (pytester.path / "keyshared-artifacts").exists()
