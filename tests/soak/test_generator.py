"""The soak generator and plan: seeded, pure, every fault kind early, bad plans refused with one line."""

from __future__ import annotations

import itertools

import pytest

from conformance.scenarios import Crash, Open, Publish, RestartBroker
from conformance.soak import (
    FAULT_KINDS,
    PRODUCERS_CLIENT,
    NetFault,
    SoakGenerator,
    SoakPlan,
    parse_duration,
    parse_faults,
)
from reference_model.errors import InvalidArgument

ALL = ("restart", "cut", "stall", "delay", "partition")


def steps(plan: SoakPlan, n: int, **caps: bool) -> list:
    gen = SoakGenerator(plan, can_crash=caps.get("can_crash", True), can_restart=caps.get("can_restart", True))
    return list(itertools.islice(gen, n))


def test_same_seed_same_steps_and_another_seed_other_steps() -> None:
    plan = SoakPlan(duration_s=60, churn_per_min=60, faults=ALL, seed=7)
    assert steps(plan, 2000) == steps(plan, 2000)
    assert steps(plan, 2000) != steps(SoakPlan(duration_s=60, churn_per_min=60, faults=ALL, seed=8), 2000)


def test_steps_are_due_in_order_and_publishes_keep_the_rate() -> None:
    plan = SoakPlan(duration_s=60, rate=1000, seed=1)
    timed = steps(plan, 3000)
    assert [t.at_ms for t in timed] == sorted(t.at_ms for t in timed)
    publishes = [t for t in timed if isinstance(t.step, Publish)]
    sent = sum(t.step.count for t in publishes[:-1])
    span_s = (publishes[-1].at_ms - publishes[0].at_ms) / 1000
    assert 0.8 * plan.rate <= sent / span_s <= 1.2 * plan.rate


def test_every_fault_kind_comes_in_the_first_third() -> None:
    plan = SoakPlan(duration_s=30, faults=ALL, seed=3, fault_every_s=8)
    gen = SoakGenerator(plan, can_crash=True, can_restart=True)
    assert any(isinstance(t.step, RestartBroker) and t.at_ms <= 10_000 for t in itertools.islice(gen, 20_000))
    faults = list(itertools.islice(gen.nemesis(), 200))
    assert [f.at_ms for f in faults] == sorted(f.at_ms for f in faults)
    assert {f.kind for f in faults if f.at_ms <= 10_000} == {"cut", "stall", "delay", "partition"}
    assert all((f.seconds > 0) == (f.kind != "cut") for f in faults)
    assert faults == list(itertools.islice(SoakGenerator(plan, can_crash=True, can_restart=True).nemesis(), 200))


def test_a_fault_picks_its_client_among_those_open() -> None:
    fault = NetFault(0, "cut", pick=0.0)
    assert fault.client(["c1", "c2"]) == "c1" and fault.client([]) == PRODUCERS_CLIENT
    assert NetFault(0, "cut", pick=0.99).client(["c1", "c2"]) == PRODUCERS_CLIENT


def test_handles_are_never_reused_and_only_crashable_ones_crash() -> None:
    gen = SoakGenerator(SoakPlan(duration_s=600, churn_per_min=600, seed=5), can_crash=True, can_restart=False)
    timed = list(itertools.islice(gen, 20_000))
    opened = [t.step.consumer for t in timed if isinstance(t.step, Open)]
    assert len(opened) == len(set(opened)) > 5
    crashed = [t.step.consumer for t in timed if isinstance(t.step, Crash)]
    assert crashed and set(crashed) <= gen.crashable
    assert not any(isinstance(t.step, RestartBroker) for t in timed)


def test_no_crash_without_the_capability() -> None:
    plan = SoakPlan(duration_s=600, churn_per_min=600, faults=("cut",), seed=2)
    gen = SoakGenerator(plan, can_crash=False, can_restart=False)
    timed = list(itertools.islice(gen, 20_000))
    assert not any(isinstance(t.step, Crash) for t in timed) and not gen.crashable


def test_message_bound_stops_publishing() -> None:
    gen = SoakGenerator(SoakPlan(duration_s=None, messages=500, seed=1), can_crash=False, can_restart=False)
    for _ in itertools.islice(gen, 5000):
        pass
    assert gen.published == 500


def test_batched_publishes_carry_one_message_per_key_and_keyless_ones_are_sync() -> None:
    for t in steps(SoakPlan(duration_s=60, seed=4, keys=5, key_distribution="zipf:1.5"), 3000):
        if isinstance(t.step, Publish):
            names = t.step.keys.names
            if t.step.batching != "none":
                assert len(set(names)) == len(names) == t.step.count
            if t.step.key_field == "none":
                assert t.step.batching == "none"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rate": 0}, "--rate > 0"),
        ({"rate": -1}, "--rate > 0"),
        ({"faults": ("restart", "cutt")}, "Unknown fault 'cutt'. Did you mean 'cut'?"),
        ({"duration_s": None, "messages": None}, "needs a bound"),
        ({"consumers": 0}, "--consumers to be an integer >= 1"),
        ({"key_distribution": "zipf:0"}, "zipf:S with S > 0"),
        ({"churn_per_min": -1}, "--churn >= 0"),
    ],
)
def test_bad_plans_are_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message.replace("(", r"\(").replace("?", r"\?")):
        SoakPlan(**kwargs)


def test_parsers() -> None:
    assert parse_duration("90") == 90 and parse_duration("10m") == 600 and parse_duration("500ms") == 0.5
    assert parse_duration("1.5h") == 5400
    for bad in ("ten", "0s", "-1m", "5 days"):
        with pytest.raises(InvalidArgument):
            parse_duration(bad)
    assert parse_faults("partition,restart") == ("restart", "partition")
    assert parse_faults("") == () and parse_faults("none") == ()
    assert set(FAULT_KINDS) == set(ALL)


def test_default_batches_and_same_name_joins_are_drawn() -> None:
    """Issue 24's dimensions the soak supports: default (mixed-key) batches, one message per key like key-based
    ones, and joins under the name of a consumer open at the time (same-name consumers)."""
    from conformance.scenarios import Close, Crash, Open

    drawn = steps(SoakPlan(duration_s=120, seed=5, churn_per_min=120), 4000)
    modes = {t.step.batching for t in drawn if isinstance(t.step, Publish)}
    assert {"none", "key_based", "default"} <= modes
    live: dict[str, str] = {}
    same_name = 0
    for t in drawn:
        if isinstance(t.step, Open):
            name = t.step.broker_name()
            if t.step.name is not None:
                assert name in live.values(), "a same-name join takes the name of a consumer open then"
                same_name += 1
            live[t.step.consumer] = name
        elif isinstance(t.step, (Close, Crash)):
            live.pop(t.step.consumer, None)
    assert same_name > 0
