"""Proposed fixes of open Pulsar bugs, applied by the model only when asked (``BrokerConfig.proposed_fixes``).

apache/pulsar#23803 is open in every release: a replay read in flight when the last consumer leaves is dispatched
to the next consumer although the cursor rewind it deferred is pending, and the rewind sends the same entries
again. #10662 proposed to drop that read's entries as a normal read's are dropped (``readEntriesComplete``). With
it applied the bug's own case and the generated programs it breaks pass; without it they fail as Pulsar does. The
sweep's attribution relies on exactly this to name #23803 (``conformance.generated.attribution``, rule 0).

The same for a fixed bug whose fix a later change hides: a release run with one gate backported
(``reference_model.versions.with_backports``, the model target's ``backports`` option; rule 4).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.generated.program import program_from_seed
from conformance.scenarios import Scenario, load_scenario
from pytest_keyshared.driver import run_scenario
from pytest_keyshared.generated_sweep import sweep
from pytest_keyshared.targets import open_target
from reference_model.broker import BrokerConfig
from reference_model.errors import InvalidArgument, UnknownVersion
from reference_model.versions import (
    CLASSIC_REPLAY_FILTER,
    PIP_379,
    REWIND_BEFORE_REPLAY_READ,
    STICKY_GAP_FIX,
    parse_version,
    with_backports,
)

CASE = Path(__file__).parents[2] / "conformance/cases/scenarios/known_bugs/23803-replay-read-during-rewind.toml"
#: a generated program (length 20, every dimension) that #23803 breaks on the classic dispatcher (2026-11-29)
SEED_23803 = 9080


def _kinds(target: str, scenario: Scenario, seed: int, tmp_path: Path, proposed: list[str]) -> set[str]:
    options = {"proposed_fixes": proposed} if proposed else None
    with open_target(target, artifacts_dir=tmp_path / "target", options=options) as opened:
        result = run_scenario(opened, scenario, seed=seed, out_dir=tmp_path / "run", live_check=False)
    return {str(getattr(v.kind, "value", v.kind)) for v in result.verdict.violations}


@pytest.fixture
def fix() -> Iterator[list[str]]:
    yield [REWIND_BEFORE_REPLAY_READ.reference]


@pytest.mark.parametrize("target", ["model:classic", "model:3.0", "model:2.10"])
def test_the_23803_case_fails_as_pulsar_does_and_passes_with_10662(target: str, tmp_path: Path, fix: list[str]) -> None:
    case = load_scenario(CASE)
    assert "redelivered_after_ack" in _kinds(target, case, 1, tmp_path / "bug", [])
    assert _kinds(target, case, 1, tmp_path / "fixed", fix) == set()


def test_a_generated_program_23803_breaks_passes_with_10662(tmp_path: Path, fix: list[str]) -> None:
    program = program_from_seed(SEED_23803, length=20)
    assert _kinds("model:classic", program, SEED_23803, tmp_path / "bug", []) == {"redelivered_after_ack"}
    assert _kinds("model:classic", program, SEED_23803, tmp_path / "fixed", fix) == set()


def test_the_sweep_names_23803_for_it() -> None:
    report = sweep("model:classic", 1, first_seed=SEED_23803, length=20)
    (failure,) = report.failures
    assert failure.attribution.expected, failure.attribution.render()
    assert failure.attribution.bugs == ("23803-replay-read-during-rewind",)
    assert failure.attribution.passes_on == f"model:classic with {REWIND_BEFORE_REPLAY_READ.reference}"


def test_the_pip379_model_is_unchanged_by_the_proposal(tmp_path: Path, fix: list[str]) -> None:
    """The model's PIP-379 dispatcher reads synchronously after a removal: the proposal has nothing to drop."""
    case = load_scenario(CASE)
    assert _kinds("model:4.0", case, 1, tmp_path / "a", []) == set()
    assert _kinds("model:4.0", case, 1, tmp_path / "b", fix) == set()


