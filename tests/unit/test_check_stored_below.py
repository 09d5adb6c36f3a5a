"""``stored_below_highest``: with deduplication on, an id sent after a higher one of its producer was stored is a
duplicate, never stored (``ClientDeduplicationTest.testProducerDeduplicationNonBatchAsync``), proven both ways on
the streaming engine and the reference reading of ``docs/checker.md``."""

from __future__ import annotations

from dataclasses import replace

import pytest
from exemption_traces import gapped_id_stored, gapped_sequence, pulsar_40

from conformance.checks import Kind, check_trace
from tests.quality.reference_checker import reference_check


def _found(b) -> list[tuple[Kind, tuple[int, ...]]]:  # type: ignore[no-untyped-def]
    return [(v.kind, v.events) for v in check_trace(b.events, header=b.header).violations]


def test_a_gapped_id_stored_after_a_higher_one_is_stored_below_highest() -> None:
    b = gapped_id_stored()
    assert _found(b) == [(Kind.STORED_BELOW_HIGHEST, (3, 4))]
    verdict = check_trace(b.events, header=b.header)
    assert "producer 'p' sequence id 3 was stored after its id 5 was" in verdict.violations[0].explanation
    assert reference_check(b.header, b.events) == {("stored_below_highest", None, "k", (3, 4)): 1}


def test_the_same_trace_from_a_correct_broker_passes() -> None:
    b = gapped_sequence()  # 3 answered -1:-1, never stored
    assert _found(b) == []
    assert not reference_check(b.header, b.events)


def test_equal_timestamps_cannot_show_the_send_came_after_the_receipt() -> None:
    b = gapped_id_stored(step=0)
    assert _found(b) == []
    assert not reference_check(b.header, b.events)


@pytest.mark.parametrize("dedup", [True, False])
def test_deduplication_off_or_a_send_started_before_the_receipt_is_not_judged(dedup: bool) -> None:
    b = gapped_id_stored()
    if not dedup:
        b.header = replace(b.header, deduplication=False)
    else:  # the send of 3 started before 5's receipt was logged: the broker may have had it first
        e = b.events[4]
        b.events[4] = replace(e, extra={**e.extra, "t0": b.events[3].t - 1})
    assert _found(b) == []
    assert not reference_check(b.header, b.events)


def test_a_batch_is_judged_by_its_first_message_only() -> None:
    """The Python client sends a batch under its first id: a later lone id below the batch's others is stored."""
    b = pulsar_40()
    b.step = 1000
    b.open("c1")
    for n, seq in enumerate((10, 13, 14)):
        b.publish("k", f"1:0:-1:{n}", seq=seq, uid=f"u{seq}")
    b.publish("k", "1:1", seq=12, uid="u12")  # the broker's highest pushed id is 10
    b.end(drained=False)
    assert _found(b) == []
    assert not reference_check(b.header, b.events)
