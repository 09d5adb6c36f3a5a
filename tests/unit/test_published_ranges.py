"""The broker's published hash ranges (topic stats, recorded by ``record:key-hash-ranges`` scenarios) against the
deliveries: a key whose hash the stats give to another consumer too is ``misassigned`` (#22050's shared points)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.cases._support import deliveries_in_shared_published_ranges
from conformance.trace.builder import TraceBuilder
from conformance.trace.header import SelectorSpec, SubscriptionSpec, TraceHeader
from pytest_keyshared.driver.session import stats_key_hash_ranges
from reference_model.selectors import make_selector

KEY = "key-10"
SLOT = make_selector("consistent-hashing", version="3.0.2").slot_of(KEY.encode())


def _stats(consumers: list[dict[str, object]]) -> dict[str, object]:
    return {"subscriptions": {"s": {"consumers": consumers}}}


def test_stats_ranges_are_read_in_both_forms() -> None:
    stats = _stats(
        [
            {"consumerName": "c1", "keyHashRanges": ["[0, 10]", "[20, 30]"]},
            {"consumerName": "c2", "keyHashRangeArrays": [[11, 19]]},
            {"consumerName": "c3"},
        ]
    )
    assert stats_key_hash_ranges(stats, "s") == {"c1": [[0, 10], [20, 30]], "c2": [[11, 19]]}
    assert stats_key_hash_ranges(stats, "other") is None
    assert stats_key_hash_ranges(_stats([{"consumerName": "c1"}]), "s") is None


def _trace(tmp_path: Path, ranges: dict[str, list[list[int]]] | None, *, leave_after: bool = False) -> Path:
    header = TraceHeader(
        target="hand-written",
        subscription=SubscriptionSpec("s"),
        selector=SelectorSpec("consistent-hashing", "3.0.2"),
        extra={"implementation": "classic"},
    )
    b = TraceBuilder(header)
    b.open("a", name="consumer1")
    b.open("b", name="consumer11")
    b.publish(KEY, "1:0")
    b.receive("a", KEY, "1:0")
    b.ack("a", "1:0")
    if leave_after:
        b.close("b")
    b.add("end", drained=True, key_hash_ranges=ranges)
    return b.write(tmp_path / "trace.jsonl")


@pytest.mark.parametrize(
    ("ranges", "flagged"),
    [
        ({"consumer1": [[SLOT, SLOT]], "consumer11": [[SLOT - 5, SLOT + 5]]}, True),  # a shared point: #22050
        ({"consumer1": [[SLOT, SLOT]], "consumer11": [[SLOT + 1, SLOT + 5]]}, False),  # each hash to one consumer
        ({"consumer1": [[0, SLOT - 1]], "consumer11": [[SLOT + 1, SLOT + 5]]}, False),  # a hash left to nobody
        (None, False),  # nothing recorded: nothing judged
    ],
)
def test_a_delivery_whose_hash_the_stats_also_give_to_another_consumer(
    tmp_path: Path, ranges: dict[str, list[list[int]]] | None, flagged: bool
) -> None:
    problems = deliveries_in_shared_published_ranges(_trace(tmp_path, ranges))
    assert bool(problems) is flagged
    if flagged:
        assert "consumer a (consumer1) received 1:0" in problems[0] and "consumer11" in problems[0]


def test_only_deliveries_after_the_last_membership_change_are_judged(tmp_path: Path) -> None:
    shared = {"consumer1": [[SLOT, SLOT]], "consumer11": [[SLOT - 5, SLOT + 5]]}
    assert deliveries_in_shared_published_ranges(_trace(tmp_path, shared, leave_after=True)) == []