def test_an_unknown_proposed_fix_is_refused_in_one_line() -> None:
    with pytest.raises(InvalidArgument, match=r"Unknown proposed fix 'apache/pulsar#1'.*Known: apache/pulsar#10662"):
        BrokerConfig(proposed_fixes=frozenset({"apache/pulsar#1"}))


#: seed 758's plain program shrunk (docs/model.md): c1 prefetches eight messages, c2 joins, c1 asks for everything
#: again (key-01 and key-04 go to c2), c2 crashes, five more are published, c1 closes and reopens in one instant
SHRUNK_758 = """
name = "758-shrunk"
[settings]
receiver_queue = 20
nack_delay_ms = 100
drain_timeout_ms = 4000
quiet_ms = 250
drain_quiet_ms = 1500
step_timeout_ms = 3000
send_timeout_ms = 3000
[[steps]]
do = "open"
consumer = "c1"
behaviour = "hold"
[[steps]]
do = "publish"
count = 8
keys = 6
[[steps]]
do = "open"
consumer = "c2"
[[steps]]
do = "redeliver"
consumer = "c1"
[[steps]]
do = "crash"
consumer = "c2"
[[steps]]
do = "publish"
count = 5
keys = 6
[[steps]]
do = "close"
consumer = "c1"
[[steps]]
do = "open"
consumer = "c1"
"""


def test_seed_758_is_23803_not_a_checker_false_positive(tmp_path: Path, fix: list[str]) -> None:
    """Once read as a checker false positive (a redeliver request releasing messages c1 had only prefetched):
    c1 receives 0:9 before 0:1 of key-01.  The removals of c1 and c2 left 0:1 (c2's) in the replay queue and a
    replay read of c1's entries (0:9 among them) in flight; c1's reopening cleared the queue and deferred the
    rewind, and the replay read was dispatched: 0:9 overtook 0:1, which waits for a rewind that only a later
    publish would complete.  Pulsar does the same (#23803); with #10662 applied the trace is valid, so the checker
    judged it right."""
    from conformance.scenarios import loads_scenario

    shrunk = loads_scenario(SHRUNK_758, "toml")
    assert _kinds("model:classic", shrunk, 758, tmp_path / "bug", []) == {"out_of_order", "undelivered"}
    assert _kinds("model:classic", shrunk, 758, tmp_path / "fixed", fix) == set()


STICKY_GAP_FINDING = Path(__file__).parents[2] / "docs/generated-findings/classic-sticky-gap-unacked-limit-overlap.toml"


def test_a_backported_gate_runs_the_release_with_that_fix_only(tmp_path: Path) -> None:
    """Seed 20 shrunk: a STICKY gap hash reaches c3 (#24730) and the key's owner c2 gets a later message while c3
    holds it, on 3.0.4; 3.0.5 hides it (#22245), 3.0.14 fixes it.  3.0.4 with only the sticky-gap fix passes."""
    finding = load_scenario(STICKY_GAP_FINDING)
    assert _kinds("model:3.0.4", finding, 20, tmp_path / "bug", []) == {"key_overlap", "out_of_order"}
    with open_target("model:3.0.4", artifacts_dir=tmp_path / "t", options={"backports": [STICKY_GAP_FIX.name]}) as t:
        assert str(t.version) == "3.0.4" and t.version.has(STICKY_GAP_FIX) and not t.version.has(CLASSIC_REPLAY_FILTER)
        result = run_scenario(t, finding, seed=20, out_dir=tmp_path / "fixed", live_check=False)
    assert result.verdict.valid


def test_backports_are_refused_for_pip379_and_unknown_gates() -> None:
    with pytest.raises(UnknownVersion, match="Unknown gate 'PIP-379 draining hashes'"):
        with_backports("3.0.4", [PIP_379.name])
    with pytest.raises(UnknownVersion, match="Unknown gate 'no such gate'"):
        with_backports("3.0.4", ["no such gate"])
    assert with_backports("3.0.4", []) == parse_version("3.0.4")
