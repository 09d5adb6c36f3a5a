"""The non-persistent contract on the Spark engine: the same verdicts as the Python engine, split in parts.

``delivered_twice``, loss allowed, order among what arrives, and a join's excuse (``docs/checker.md``,
"Non-persistent topics"), on traces split by key in two parts: both receives of a message carry its key and the
opens are in every part, so each part judges its keys whole.
"""

from __future__ import annotations

from typing import Any

import pytest

from conformance.checks import check_trace
from conformance.spark import check_many
from conformance.trace import SubscriptionSpec, TraceHeader
from conformance.trace.builder import TraceBuilder

pytestmark = pytest.mark.spark

HEADER = TraceHeader(target="hand-written", subscription=SubscriptionSpec("s"), extra={"topic_kind": "non-persistent"})


def _trace(kind: str) -> TraceBuilder:
    b = TraceBuilder(HEADER, topic="non-persistent://public/default/t")
    b.open("c1")
    b.open("c2")
    for n, key in enumerate(["k", "j", "k", "j", "k"], start=1):
        b.publish(key, f"0:{n}")
    b.receive("c1", "k", "0:1")  # c1 holds k
    b.receive("c2", "j", "0:2")
    b.ack("c2", "0:2")
    if kind == "twice":
        b.nack("c1", "0:1")
        b.receive("c1", "k", "0:1")  # delivered_twice
    if kind == "overlap":
        b.receive("c2", "k", "0:3")  # key_overlap and out_of_order: nothing joined since 0:1 was published
    if kind == "joined":
        b.open("c3")
        b.publish("k", "0:6")
        b.receive("c3", "k", "0:6")  # c3 took k over at once: excused
        b.ack("c3", "0:6")
    b.ack("c1", "0:1")
    b.receive("c2", "j", "0:4")  # 0:3 and 0:5 of k are dropped: loss allowed
    b.ack("c2", "0:4")
    b.end()
    return b


EXPECTED = {"correct": [], "joined": [], "twice": ["delivered_twice"], "overlap": ["key_overlap", "out_of_order"]}


@pytest.mark.parametrize("parts", [1, 2])
def test_both_engines_judge_non_persistent_traces_alike(spark: Any, parts: int) -> None:
    cases = {kind: _trace(kind) for kind in ("correct", "twice", "overlap", "joined")}
    verdicts = check_many(spark, [(b.header, b.events) for b in cases.values()], parts=parts)
    for (kind, b), verdict in zip(cases.items(), verdicts, strict=True):
        python = check_trace(b.events, header=b.header)
        assert verdict.identities() == python.identities(), kind
        assert sorted(v.kind.value for v in verdict.allowed) == sorted(v.kind.value for v in python.allowed), kind
        kinds = sorted({v.kind.value for v in verdict.violations})
        assert kinds == EXPECTED[kind], kind
