"""Planted replication bugs in the model's snapshot cache and controller counters, caught from the traces of the
replication cases, and the unchanged model passing the same runs.

* A snapshot cache that keeps only its newest snapshot (cleared whenever a newer one arrives): with an ack hole
  open across two snapshots, closing the hole hands out nothing, r2's cursor stays behind and r2 delivers m0 and
  m1 again (``redelivered_after_failover``, a point made with holes open; ``replication/snapshot-cache-holes``).
* Controllers that count no completed or no timed-out snapshot: the recorded ``/metrics`` counters stay behind
  what the trace proves (``stats_mismatch``, :mod:`conformance.cases._snapshot_metrics`;
  ``replication/snapshot-answers-lost``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.cases._snapshot_metrics import snapshot_metrics_problems
from conformance.checks import Kind, Validity, check_trace
from pytest_keyshared.cli import main
from reference_model.replication import controller as controller_module
from reference_model.replication.snapshot_cache import DistanceSnapshotCache, NewestSnapshotCache

SCENARIOS = Path(__file__).resolve().parents[2] / "conformance" / "cases" / "scenarios" / "replication"


def run(tmp_path: Path, scenario: str, target: str = "model") -> Path:
    out = tmp_path / scenario
    code = main(["run", str(SCENARIOS / f"{scenario}.toml"), "--target", target, "--out", str(out), "--quiet"])
    assert code in (0, 1)
    return out / "trace.jsonl"


@pytest.fixture
def newest_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for cache in (DistanceSnapshotCache, NewestSnapshotCache):
        original = cache.add

        def add(self: object, snapshot: object, _original: object = original) -> None:
            for kept in list(self.snapshots()):  # type: ignore[attr-defined]
                self.advanced_mark_delete_position(kept.local_position)  # type: ignore[attr-defined]
            _original(self, snapshot)  # type: ignore[operator]

        monkeypatch.setattr(cache, "add", add)
    yield


@pytest.mark.parametrize("target", ["model", "model:3.0"], ids=["by-distance", "newest-n"])
def test_the_model_keeps_a_snapshot_taken_with_holes_open(tmp_path: Path, target: str) -> None:
    verdict = check_trace(run(tmp_path, "snapshot-cache-holes", target))
    assert verdict.validity is Validity.VALID, verdict.render()


@pytest.mark.parametrize("target", ["model", "model:3.0"], ids=["by-distance", "newest-n"])
def test_a_cache_that_keeps_only_its_newest_snapshot_redelivers(tmp_path: Path, target: str, newest_only: None) -> None:
    verdict = check_trace(run(tmp_path, "snapshot-cache-holes", target))
    assert sorted(v.facts["uid"] for v in verdict.violations if v.kind is Kind.REDELIVERED_AFTER_FAILOVER) == [
        "m0",
        "m1",
    ]


def test_the_model_counts_its_snapshots(tmp_path: Path) -> None:
    assert snapshot_metrics_problems(run(tmp_path, "snapshot-answers-lost")) == []


@pytest.mark.parametrize("counter", ["snapshots_completed", "snapshots_timed_out"])
def test_a_counter_that_never_grows_is_a_stats_mismatch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, counter: str
) -> None:
    cls = controller_module.ReplicatedSubscriptionsController
    monkeypatch.setattr(cls, counter, property(lambda self: 0, lambda self, value: None), raising=False)
    problems = snapshot_metrics_problems(run(tmp_path, "snapshot-answers-lost"))
    name = "snapshot_ms_count" if counter == "snapshots_completed" else "timedout_snapshots"
    assert problems and all(name in p for p in problems), problems
