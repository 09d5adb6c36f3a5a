"""Soaks against the embedded pulsar-lite broker: every fault kind injected and recorded, bounded, and its
documented deviations found; without churn and faults, only its documented selector deviation."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from conformance.soak import SoakPlan
from conformance.trace.chunks import read_chunks
from pytest_keyshared.soak import run_soak
from pytest_keyshared.targets import open_target

pytestmark = pytest.mark.broker

#: What pulsar-lite is documented to break (research note pulsar-lite.md §5; conformance/expectations):
#: no draining (key_overlap, out_of_order), stalls and one-per-key redelivery (undelivered), equal slices
#: instead of consistent hashing (misassigned), spurious duplicates (redelivered_after_ack), and the freeze under
#: faults (stalled: docs/soak.md, "Against pulsar-lite").
DOCUMENTED = {"key_overlap", "out_of_order", "undelivered", "misassigned", "redelivered_after_ack", "stalled"}


def test_churn_and_every_fault_kind(tmp_path: Path) -> None:
    plan = SoakPlan(
        duration_s=20,
        rate=200,
        churn_per_min=30,
        faults=("restart", "cut", "stall", "delay", "partition"),
        fault_every_s=6,
        fault_seconds=1.5,
        seed=3,
        publish="mixed",
        drain_timeout_ms=8_000,
    )
    started = time.monotonic()
    with open_target("pulsar-lite", artifacts_dir=tmp_path / "target") as target:
        result = run_soak(target, plan, out_dir=tmp_path)
    took = time.monotonic() - started
    assert took < 100, f"the soak took {took:.0f}s (load 20s + bounded drain and teardown)"
    assert set(result.faults) == {"restart", "cut", "stall", "delay", "partition"}, result.faults
    events = list(read_chunks(result.trace_dir)[1])
    faults = [e for e in events if e.op.value == "fault"]
    injected = {e.extra["fault"] for e in faults if str(e.extra["fault"]).startswith("net_")}
    assert {"net_cut", "net_stall", "net_delay", "net_partition"} <= injected
    for event in faults:  # every nemesis fault names the clients it touched
        if str(event.extra["fault"]).startswith("net_"):
            assert event.extra.get("consumers") or event.extra.get("producers"), event.to_json()
    assert any(e.extra.get("fault") == "broker_restart" for e in faults)
    assert events[-1].op.value == "end"
    assert result.exit_code == 1 and result.verdict is not None
    kinds = set(result.violation_kinds())
    assert kinds and kinds <= DOCUMENTED, kinds
    for name in ("verdict", "summary", "plan", "trace", "broker_log", "client_log"):
        assert name in result.artifacts, name


def test_without_churn_and_faults_only_the_selector_deviation(tmp_path: Path) -> None:
    """The default soak with churn and faults off: what is left is pulsar-lite's equal-slice selector
    (``misassigned``), and perhaps its spurious duplicates (docs/soak.md, "Against pulsar-lite").

    Defaults resolved for pulsar-lite: sync publishes (pipelined sends stall its Key_Shared dispatch,
    pulsar-lite.md 5.2) and every behaviour but ``nack`` (a nack redelivery stops its dispatch for good)."""
    plan = SoakPlan(duration_s=8, rate=300, churn_per_min=0, seed=2)
    with open_target("pulsar-lite", artifacts_dir=tmp_path / "target") as target:
        result = run_soak(target, plan, out_dir=tmp_path)
    assert result.plan.publish == "sync" and "nack" not in result.plan.behaviours
    assert {"slow", "hold", "ack_after"} <= set(result.plan.behaviours)
    assert any("all but nack" in note for note in result.notes), result.notes
    c = result.counters
    assert c.published_ok > 1000 and c.acked_expected == c.expected_uids and result.quiet
    events = {e.i: e for e in read_chunks(result.trace_dir)[1]}
    for v in result.verdict.violations:
        kind = str(v.kind.value)
        if kind == "redelivered_after_ack":  # the documented spurious duplicate: again at once, same consumer
            ack, again = events[v.events[0]], events[v.events[-1]]
            assert again.redelivery_count == 0 and again.consumer == ack.consumer, (ack, again)
        else:
            assert kind == "misassigned", v.render() if hasattr(v, "render") else v
