"""``gone``: the harness saw the broker without a crashed consumer, which bounds the crash's floating removal.

Without it, each crash whose removal is unknown doubles the memberships the assignment timeline keeps (the
crashed consumer still in, or already out, after every later change), and past ``MAX_FRONTIER`` the rest of the
subscription is not judged (verdict ``unknown``).  With it, the memberships still holding the crashed consumer
end at the ``gone`` event: a receive dispatched before it is still judged against them (no false
``misassigned`` while the broker may still have had the consumer), one dispatched after it is not (a planted
misassignment after many crashes is found).  Both engines: the Spark route copies ``gone`` into every part.
"""

from __future__ import annotations

from pathlib import Path

from crash_traces import crashed_then_join, header, many_crashes, wrong_receiver

from conformance.checks import Kind, check_trace
from conformance.checks.assignment import MAX_FRONTIER, Change, Timeline, selector_factory
from conformance.scenarios import load_scenario
from conformance.trace import SelectorSpec, TraceHeader
from conformance.trace.builder import TraceBuilder
from conformance.trace.events import Event
from conformance.trace.reader import read_trace
from pytest_keyshared.driver import run_scenario
from pytest_keyshared.targets import open_target


def kinds(b: TraceBuilder) -> tuple[dict[Kind, int], tuple[Kind, ...]]:
    verdict = check_trace(b.events, header=b.header)
    counts: dict[Kind, int] = {}
    for v in verdict.all_violations():
        counts[v.kind] = counts.get(v.kind, 0) + 1
    return counts, verdict.unjudged


def test_crashes_whose_removal_floats_leave_misassigned_unjudged() -> None:
    assert MAX_FRONTIER < 2**7  # seven crashes the broker may not have removed: more memberships than kept
    found, unjudged = kinds(many_crashes(gone=False))
    assert found == {} and Kind.MISASSIGNED in unjudged


def test_a_gone_after_each_crash_keeps_the_subscription_judged() -> None:
    found, unjudged = kinds(many_crashes(gone=True))
    assert found == {} and unjudged == (), (found, unjudged)


def test_a_misassignment_after_many_crashes_is_found_once_they_are_gone() -> None:
    wrong = wrong_receiver()
    found, unjudged = kinds(many_crashes(gone=True, deliver_to=wrong))
    assert found == {Kind.MISASSIGNED: 1} and unjudged == ()
    found, unjudged = kinds(many_crashes(gone=False, deliver_to=wrong))
    assert Kind.MISASSIGNED not in found and Kind.MISASSIGNED in unjudged  # before: unknown


def test_a_crashed_consumer_still_registered_when_the_next_joined_explains_a_receive() -> None:
    # the broker may have removed c after d joined: d then split the ranges as with c still there
    for gone in (None, "after-join", "after-receive"):
        assert kinds(crashed_then_join(gone=gone, to="late")) == ({}, ()), gone
    for gone in (None, "before-join", "after-join", "after-receive"):
        assert kinds(crashed_then_join(gone=gone, to="early")) == ({}, ()), gone


def test_once_gone_before_the_join_only_the_membership_without_it_explains_a_receive() -> None:
    assert kinds(crashed_then_join(gone="before-join", to="late")) == ({Kind.MISASSIGNED: 1}, ())


def test_states_cut_by_gone_are_passed_over_not_stopped_at() -> None:
    """A state ``gone`` cut short may end before older states did; the candidate walk, which stops at the first
    state that ended before the lower bound, must pass over it.  Two crashes, then ``gone`` for the first: every
    state still possible after the ``gone`` is a candidate for a receive dispatched after it."""
    tl = Timeline(selector_factory(SelectorSpec("auto-split", "4.0"), False), False)
    for index, (kind, inc, name) in enumerate(
        [("open", 0, "a"), ("open", 1, "b"), ("open", 2, "c"), ("open", 3, "d"), ("crash", 2, "c"),
         ("crash", 3, "d"), ("open", 6, "e")]
    ):  # fmt: skip
        tl.apply(Change(index, index, kind, inc, name))
    before = list(tl.frontier)
    tl.gone(2, 7, 7)
    after = tl.frontier
    assert 0 < len(after) < len(before) and all(2 not in node.pending for node in after)
    cut = [node for node in before if node not in after]
    assert all(node.cut and node.hi == 7 for node in cut)
    later = tl.candidates(9, ("index", 8))
    assert all(any(node is c for c in later) for node in after)
    assert not any(node is c for node in cut for c in later)
    assert all(any(node is c for c in tl.candidates(9, ("index", 6))) for node in before)


def test_gone_for_an_open_handle_or_an_unknown_one_changes_nothing() -> None:
    b = TraceBuilder(header("consistent-hashing"))
    b.open("c0"), b.open("x"), b.crash("x")
    b.gone("c0")  # open: it names no crashed incarnation
    b.gone("nobody")
    b.end()
    assert kinds(b) == ({}, ())


# --- the model's runs record it -------------------------------------------------------------------------------


def _scenario(crashes: int, delay_ms: int) -> str:
    steps = ['[[steps]]\ndo = "open"\nconsumer = "c0"\n', '[[steps]]\ndo = "open"\nconsumer = "c1"\n']
    for n in range(crashes):
        steps += [
            f'[[steps]]\ndo = "open"\nconsumer = "x{n}"\n',
            '[[steps]]\ndo = "publish"\ncount = 20\nkeys = 10\n',
            '[[steps]]\ndo = "wait_quiet"\n',
            f'[[steps]]\ndo = "crash"\nconsumer = "x{n}"\n',
            f'[[steps]]\ndo = "sleep"\nms = {delay_ms + 50}\n',
        ]
    steps.append('[[steps]]\ndo = "publish"\ncount = 20\nkeys = 10\n')
    return 'name = "crashes"\ndescription = "consumers join and crash one after another"\n\n' + "\n".join(steps)


def _run(tmp_path: Path, crashes: int, delay_ms: int = 0) -> tuple[TraceHeader, list[Event]]:
    scenario_file = tmp_path / "crashes.toml"
    scenario_file.write_text(_scenario(crashes, delay_ms), encoding="utf-8")
    options = {"crash_detection_delay_ms": delay_ms}
    with open_target("model", options=options, artifacts_dir=tmp_path / "target") as opened:
        result = run_scenario(opened, load_scenario(str(scenario_file)), seed=1, out_dir=tmp_path, live_check=False)
    return read_trace(result.trace_path)


def test_the_model_run_records_gone_when_the_broker_removed_the_crashed_consumer(tmp_path: Path) -> None:
    _header, events = _run(tmp_path, crashes=2, delay_ms=300)
    crashes = [e for e in events if e.op.value == "crash"]
    gone = [e for e in events if e.op.value == "gone"]
    assert [e.consumer for e in gone] == [e.consumer for e in crashes] == ["x0", "x1"]
    for crash, seen in zip(crashes, gone, strict=True):  # after the detection delay, on the model's clock
        assert seen.i > crash.i and seen.t - crash.t >= 300_000_000


def test_a_model_run_with_many_crashes_stays_judged(tmp_path: Path) -> None:
    header, events = _run(tmp_path, crashes=8)
    assert sum(e.op.value == "gone" for e in events) == 8
    verdict = check_trace(events, header=header)
    assert verdict.valid and verdict.unjudged == (), verdict.render()
    without = [e for e in events if e.op.value != "gone"]  # what the checker had before the model recorded it
    assert Kind.MISASSIGNED in check_trace(without, header=header).unjudged
