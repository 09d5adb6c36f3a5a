"""Deduplication epochs in the checker (:mod:`conformance.checks.epochs`), proven both ways on both engines: a
producer forgotten by a proven purge and a deduplication switch start a new epoch (a correct broker's trace is
valid), each planted fault is found (``not_purged``, ``lost_write``, ``last_sequence_id_behind``,
``duplicate_publish``), an inactivity that is not proven (at the bound exactly, equal timestamps, a restart between,
no timeout in the header) judges the producer's ids as one epoch, and the bucketed layout (the Spark engine's split,
the same streaming checker over each part) gives the streaming verdict."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from epoch_traces import BOUND_NS, S, probed, purged, switched
from part_checks import same_verdicts

from conformance.checks import check_trace
from conformance.checks.epochs import split_identity
from conformance.trace.buckets import convert_to_buckets
from conformance.trace.builder import TraceBuilder
from conformance.trace.parquet import write_parquet


def _kinds(b: TraceBuilder, events: list[Any] | None = None) -> list[str]:
    verdict = check_trace(b.events if events is None else events, header=b.header)
    return sorted(v.kind.value for v in verdict.all_violations())


def _flat(b: TraceBuilder) -> list[Any]:
    """The same events, every one at t = 0 (as the model target logs many)."""
    return [replace(e, t=0, extra={**e.extra, "t0": 0} if "t0" in e.extra else e.extra) for e in b.events]


def test_a_producer_closed_past_the_bound_is_a_new_epoch() -> None:
    assert _kinds(purged()) == []
    assert _kinds(purged(receive_first=True)) == []  # the second copy's receive before its receipt


def test_a_purge_the_broker_did_not_make_is_found() -> None:
    found = check_trace(purged(answer=2).events, header=purged(answer=2).header).all_violations()
    assert [v.kind.value for v in found] == ["not_purged"]
    assert found[0].facts["producer"] == "p" and found[0].facts["answer"] == 2
    assert "not_purged" in found[0].explanation and "E" in found[0].explanation
    # the resend answered as a duplicate in the new epoch: its id was kept, the message lost
    assert _kinds(purged(resend="-1:-1")) == ["lost_write"]
    assert _kinds(purged(answer=2, resend="-1:-1")) == ["lost_write", "not_purged"]


@pytest.mark.parametrize(
    "unproven",
    [
        {"gap_ns": BOUND_NS * 3 // 4 - S},  # shorter than the timeout: no purge run can have forgotten it
        {"restart": True},  # recovery marks no producer inactive
        {"timeout_minutes": None},  # the header does not say the timeout
    ],
)
def test_an_unproven_inactivity_keeps_one_epoch(unproven: dict[str, Any]) -> None:
    # a broker that forgot the producer anyway fails the rules that assume it did not
    assert _kinds(purged(**unproven)) == ["duplicate_publish", "last_sequence_id_behind"]
    # and one that remembered it passes
    assert _kinds(purged(answer=2, resend="-1:-1", **unproven)) == []


def test_equal_timestamps_prove_no_purge() -> None:
    assert _kinds(purged(), _flat(purged())) == ["duplicate_publish", "last_sequence_id_behind"]
    assert _kinds(purged(answer=2, resend="-1:-1"), _flat(purged(answer=2, resend="-1:-1"))) == []


def test_a_deduplication_switch_starts_every_producers_next_epoch() -> None:
    assert _kinds(switched()) == []
    assert _kinds(switched(), _flat(switched())) == []  # a switch's effect does not depend on time
    # forgetting what was stored since the switch-on (a restart that replays from the old cursor, or none)
    assert _kinds(switched(answer=-1)) == ["last_sequence_id_behind"]
    assert _kinds(switched(resend="1:6")) == ["duplicate_publish"]
    assert _kinds(switched(answer=-1, resend="1:6"), _flat(switched(answer=-1, resend="1:6"))) == [
        "duplicate_publish",
        "last_sequence_id_behind",
    ]
    found = check_trace(switched(answer=-1).events, header=switched().header).all_violations()
    assert found[0].facts["producer"] == "p" and found[0].facts["epoch"] == 1


def test_identities_name_their_producer() -> None:
    assert split_identity("p") == ("p", 0)
    assert split_identity("p\x1e3") == ("p", 3)


CASES = {
    "purged": purged(),
    "purged-receive-first": purged(receive_first=True),
    "not-purged": purged(answer=2, resend="-1:-1"),
    "unproven": purged(gap_ns=BOUND_NS),
    "switched": switched(),
    "switch-forgotten": switched(answer=-1, resend="1:6"),
    "schedule": probed(20, 7),
    "off-schedule": probed(15, 7),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_bucketed_split_gives_the_streaming_verdict(tmp_path: Path, name: str) -> None:
    b = CASES[name]
    want = check_trace(b.events, header=b.header)
    flat = write_parquet(tmp_path / "t.parquet", b.header, b.events)
    for buckets in (2, 3):
        out = tmp_path / f"b{buckets}"
        convert_to_buckets(flat, out, buckets)
        same_verdicts(check_trace(out), want)


def test_a_creation_answered_minus_one_past_the_timeout_may_find_its_producer_forgotten() -> None:
    within = BOUND_NS * 3 // 4 + S  # past the timeout by a second, not by a purge period
    assert _kinds(purged(gap_ns=within)) == []  # forgotten, as the answer says: a new epoch
    assert _kinds(purged(gap_ns=within, answer=2, resend="-1:-1")) == []  # remembered: the same epoch
    assert _kinds(purged(gap_ns=within, resend="-1:-1")) == ["lost_write"]  # forgotten, yet its id kept
    # exactly the timeout plus one period is not longer: answered its ids, the producer is not not_purged
    assert _kinds(purged(gap_ns=BOUND_NS, answer=2, resend="-1:-1")) == []
    assert _kinds(purged(gap_ns=BOUND_NS + 1, answer=2, resend="-1:-1")) == ["lost_write", "not_purged"]


def test_the_purge_schedule_fits_a_third_of_the_timeout() -> None:
    for phase in (0, 3, 11, 19):
        assert _kinds(probed(20, phase)) == [], phase
        assert _kinds(probed(15, phase)) == ["purge_off_schedule"], phase  # every quarter: no 20-s phase fits
    b = probed(15)
    found = check_trace(b.events, header=b.header).violations
    assert found[0].facts["period_ms"] == 20_000 and found[0].facts["life"] == 0
    assert "purge_off_schedule" in found[0].explanation


def test_the_purge_schedule_starts_anew_at_a_restart() -> None:
    assert _kinds(probed(20, restart_at_s=10)) == []
    # a broker that kept the schedule of its first start (phase 0), 10 s out of phase with the restart
    kept = probed(20, 0)
    restarted = probed(20, restart_at_s=10)
    mixed = [*restarted.events[:3], *kept.events[1:]]
    mixed = [replace(e, i=n) for n, e in enumerate(mixed)]
    assert _kinds(restarted, mixed) == ["purge_off_schedule"]


def test_equal_timestamps_probe_nothing() -> None:
    b = probed(20, 5)
    flat = _flat(b)
    remembered = [e for e in flat if not (e.op.value == "producer_open" and e.seq == -1 and e.i > 5)]
    remembered = [replace(e, i=n) for n, e in enumerate(remembered)]
    assert _kinds(b, remembered) == []
