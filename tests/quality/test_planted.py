"""Planted bugs must be caught, and clean runs must stay clean (the checkers' proof, Python engine).

``tests/support/trace_synth.py`` simulates a correct Key_Shared broker — with the recording races of a real
harness: late publish receipts, receives logged after their consumer's close, batches, partitions, topic
spellings, nacks, redeliveries, crashes and faults — and can plant one bug of each kind.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from trace_synth import PLANTABLE, SynthConfig, synthesize

from conformance.checks import Kind, check_trace

configs = st.builds(
    SynthConfig,
    messages=st.integers(5, 40),
    keys=st.integers(1, 5),
    consumers=st.integers(1, 4),
    partitions=st.integers(0, 2),
    selector=st.sampled_from([None, "auto-split", "consistent-hashing"]),
    deduplication=st.booleans(),
    churn=st.sampled_from([0.0, 0.05, 0.15]),
    nack_rate=st.sampled_from([0.0, 0.05, 0.2]),
    redeliver_rate=st.sampled_from([0.0, 0.03]),
    fault_rate=st.sampled_from([0.0, 0.0, 0.02]),
    receipt_delay_rate=st.sampled_from([0.0, 0.3]),
    batch_rate=st.sampled_from([0.0, 0.3]),
)

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(seed=st.integers(0, 2**32), config=configs)
def test_a_correct_broker_yields_no_violation(seed: int, config: SynthConfig) -> None:
    run = synthesize(seed, config)
    verdict = check_trace(run.events, header=run.header)
    assert verdict.all_violations() == (), verdict.render()
    assert verdict.valid


@SETTINGS
@given(seed=st.integers(0, 2**32), config=configs, kind=st.sampled_from(sorted(PLANTABLE)))
def test_a_planted_violation_is_found(seed: int, config: SynthConfig, kind: Kind) -> None:
    run = synthesize(seed, config, plant={kind}, fault_rate=0.0)
    verdict = check_trace(run.events, header=run.header)
    found = {v.kind for v in verdict.all_violations()}
    assert set(run.planted) <= found, (run.planted, verdict.render())
    if run.planted:
        assert verdict.counts[kind.value] >= 1
