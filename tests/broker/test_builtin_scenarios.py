"""Every built-in scenario against a real pulsar-lite, with the verdict each one produces.

pulsar-lite is checked against what a Pulsar 4.0 broker would do (PIP-379, consistent hashing), so its own
selector (equal hash slices by consumer id, pulsar-lite.md §4.1) shows up as ``misassigned`` in every
AUTO_SPLIT scenario with several consumers: a finding.  Each test asserts the kinds the scenario exists to
show and what always holds; where pulsar-lite's behaviour depends on timing, the test says so and asserts
only the part that does not.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conformance.scenarios import builtin_scenarios, load_scenario
from conformance.trace.reader import read_trace
from pytest_keyshared.driver import RunResult, run_scenario
from pytest_keyshared.driver.selfcheck import discipline_problems
from pytest_keyshared.targets.pulsar_lite import PulsarLiteTarget

pytestmark = pytest.mark.broker

Kinds = Callable[[RunResult], set[str]]

SAFETY = {"key_overlap", "out_of_order", "redelivered_after_ack", "unexpected_message"}


def run(lite: PulsarLiteTarget, name: str, tmp_path: Path) -> RunResult:
    result = run_scenario(lite, load_scenario(name), seed=0, out_dir=tmp_path)
    events = [json.loads(line) for line in result.trace_path.read_text().splitlines()[1:]]
    assert discipline_problems(events) == []
    read_trace(result.trace_path)  # the checker's reader accepts every trace the driver writes
    assert result.verdict is not None
    assert result.verdict_path is not None and result.broker_log is not None and result.broker_log.stat().st_size
    header = json.loads(result.trace_path.read_text().splitlines()[0])
    assert header["target"] == "pulsar-lite" and header["pulsar_version"] == "4.0"
    assert header["publish_mode"] == "sync"  # pipelined sends stall pulsar-lite's Key_Shared (§5.2)
    return result


def test_every_builtin_is_covered_here() -> None:
    covered = {name.removeprefix("test_").replace("_", "-") for name in globals() if name.startswith("test_")}
    assert set(builtin_scenarios()) <= covered


def test_steady_state(lite: PulsarLiteTarget, tmp_path: Path, kinds: Kinds) -> None:
    result = run(lite, "steady-state", tmp_path)
    assert kinds(result) == {"misassigned"}  # keys are split by slices, not by Pulsar's ring
    assert result.counters.acked_expected == result.counters.expected_uids == 300
    assert result.exit_code == 1


def test_join_while_pending(lite: PulsarLiteTarget, tmp_path: Path, kinds: Kinds) -> None:
    """No draining hashes (§4.4): c2 gets new messages of keys c1 still holds."""
    result = run(lite, "join-while-pending", tmp_path)
    assert "key_overlap" in kinds(result)
    assert result.exit_code == 1
    assert result.counters.acked_expected == 200  # nothing is lost: the overlap is the finding


def test_leave_while_pending(lite: PulsarLiteTarget, tmp_path: Path, kinds: Kinds) -> None:
    """After c1 closes, pulsar-lite redelivers one message per key and stops: acks do not dispatch (§4.4)."""
    result = run(lite, "leave-while-pending", tmp_path)
    assert "undelivered" in kinds(result)
    assert not kinds(result) & {"key_overlap", "redelivered_after_ack", "unexpected_message"}
    assert result.drained and result.counters.acked_expected < result.counters.expected_uids


def test_crash_while_pending(
    lite: PulsarLiteTarget, tmp_path: Path, kinds: Kinds, events: Callable[[Path], list[dict[str, Any]]]
) -> None:
    """A crash is a killed consumer process; pulsar-lite then redelivers as after a close (one per key)."""
    result = run(lite, "crash-while-pending", tmp_path)
    ops = [(e["op"], e.get("consumer")) for e in events(result.trace_path)]
    crash_at = ops.index(("crash", "c1"))
    assert ("close", "c1") not in ops and ("receive", "c1") not in ops[crash_at:]
    assert "undelivered" in kinds(result)
    assert not kinds(result) & {"key_overlap", "redelivered_after_ack", "unexpected_message"}


def test_stuck_consumer(
    lite: PulsarLiteTarget, tmp_path: Path, kinds: Kinds, events: Callable[[Path], list[dict[str, Any]]]
) -> None:
    """Safety holds, but pulsar-lite stops c2's keys too while c1 is stuck (head-of-line blocking, §5.6)."""
    result = run(lite, "stuck-consumer", tmp_path)
    assert not kinds(result) & (SAFETY | {"undelivered"})
    resume = next(s for s in result.steps if s.do == "resume")
    c2 = [e for e in events(result.trace_path) if e["op"] == "receive" and e["consumer"] == "c2"]
    before_resume = [e for e in c2 if e["i"] < resume.first_event]
    assert c2 and len(before_resume) < len(c2)  # Pulsar 4.0 (and the model) deliver all of c2's keys meanwhile


