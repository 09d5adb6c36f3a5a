"""``wrong_redelivery_count``: the streaming engine against the reference checker's reading of ``docs/checker.md``.

The traces of the differential test (:mod:`raced_traces`: correct brokers with planted faults, fuzz, and both with
the races of a real harness: lost, late and non-holder acks, nacks and redeliver requests after them, one
timestamp) carry no redelivery counts; here every receive gets a random one (0 to 2, or none), so both readings
meet counts that fall, stay and grow, after nacks, redeliver requests, acks by anyone and faults.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace

import pytest
from raced_traces import FAMILIES, generate
from reference_checker import engine_identities, reference_check

from conformance.checks import check_trace

TRACES_PER_FAMILY = 60


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("version", ["4.0", "2.10", None])
def test_random_counts_are_judged_alike(family: str, version: str | None) -> None:
    judged: Counter[str] = Counter()
    for n in range(TRACES_PER_FAMILY):
        seed = 24_000 + FAMILIES.index(family) * 1000 + n
        header, events = generate(family, seed)
        header = replace(header, pulsar_version=version)
        rng = random.Random(seed)
        counted = [
            replace(e, redelivery_count=rng.choice((0, 0, 1, 1, 2, None))) if e.op.value == "receive" else e
            for e in events
        ]
        engine = engine_identities(check_trace(counted, header=header).all_violations())
        reference = reference_check(header, counted)
        assert engine == reference, f"{family} seed={seed}: engine {engine - reference}; reference {reference - engine}"
        judged.update(kind for kind, *_ in reference if kind == "wrong_redelivery_count")
    print(f"{family} {version}: {judged['wrong_redelivery_count']} wrong_redelivery_count")
    if family == "synth":
        assert judged, "the rule was never met: the test would not see a disagreement"
