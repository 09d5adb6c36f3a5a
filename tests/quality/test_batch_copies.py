"""A batch entry comes back whole until one delivered copy of it is acknowledged whole: both ways, both timings.

Without batch-index acknowledgements the client keeps, per copy of a batch it received, which of its messages
the application acknowledged, and sends the entry's acknowledgement only once that copy's are all acknowledged
(C++ ``BatchMessageAcker``: one per received batch).  So acknowledgements spread over two copies of an entry —
by two consumers the entry was handed to in turn, or by one consumer before and after its negative ack asked for
the entry again — acknowledge nothing at the broker, which rightly delivers the entry again, and a receive of a
message with an armed ack is then a late copy, not ``redelivered_after_ack``.  These traces read as
``redelivered_after_ack`` while the excuse looked only at whether the entry's other messages were acknowledged
(``docs/checker.md``, "Why a partly acknowledged batch may come back whole").  An entry acknowledged whole in one
copy and delivered again is still found, also with acks by non-holders raced around it.  Every trace is
checked with distinct timestamps and with one timestamp for all, and the reference checker agrees.

The nack case is real: the model's run of :data:`SCENARIO` and a stored trace of it from the real
``pulsar-client`` against pulsar-lite 0.2.0 (``data/pulsar-lite-batch-nack.jsonl.gz``, recorded with
``keyshared run FILE --target pulsar-lite --seed 0``, FILE being :data:`SCENARIO`) both show the entry back
whole after the nack, the acknowledged message with it, and both read as ``redelivered_after_ack`` before.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pytest
from batch_traces import acked_across_a_reconnect, handed_over_twice, nacked_and_back, whole_then_again
from reference_checker import engine_identities, reference_check

from conformance.checks import Kind, check_trace
from conformance.scenarios import load_scenario
from conformance.trace.builder import TraceBuilder
from conformance.trace.events import Event
from conformance.trace.reader import read_trace
from pytest_keyshared.driver import run_scenario
from pytest_keyshared.targets import open_target

SCENARIO = """
name = "batch-nack-copies"
description = "c1 holds a batch, nacks its first message and acknowledges the second: the entry comes back whole"

[[steps]]
do = "open"
consumer = "c1"
behaviour = "hold"

[[steps]]
do = "publish"
count = 2
keys = 1
batching = "key_based"

[[steps]]
do = "wait_received"
count = 2

[[steps]]
do = "set_behaviour"
consumer = "c1"
behaviour = "ack"

[[steps]]
do = "nack_held"
consumer = "c1"
count = 1

[[steps]]
do = "ack_held"
consumer = "c1"
count = 1

[[steps]]
do = "wait_quiet"
"""

STEPS = pytest.mark.parametrize("step", [10, 0], ids=["distinct-timestamps", "equal-timestamps"])


def kinds(b: TraceBuilder) -> Counter[Kind]:
    verdict = check_trace(b.events, header=b.header)
    assert engine_identities(verdict.violations) == reference_check(b.header, b.events)
    return Counter(v.kind for v in verdict.violations)


@STEPS
def test_acks_spread_over_two_consumers_copies_are_no_redelivery_after_ack(step: int) -> None:
    assert kinds(handed_over_twice(step=step)) == Counter()


@STEPS
@pytest.mark.parametrize("nack_first", [False, True], ids=["ack-then-nack", "nack-then-ack"])
def test_acks_of_copies_either_side_of_a_nack_are_no_redelivery_after_ack(step: int, nack_first: bool) -> None:
    assert kinds(nacked_and_back(step=step, nack_first=nack_first)) == Counter()


@STEPS
def test_an_ack_by_a_consumer_that_no_longer_held_it_completes_no_copy(step: int) -> None:
    assert kinds(acked_across_a_reconnect(step=step)) == Counter()


@STEPS
@pytest.mark.parametrize("raced", [False, True], ids=["alone", "non-holder-acks-raced"])
def test_an_entry_acknowledged_whole_and_delivered_again_is_found(step: int, raced: bool) -> None:
    b = whole_then_again(step=step, raced=raced)
    assert kinds(b) == Counter({Kind.REDELIVERED_AFTER_ACK: 1})
    (found,) = check_trace(b.events, header=b.header).violations
    first_again = next(e.i for e in b.events if e.op.value == "receive" and e.consumer == "c2")
    assert found.events[1] == first_again


@STEPS
def test_a_third_copy_after_a_whole_acknowledgement_is_found(step: int) -> None:
    assert kinds(handed_over_twice(step=step, planted=True)) == Counter({Kind.REDELIVERED_AFTER_ACK: 1})


@STEPS
@pytest.mark.parametrize("nack_first", [False, True], ids=["ack-then-nack", "nack-then-ack"])
def test_a_copy_acknowledged_whole_after_a_nack_and_delivered_again_is_found(step: int, nack_first: bool) -> None:
    found = kinds(nacked_and_back(step=step, nack_first=nack_first, planted=True))
    assert found == Counter({Kind.REDELIVERED_AFTER_ACK: 1})


def _the_entry_came_back_whole(events: Sequence[Event]) -> bool:
    """The second batch message was acknowledged and then received again (the whole entry came back)."""
    second = [e.op.value for e in events if e.msg_id is not None and e.msg_id.endswith(":1")]
    return [op for op in second if op != "publish"][:3] == ["receive", "ack", "receive"]


def test_the_models_entry_back_after_a_nack_is_valid(tmp_path: Path) -> None:
    scenario_file = tmp_path / "nack.toml"
    scenario_file.write_text(SCENARIO, encoding="utf-8")
    with open_target("model", artifacts_dir=tmp_path / "target") as opened:
        result = run_scenario(opened, load_scenario(str(scenario_file)), seed=0, out_dir=tmp_path, live_check=False)
    header, events = read_trace(result.trace_path)
    assert _the_entry_came_back_whole(events)
    verdict = check_trace(events, header=header)
    assert verdict.valid and not verdict.violations, verdict.render()
    assert engine_identities(verdict.violations) == reference_check(header, events) == Counter()


def test_pulsar_lites_entry_back_after_a_nack_is_valid() -> None:
    header, events = read_trace(Path(__file__).parent / "data" / "pulsar-lite-batch-nack.jsonl.gz")
    assert _the_entry_came_back_whole(events)
    verdict = check_trace(events, header=header)
    assert verdict.valid and not verdict.violations, verdict.render()
    assert engine_identities(verdict.violations) == reference_check(header, events) == Counter()
