"""A planted replication bug is caught by the ordinary checker, from a stored trace.

The variant: the model's replicated-subscription layer advances the replicated cursor to the newest snapshot
whenever the local mark-delete moves, as if everything read had been acknowledged — past the messages the
application still held.  The standby cluster then resumes after messages nobody acknowledged, which PIP-33
forbids.  The unchanged model passes the same cases (``conformance/cases/test_replication.py``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from failover_runs import (
    VARIANT_CONFTEST,
    across_two_regions,
    cursor_never_replicated,
    cursor_past_unacked,
    switch_to_standby,
)

from conformance.checks import Kind, Validity, check_trace
from pytest_keyshared.cli import main

pytest_plugins = ["pytester"]


def test_the_model_keeps_the_promise(tmp_path: Path) -> None:
    verdict = check_trace(switch_to_standby(tmp_path / "ok.jsonl"))
    assert verdict.validity is Validity.VALID, verdict.render()


def test_a_cursor_moved_past_unacked_messages_is_skipped_after_failover(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with cursor_past_unacked():
        path = switch_to_standby(tmp_path / "bad.jsonl")
    verdict = check_trace(path)
    assert verdict.validity is Validity.INVALID
    assert {v.kind for v in verdict.violations} == {Kind.SKIPPED_AFTER_FAILOVER, Kind.REPLICATED_CURSOR_AHEAD}
    (ahead,) = [v for v in verdict.violations if v.kind is Kind.REPLICATED_CURSOR_AHEAD]
    assert ahead.facts["cluster"] == "r2" and ahead.facts["unacknowledged"] == 10  # m10..m19 held on r1
    assert main(["check", str(path)]) == 1
    out = capsys.readouterr().out
    assert "skipped_after_failover: m1" in out and "However, the run drained r2" in out
    assert "replicated_cursor_ahead: subscription 'ks-replicated-sub' on r2 had passed" in out


def test_the_same_seed_gives_the_same_trace(tmp_path: Path) -> None:
    first = switch_to_standby(tmp_path / "a.jsonl", seed=9).read_bytes()
    assert switch_to_standby(tmp_path / "b.jsonl", seed=9).read_bytes() == first


def test_the_replication_cases_fail_on_the_variant(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(VARIANT_CONFTEST)
    result = pytester.runpytest(
        "-p", "pytest_keyshared", "--pyargs", "conformance.cases.test_replication", "--keyshared-target=model",
        "-k", "switch-to-standby or ack-holes",
    )  # fmt: skip
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*FAILED replication/switch-to-standby*replication*", "*skipped_after_failover*"])


def test_a_cursor_never_replicated_redelivers_what_a_snapshot_covered(tmp_path: Path) -> None:
    """The correct model re-sends none of the 3 messages acknowledged before a settled snapshot; a model whose
    remote never applies the cursor update re-sends all 3: ``redelivered_after_failover``, from the trace."""
    good = check_trace(across_two_regions(tmp_path / "good.jsonl"))
    assert good.validity is Validity.VALID and not any("delivered again" in n for n in good.notes), good.render()
    with cursor_never_replicated():
        bad = check_trace(across_two_regions(tmp_path / "bad.jsonl"))
    assert [v.facts["uid"] for v in bad.violations] == ["m0", "m1", "m2"], bad.render()
    assert {v.kind for v in bad.violations} == {Kind.REDELIVERED_AFTER_FAILOVER}
