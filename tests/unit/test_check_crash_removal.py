"""``gone``: the harness saw the broker without a crashed consumer, which bounds the crash's floating removal.

Without it, each crash whose removal is unknown doubles the memberships the assignment timeline keeps (the
crashed consumer still in, or already out, after every later change), and past ``MAX_FRONTIER`` the rest of the
subscription is not judged (verdict ``unknown``).  With it, the memberships still holding the crashed consumer
end at the ``gone`` event: a receive dispatched before it is still judged against them (no false
``misassigned`` while the broker may still have had the consumer), one dispatched after it is not (a planted
misassignment after many crashes is found).  Both engines: the Spark route copies ``gone`` into every part.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from conformance.checks import Kind, check_trace
from conformance.checks.assignment import MAX_FRONTIER, Change, Timeline, selector_factory
from conformance.scenarios import load_scenario
from conformance.trace import SelectorSpec, SubscriptionSpec, TraceHeader
from conformance.trace.builder import TraceBuilder
from conformance.trace.events import Event
from conformance.trace.reader import read_trace
from pytest_keyshared.driver import run_scenario
from pytest_keyshared.targets import open_target
from reference_model.selectors import ConsumerRef, make_selector

KEYS = [f"k{n}" for n in range(400)]


def header(kind: str) -> TraceHeader:
    return TraceHeader(target="hand-written", subscription=SubscriptionSpec("s"), selector=SelectorSpec(kind, "4.0"))


def selector(kind: str, steps: Iterable[tuple[str, str, int]]) -> object:
    """A reference selector after ``steps``: ``("add" | "remove", name, consumer id)``."""
    sel = make_selector(kind, "4.0")
    for what, name, cid in steps:
        getattr(sel, what)(ConsumerRef(name, cid))
    return sel


def owner(sel: object, key: str) -> str:
    return sel.select_key(key.encode()).name  # type: ignore[attr-defined,no-any-return]


def kinds(b: TraceBuilder) -> tuple[dict[Kind, int], tuple[Kind, ...]]:
    verdict = check_trace(b.events, header=b.header)
    counts: dict[Kind, int] = {}
    for v in verdict.all_violations():
        counts[v.kind] = counts.get(v.kind, 0) + 1
    return counts, verdict.unjudged


def many_crashes(*, gone: bool, deliver_to: str | None = None, crashes: int = 8) -> TraceBuilder:
    """c0..c2 stay; ``crashes`` consumers join and crash one after another (a ``gone`` after each when
    ``gone``); then a message of every key goes to its owner, or one key's to ``deliver_to`` (planted)."""
    b = TraceBuilder(header("consistent-hashing"))
    steps = []
    for n in range(3):
        steps.append(("add", f"c{n}", b.open(f"c{n}").i))
    for n in range(crashes):
        name = f"x{n}"
        opened = b.open(name).i
        b.crash(name)
        if gone:
            b.gone(name)
        steps += [("add", name, opened), ("remove", name, opened)]
    sel = selector("consistent-hashing", steps)
    planted = KEYS[0]
    for n, key in enumerate(KEYS[:20]):
        to = deliver_to if (deliver_to is not None and key == planted) else owner(sel, key)
        b.publish(key, f"1:{n}", t0=b.t)
        b.receive(to, key, f"1:{n}")
        b.ack(to, f"1:{n}")
    b.end()
    return b


def test_crashes_whose_removal_floats_leave_misassigned_unjudged() -> None:
    assert MAX_FRONTIER < 2**7  # seven crashes the broker may not have removed: more memberships than kept
    found, unjudged = kinds(many_crashes(gone=False))
    assert found == {} and Kind.MISASSIGNED in unjudged


def test_a_gone_after_each_crash_keeps_the_subscription_judged() -> None:
    found, unjudged = kinds(many_crashes(gone=True))
    assert found == {} and unjudged == (), (found, unjudged)


def test_a_misassignment_after_many_crashes_is_found_once_they_are_gone() -> None:
    b = many_crashes(gone=True)
    right = next(e.consumer for e in b.events if e.op.value == "receive" and e.key == KEYS[0])
    wrong = next(c for c in ("c0", "c1", "c2") if c != right)
    found, unjudged = kinds(many_crashes(gone=True, deliver_to=wrong))
    assert found == {Kind.MISASSIGNED: 1} and unjudged == ()
    found, unjudged = kinds(many_crashes(gone=False, deliver_to=wrong))
    assert Kind.MISASSIGNED not in found and Kind.MISASSIGNED in unjudged  # before: unknown


def _moved_by_the_crashed() -> tuple[str, str, str]:
    """With auto-split a join splits the largest range, so whether a crashed consumer was still registered when
    the next one joined changes where it lands.  A key owned by a live consumer that differs between the two:
    (key, its owner when c was removed after d joined, its owner when c was removed before)."""
    base = [("add", "a", 0), ("add", "b", 1), ("add", "c", 2)]
    removed_after = selector("auto-split", [*base, ("add", "d", 4), ("remove", "c", 2)])
    removed_before = selector("auto-split", [*base, ("remove", "c", 2), ("add", "d", 4)])
    for key in KEYS:
        late, early = owner(removed_after, key), owner(removed_before, key)
        if late != early:
            return key, late, early
    raise AssertionError("no key moves with the crashed consumer")


def crashed_then_join(*, gone: str | None, to: str) -> TraceBuilder:
    """a, b, c join; c crashes; d joins; a message of the key, sent after that, goes to ``to`` ("late": where
    it goes if the broker removed c only after d joined; "early": if before).  ``gone``: where the ``gone``
    of c is recorded: "before-join", "after-join" (before the send), "after-receive", or nowhere."""
    key, late, early = _moved_by_the_crashed()
    b = TraceBuilder(header("auto-split"))
    b.open("a"), b.open("b"), b.open("c")
    b.crash("c")  # E3
    if gone == "before-join":
        b.gone("c")
    b.open("d")
    if gone == "after-join":
        b.gone("c")
    receiver = late if to == "late" else early
    b.publish(key, "1:0", t0=b.t), b.receive(receiver, key, "1:0"), b.ack(receiver, "1:0")
    if gone == "after-receive":
        b.gone("c")
    b.end()
    return b


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
