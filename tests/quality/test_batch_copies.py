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
M0, M1 = "1:5:-1:0", "1:5:-1:1"  # one entry of two messages of key k


def kinds(b: TraceBuilder) -> Counter[Kind]:
    verdict = check_trace(b.events, header=b.header)
    assert engine_identities(verdict.violations) == reference_check(b.header, b.events)
    return Counter(v.kind for v in verdict.violations)


def _start(step: int, *consumers: str) -> TraceBuilder:
    b = TraceBuilder(step=step)
    for name in consumers:
        b.open(name)
    b.publish("k", M0)
    b.publish("k", M1)
    return b


def handed_over_twice(*, step: int, whole_at_c3: bool = False, planted: bool = False) -> TraceBuilder:
    """c1 acknowledges M0 and closes; c2 gets the entry again and acknowledges only M1 before closing (its
    ack of M0 arrived first, from c1, recorded before c2's arming ack); c3 gets the entry a third time, rightly.
    ``planted``: c3 acknowledges both, closes, and c4 still gets the entry."""
    b = _start(step, "c1", "c2", "c3", "c4")
    b.receive("c1", "k", M0), b.receive("c1", "k", M1), b.ack("c1", M0), b.close("c1")
    b.receive("c2", "k", M0), b.receive("c2", "k", M1), b.ack("c2", M1), b.close("c2")
    b.receive("c3", "k", M0), b.receive("c3", "k", M1)
    if planted:
        b.ack("c3", M0), b.ack("c3", M1), b.close("c3")
        b.receive("c4", "k", M0), b.receive("c4", "k", M1), b.ack("c4", M0), b.ack("c4", M1)
    else:
        b.ack("c3", M0), b.ack("c3", M1)
    b.end()
    return b


def nacked_and_back(*, step: int, nack_first: bool = False, planted: bool = False) -> TraceBuilder:
    """c1 acknowledges M1 and negatively acknowledges M0 (``nack_first``: in the other order): the client asks
    for the entry again and c1 gets both back, acknowledges M0 first, then receives M1 again (rightly: no copy
    was acknowledged whole).  ``planted``: c1 acknowledges that second copy whole and gets the entry a third
    time."""
    b = _start(step, "c1")
    b.receive("c1", "k", M0), b.receive("c1", "k", M1)
    if nack_first:
        b.nack("c1", M0), b.ack("c1", M1)
    else:
        b.ack("c1", M1), b.nack("c1", M0)
    b.receive("c1", "k", M0), b.ack("c1", M0), b.receive("c1", "k", M1), b.ack("c1", M1)
    if planted:
        b.receive("c1", "k", M0), b.receive("c1", "k", M1), b.ack("c1", M0), b.ack("c1", M1)
    b.end()
    return b


def acked_across_a_reconnect(*, step: int) -> TraceBuilder:
    """c2's connection drops while it holds the entry, which goes to c1; c2's application then acknowledges
    M0 (an ack by a consumer that no longer holds it, recorded before c1's arming ack of M1): two copies, each
    partly acknowledged, so the entry comes back to c3 when c1 closes."""
    b = _start(step, "c1", "c2", "c3")
    b.receive("c2", "k", M0), b.receive("c2", "k", M1)
    b.add("fault", fault="client_reconnect", consumers=["c2"])
    b.receive("c1", "k", M0), b.receive("c1", "k", M1)
    b.ack("c2", M0)
    b.ack("c1", M1), b.close("c1")
    b.receive("c3", "k", M0), b.receive("c3", "k", M1), b.ack("c3", M0), b.ack("c3", M1)
    b.end()
    return b


def whole_then_again(*, step: int, raced: bool) -> TraceBuilder:
    """Planted: c1 acknowledges its copy whole, closes, and c2 gets the entry again.  ``raced``: c3, which never
    held it, acknowledges each message too, right after c1 (a duplicate ack racing in the trace)."""
    b = _start(step, "c1", "c2", "c3")
    b.receive("c1", "k", M0), b.receive("c1", "k", M1)
    for msg in (M0, M1):
        b.ack("c1", msg)
        if raced:
            b.ack("c3", msg)
    b.close("c1")
    b.receive("c2", "k", M0), b.receive("c2", "k", M1), b.ack("c2", M0), b.ack("c2", M1)
    b.end()
    return b


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
