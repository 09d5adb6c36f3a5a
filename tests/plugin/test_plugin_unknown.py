"""A case whose verdict is ``unknown`` (a check crashed) never passes: it fails with ``UnknownVerdict``, naming
the check and its exception, and is not counted as a broken contract."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

pytest_plugins = ["pytester"]

CASE = """
import pytest
import conformance.checks.unexpected as unexpected
from conformance.trace.builder import TraceBuilder

def _boom(*args, **kwargs):
    raise RuntimeError("injected into the check")

@pytest.mark.keyshared_contract("delivery")
def test_judged_by_a_crashing_check(keyshared_check, keyshared_artifacts, monkeypatch):
    b = TraceBuilder()
    b.open("c1")
    b.receive("c1", "k", "1:0")  # never published: the unexpected check must explain it
    b.ack("c1", "1:0")
    b.end()
    path = b.write(keyshared_artifacts / "trace.jsonl")
    monkeypatch.setattr(unexpected, "explain", _boom)
    keyshared_check(path)
"""


def test_an_unknown_verdict_fails_the_case_naming_the_check(fake_target_conftest: pytest.Pytester) -> None:
    pytester = fake_target_conftest
    pytester.makepyfile(test_unknown=CASE)
    result = pytester.runpytest("--keyshared-target=fake", "--keyshared-seed=3", "--junitxml=junit.xml")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*UnknownVerdict: UNKNOWN (check unexpected crashed)*",
            "*check 'unexpected' crashed at the end: RuntimeError: injected into the check*",
        ]
    )
    assert "broken contract" not in result.stdout.str()
    junit = ET.parse(pytester.path / "junit.xml")
    props = {p.get("name"): p.get("value") for p in junit.iter("property")}
    assert props["keyshared_verdict"] == "unknown" and props["keyshared_broken"] == ""