def test_nack_redelivery(lite: PulsarLiteTarget, tmp_path: Path, kinds: Kinds) -> None:
    """pulsar-lite redelivers one nacked message per key at a time and acks do not dispatch (§4.7): it stalls.

    How many redeliveries arrive before the stall depends on timing; that the drain ends with messages
    missing, and that no key is held by two consumers, does not.
    """
    result = run(lite, "nack-redelivery", tmp_path)
    assert "undelivered" in kinds(result)
    assert "key_overlap" not in kinds(result)


def test_sticky_ranges(lite: PulsarLiteTarget, tmp_path: Path, kinds: Kinds) -> None:
    """Fixed, fully covering ranges: pulsar-lite routes exactly by them (§4.5)."""
    result = run(lite, "sticky-ranges", tmp_path)
    assert kinds(result) == set()
    assert result.counters.acked_expected == 200


def test_sticky_conflict(
    lite: PulsarLiteTarget, tmp_path: Path, kinds: Kinds, events: Callable[[Path], list[dict[str, Any]]]
) -> None:
    """pulsar-lite accepts c2's overlapping range, which Pulsar refuses ("Range conflict", §4.5)."""
    result = run(lite, "sticky-conflict", tmp_path)
    opens = {e["consumer"]: e["result"] for e in events(result.trace_path) if e["op"] == "open"}
    assert opens == {"c1": "ok", "c2": "ok", "c3": "ok"}
    assert not kinds(result) & SAFETY


def test_dedup_retry(
    lite: PulsarLiteTarget, tmp_path: Path, kinds: Kinds, events: Callable[[Path], list[dict[str, Any]]]
) -> None:
    """pulsar-lite cannot deduplicate (§4.8): the resends are stored and delivered again."""
    result = run(lite, "dedup-retry", tmp_path)
    assert "duplicate_publish" in kinds(result)
    assert any("deduplication requested but not switched on" in n for n in result.notes)
    receives = [e for e in events(result.trace_path) if e["op"] == "receive"]
    assert len(receives) == 60 and len({e["uid"] for e in receives}) == 50


def test_restart_recovery(
    lite: PulsarLiteTarget, tmp_path: Path, kinds: Kinds, events: Callable[[Path], list[dict[str, Any]]]
) -> None:
    """pulsar-lite keeps everything across a restart (§4.9); clients reconnect by themselves."""
    result = run(lite, "restart-recovery", tmp_path)
    faults = [e for e in events(result.trace_path) if e["op"] == "fault"]
    assert [f["fault"] for f in faults if f["fault"].startswith("broker_")] == ["broker_restart", "broker_restarted"]
    reconnected = {name for f in faults if f["fault"] == "client_reconnected" for name in f.get("consumers", [])}
    assert reconnected == {
        "c1",
        "c2",
    }  # each client's reconnect is in the trace (tests/broker/test_client_reconnects.py)
    assert not kinds(result) & (SAFETY | {"undelivered"})
    assert result.counters.acked_expected == 200
