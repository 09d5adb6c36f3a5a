"""Under pytest-xdist: one root seed for every worker, one target per worker, one summary on the controller."""

from __future__ import annotations

import json

import pytest
from plugin_helpers import assert_in_order

pytest_plugins = ["pytester"]

WORKER_CASES = """
import json, os
import pytest
from conftest import FakeVerdict, FakeViolation

@pytest.mark.parametrize("n", range(6))
@pytest.mark.keyshared_contract("ordering")
def test_case(n, keyshared_settings, keyshared_seed, keyshared_target, keyshared_check):
    with open(os.environ["SEEN_LOG"], "a") as fh:
        fh.write(json.dumps({"worker": os.environ.get("PYTEST_XDIST_WORKER"), "root": keyshared_settings.seed,
                             "n": n, "seed": keyshared_seed}) + "\\n")
    if n == 4:
        keyshared_check(FakeVerdict(FakeViolation("out_of_order", "k4", "k4 arrived 2 before 1")))
"""


def test_xdist_shares_the_seed_and_aggregates_on_the_controller(
    fake_target_conftest: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester = fake_target_conftest
    seen, starts = pytester.path / "seen.jsonl", pytester.path / "starts.jsonl"
    monkeypatch.setenv("SEEN_LOG", str(seen))
    monkeypatch.setenv("FAKE_TARGET_LOG", str(starts))
    pytester.makepyfile(test_cases=WORKER_CASES)
    result = pytester.runpytest_subprocess("-n", "2", "--keyshared-target=fake", "--keyshared-results=r.json")
    result.assert_outcomes(passed=5, failed=1)
    rows = [json.loads(line) for line in seen.read_text().splitlines()]
    assert {r["worker"] for r in rows} == {"gw0", "gw1"}
    assert len({r["root"] for r in rows}) == 1  # the controller's seed reached every worker
    root = rows[0]["root"]
    result.stdout.fnmatch_lines([f"*keyshared conformance: target=fake seed={root}*"])
    # one target per worker: each worker is its own pytest session
    assert sorted(json.loads(line)["worker"] for line in starts.read_text().splitlines()) == ["gw0", "gw1"]
    # per-case seeds are independent of which worker ran the case
    serial = pytester.path / "serial.jsonl"
    monkeypatch.setenv("SEEN_LOG", str(serial))
    pytester.runpytest_subprocess("-p", "no:xdist", "--keyshared-target=fake", f"--keyshared-seed={root}")
    by_n = {r["n"]: r["seed"] for r in rows}
    assert by_n == {r["n"]: r["seed"] for r in map(json.loads, serial.read_text().splitlines())}
    # the controller saw all six records
    result.stdout.fnmatch_lines(["ordering * 5 * 1 * 0 * 0 * 0", "cases * 5 * 1 * 0 * 0 * 0"])
    assert_in_order(result, "FAILED test_cases.py::test_case[4] [ordering]", "k4 arrived 2 before 1")
    assert len(json.loads((pytester.path / "r.json").read_text())["cases"]) == 6
