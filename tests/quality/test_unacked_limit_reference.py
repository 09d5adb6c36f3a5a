"""``received_beyond_unacked_limit``: the streaming engine against the reference checker's reading of
``docs/checker.md``.

The traces of the differential test (:mod:`raced_traces`: correct brokers with planted faults, fuzz, and both with
the races of a real harness: lost, late and non-holder acks, nacks and redeliver requests after them, one
timestamp) are judged with a per-consumer limit of 1 to 4 in the header's ``broker_conf`` (or only a subscription's,
which the rule does not judge), so
both readings meet consumers over and under their limit, excused by every kind of ack, nack, redeliver and fault.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace

import pytest
from raced_traces import FAMILIES, generate
from reference_checker import engine_identities, reference_check

from conformance.checks import check_trace

TRACES_PER_FAMILY = 80


@pytest.mark.parametrize("family", FAMILIES)
def test_the_limit_is_judged_alike(family: str) -> None:
    judged: Counter[str] = Counter()
    for n in range(TRACES_PER_FAMILY):
        seed = 31_000 + FAMILIES.index(family) * 1000 + n
        header, events = generate(family, seed)
        rng = random.Random(seed)
        setting = rng.choice(("maxUnackedMessagesPerConsumer",) * 4 + ("maxUnackedMessagesPerSubscription",))
        header = replace(header, extra={**header.extra, "broker_conf": {setting: rng.randint(1, 4)}})
        engine = engine_identities(check_trace(events, header=header).all_violations())
        reference = reference_check(header, events)
        assert engine == reference, f"{family} seed={seed}: engine {engine - reference}; reference {reference - engine}"
        judged.update(kind for kind, *_ in reference if kind == "received_beyond_unacked_limit")
    print(f"{family}: {judged['received_beyond_unacked_limit']} received_beyond_unacked_limit")
    assert judged, "the rule was never met: the test would not see a disagreement"


@pytest.mark.parametrize("case", ["ack-before-its-queued-copy", "queued-copy-without-ack", "fault-between", "over"])
def test_the_reference_reads_the_hand_written_traces_alike(case: str) -> None:
    """An ack before a queued copy is read (generated program 685) excuses the copy's hold in both readings; without
    the ack the copy is held in both."""
    from unacked_traces import UNACKED_CASES

    build, expected = UNACKED_CASES[case]
    b = build()
    reference = reference_check(b.header, b.events)
    assert sorted(kind for kind, *_ in reference if kind == "received_beyond_unacked_limit") == expected
    assert engine_identities(check_trace(b.events, header=b.header).all_violations()) == reference
