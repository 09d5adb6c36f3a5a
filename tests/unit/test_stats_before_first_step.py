"""A ``record:subscription-stats`` run asks the topic stats before its first step (``topic_stats_before`` in the
``end`` event): nothing has named the topic yet, so the broker must say there is no such topic (Pulsar: 404
``Topic not found``) and create nothing.  Proven both ways on the judgement, and the model's answer read."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.cases._support import subscription_stats_problems
from conformance.trace.builder import TraceBuilder
from conformance.trace.header import SubscriptionSpec, TraceHeader
from reference_model.broker.model_broker import ModelBroker
from reference_model.errors import InvalidArgument


def _trace(tmp_path: Path, before: bool | None, *, equal_times: bool = False, acked: bool = True) -> Path:
    header = TraceHeader(target="hand-written", subscription=SubscriptionSpec("s"))
    b = TraceBuilder(header, step=0 if equal_times else 10)
    b.open("c1")
    b.publish("k", "1:0")
    b.receive("c1", "k", "1:0")
    if acked:  # else: an ack that never arrived before the end
        b.ack("c1", "1:0")
    extra = {} if before is None else {"topic_stats_before": before}
    b.add("end", drained=True, **extra)
    return b.write(tmp_path / "trace.jsonl")


@pytest.mark.parametrize(("equal_times", "acked"), [(False, True), (True, True), (False, False)])
def test_an_answer_before_the_first_step_is_flagged_and_none_is_not(
    tmp_path: Path, equal_times: bool, acked: bool
) -> None:
    def problems(before: bool | None) -> list[str]:
        return subscription_stats_problems(_trace(tmp_path, before, equal_times=equal_times, acked=acked))

    assert problems(False) == []
    assert problems(None) == []  # not asked (no admin API)
    flagged = problems(True)
    assert len(flagged) == 1 and "before any step named it" in flagged[0]


def test_the_model_has_no_stats_of_a_topic_nobody_named_and_asking_creates_none() -> None:
    broker = ModelBroker()
    with pytest.raises(InvalidArgument, match="does not exist"):
        broker.topic_stats("t")
    assert broker.topics() == []
    broker.create_producer("t")
    assert broker.topic_stats("t")["publishers"]
