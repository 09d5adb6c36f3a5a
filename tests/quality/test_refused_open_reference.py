"""refused_open: the engine and the reference checker (read from docs/checker.md) agree on random membership traces.

The traces mix what decides the rule: closes with and without their completion (``closed``), completions at,
before and after the refused subscribe's send time (``t0``, equal timestamps included), crashes with and without
``gone``, opens whose outcome is unknown (``info``), modes and ``allowOutOfOrderDelivery`` flags that change, STICKY
ranges that overlap or not, errors that name a refusal or not, and an occasional fault.  Both engines are asked
(the streaming engine whole, and the Spark engine's parts on a sample).
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from reference_checker import engine_identities, reference_check

from conformance.checks import check_trace
from conformance.spark.engine import _in_memory, _merged, check_task
from conformance.trace import SelectorSpec, SubscriptionSpec, TraceHeader
from conformance.trace.builder import TraceBuilder

ERRORS = (
    "ConsumerBusy: Subscription is of different type",
    "ConsumerAssignError: Range conflict with consumer c1",
    "Timeout: Pulsar error: TimeOut",
)
RANGES = (
    [[0, 20000]], [[20001, 40000]], [[30000, 65535]], [[40001, 65535]], [[0, 65535]], [[100, 200], [50000, 50100]],
)  # fmt: skip


def random_trace(seed: int) -> TraceBuilder:
    rng = random.Random(seed)
    kind = rng.choice(("sticky", "consistent-hashing"))
    header = TraceHeader(
        target="random",
        subscription=SubscriptionSpec("s", key_shared_mode="STICKY" if kind == "sticky" else "AUTO_SPLIT"),
        selector=SelectorSpec(kind, "4.0"),
    )
    b = TraceBuilder(header, step=rng.choice((0, 1, 10)))
    live: list[str] = []
    left: list[str] = []
    n = 0
    for _ in range(rng.randint(3, 14)):
        roll = rng.random()
        if roll < 0.45 or not live:
            n += 1
            handle = f"c{n}"
            mode = rng.choice(("STICKY", "AUTO_SPLIT")) if rng.random() < 0.3 else header.subscription.key_shared_mode
            policy: dict[str, Any] = {"key_shared_mode": mode, "allow_out_of_order_delivery": rng.random() < 0.3}
            if mode == "STICKY":
                policy["sticky_ranges"] = rng.choice(RANGES)
            outcome = rng.choices(("ok", "fail", "info"), (5, 4, 1))[0]
            t0 = None if rng.random() < 0.1 else b.t - rng.choice((0, 0, 1, 5, 20))
            error = rng.choice(ERRORS) if outcome == "fail" else None
            b.open(handle, policy=policy, result=outcome, t0=t0, error=error)
            if outcome == "ok":
                live.append(handle)
        elif roll < 0.8:
            handle = live.pop(rng.randrange(len(live)))
            if rng.random() < 0.7:
                b.close(handle)
                if rng.random() < 0.75:
                    b.closed(handle)
            else:
                b.crash(handle)
                if rng.random() < 0.6:
                    b.gone(handle)
            left.append(handle)
        elif roll < 0.83:
            b.fault()
        else:
            b.t += rng.choice((0, 1, 3))
    b.end(drained=False)
    return b


def refused_only(found: Any) -> Any:
    return sorted((identity, count) for identity, count in found.items() if identity[0] == "refused_open")


@pytest.mark.parametrize("block", range(4))
def test_the_engine_and_the_reference_agree_on_random_refusals(block: int) -> None:
    judged = 0
    for seed in range(block * 250, (block + 1) * 250):
        b = random_trace(seed)
        verdict = check_trace(b.events, header=b.header)
        engine = refused_only(engine_identities(verdict.all_violations()))
        reference = refused_only(reference_check(b.header, b.events))
        assert engine == reference, (seed, [e.to_dict() for e in b.events])
        judged += len(engine)
    assert judged > 10  # the generator reaches the rule: both found some refusals Pulsar accepts


def test_the_spark_engines_parts_agree_on_a_sample() -> None:
    for seed in range(0, 1000, 25):
        b = random_trace(seed)
        given = _in_memory(b.events)
        results = [
            (0, pass_, part, result)
            for part in range(3)
            for pass_, result in check_task(b.header, None, given, part, 3, one_pass=False)[1]
        ]
        verdict = _merged(results, {0: b.header}, None)[0]
        want = refused_only(reference_check(b.header, b.events))
        assert refused_only(engine_identities(verdict.all_violations())) == want, seed


def test_planted_and_clean_twins() -> None:
    """The reference itself, both ways: a flag changed after the close completed vs while it was in flight."""
    for completed, gap, want in ((True, 1, 1), (False, 1, 0), (True, 0, 0)):
        b = TraceBuilder(TraceHeader(target="x", subscription=SubscriptionSpec("s"), selector=SelectorSpec("sticky")))
        b.open("c1", policy={"key_shared_mode": "AUTO_SPLIT", "allow_out_of_order_delivery": False})
        b.close("c1")
        if completed:
            b.closed("c1")
        policy = {"key_shared_mode": "AUTO_SPLIT", "allow_out_of_order_delivery": True}
        b.open("c2", policy=policy, result="fail", t0=b.events[-1].t + gap, error=ERRORS[0])
        b.end(drained=False)
        assert len(refused_only(reference_check(b.header, b.events))) == want, (completed, gap)
