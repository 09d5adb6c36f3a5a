"""``--keyshared-engine=spark``: every trace is judged again by the PySpark engine, with the same verdict."""

from __future__ import annotations

import json

import pytest
from test_plugin_model_target import NO_DRAINING_CONFTEST

pytest_plugins = ["pytester"]

#: Small on purpose: one Spark check is several jobs, seconds each on two cores.
CASES = """
import json
import pytest
from conformance.scenarios import loads_scenario

JOIN = loads_scenario('''
name = "small-join"
[[steps]]
do = "open"
consumer = "c1"
behaviour = "hold"
[[steps]]
do = "publish"
count = 4
keys = 2
[[steps]]
do = "open"
consumer = "c2"
[[steps]]
do = "publish"
count = 4
keys = 2
[[steps]]
do = "wait_quiet"
''', "toml")

@pytest.mark.keyshared_contract("key-exclusivity", "ordering")
def test_join(keyshared_run, keyshared_check, keyshared_artifacts):
    result = keyshared_run(JOIN)
    (keyshared_artifacts / "engine.json").write_text(json.dumps(
        {"engine": result.verdict.engine, "kinds": sorted({str(v.kind) for v in result.verdict.violations}),
         "trace": str(result.trace_path)}))
    keyshared_check(result)
"""


@pytest.mark.spark
def test_spark_engine_reaches_the_python_engines_verdict(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(NO_DRAINING_CONFTEST)
    pytester.makepyfile(test_cases=CASES)
    result = pytester.runpytest_subprocess(
        "--keyshared-target=no-draining", "--keyshared-seed=4", "--keyshared-engine=spark"
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*keyshared: target=no-draining * engine=spark *"])
    seen = json.loads(next((pytester.path / "keyshared-artifacts").rglob("engine.json")).read_text())
    assert seen["engine"] == "spark"
    from conformance.checks import check_trace

    python = check_trace(seen["trace"], engine="python")
    assert seen["kinds"] == sorted({str(v.kind) for v in python.violations}) and seen["kinds"]
