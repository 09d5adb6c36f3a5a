"""``received_beyond_lookahead``: the streaming engine against the reference checker's reading of
``docs/checker.md`` ("The look-ahead limit").

The traces of the differential test (:mod:`raced_traces`: correct brokers with planted faults, fuzz, and both with
the races of a real harness: lost, late and non-holder acks, nacks and redeliver requests after them, one
timestamp) are judged with a small look-ahead threshold in the header's ``broker_conf`` (per consumer, per
subscription, or both off with an unacked fallback) and receiver queues of 0 or 1 on their opens, so both readings
meet receives far past a small limit and counts under it, refilled by redeliver requests and faults.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace

from raced_traces import FAMILIES, generate
from reference_checker import engine_identities, reference_check

from conformance.checks import check_trace

TRACES_PER_FAMILY = 100

_CONFS = (
    {"keySharedLookAheadMsgInReplayThresholdPerConsumer": 1},
    {"keySharedLookAheadMsgInReplayThresholdPerSubscription": 2},
    {
        "keySharedLookAheadMsgInReplayThresholdPerConsumer": 1,
        "keySharedLookAheadMsgInReplayThresholdPerSubscription": 3,
    },
    {
        "keySharedLookAheadMsgInReplayThresholdPerConsumer": 0,
        "keySharedLookAheadMsgInReplayThresholdPerSubscription": 0,
        "maxUnackedMessagesPerConsumer": 1,
    },
)


def test_the_lookahead_is_judged_alike() -> None:
    """Every family's traces; the rule met in the synthetic ones (the fuzz families open and redeliver so often that
    their allowance covers what they leave unsent: there both readings must agree on no violation)."""
    judged: Counter[str] = Counter()
    for family, n in ((f, n) for f in FAMILIES for n in range(TRACES_PER_FAMILY)):
        seed = 37_000 + FAMILIES.index(family) * 1000 + n
        header, events = generate(family, seed)
        rng = random.Random(seed)
        header = replace(header, extra={**header.extra, "broker_conf": rng.choice(_CONFS)})
        events = [
            replace(e, extra={**e.extra, "receiver_queue": rng.randint(0, 1)}) if e.op.value == "open" else e
            for e in events
        ]
        engine = engine_identities(check_trace(events, header=header).all_violations())
        reference = reference_check(header, events)
        assert engine == reference, f"{family} seed={seed}: engine {engine - reference}; reference {reference - engine}"
        judged.update(family for kind, *_ in reference if kind == "received_beyond_lookahead")
    print(f"received_beyond_lookahead per family: {dict(judged)}")
    assert judged["synth"] + judged["synth-raced"] >= 3, (
        "the rule was hardly met: the test would not see a disagreement"
    )
