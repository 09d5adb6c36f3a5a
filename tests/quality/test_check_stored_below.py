"""``stored_below_highest``: with deduplication on, an id sent after a higher one of its producer was stored is a
duplicate, never stored (``ClientDeduplicationTest.testProducerDeduplicationNonBatchAsync``), proven both ways on
the streaming engine and the reference reading of ``docs/checker.md``."""

from __future__ import annotations

from dataclasses import replace

import pytest
from exemption_traces import gapped_id_stored, gapped_sequence, producer_answered, pulsar_40
from reference_checker import reference_check

from conformance.checks import Kind, check_trace


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


def test_equal_timestamps_still_show_the_order_of_one_producers_sends() -> None:
    """Receipts of one producer come back in the order of its sends: the index order decides, not ``t``."""
    b = gapped_id_stored(step=0)
    assert _found(b) == [(Kind.STORED_BELOW_HIGHEST, (3, 4))]
    assert reference_check(b.header, b.events) == {("stored_below_highest", None, "k", (3, 4)): 1}


def test_deduplication_off_is_not_judged() -> None:
    b = gapped_id_stored()
    b.header = replace(b.header, deduplication=False)
    assert _found(b) == []
    assert not reference_check(b.header, b.events)


def test_java_key_based_batches_sent_under_their_highest_id_pass() -> None:
    """Java's client sends key-based batch B (2, 3) as 3, then A (1, 4, 5) as 5: A's first message (1) is stored
    after 2 and 3, and is no violation (a batched message is judged by its entry's send, which the trace lacks)."""
    b = pulsar_40()
    b.open("c1")
    for n, seq in enumerate((2, 3)):
        b.publish("k", f"1:0:-1:{n}", seq=seq, uid=f"u{seq}")
    for n, seq in enumerate((1, 4, 5)):
        b.publish("k", f"1:1:-1:{n}", seq=seq, uid=f"u{seq}")
    b.end(drained=False)
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


@pytest.mark.parametrize(("answer", "behind"), [(5, False), (7, False), (4, True), (-1, True)])
def test_a_producer_told_less_than_its_highest_stored_id_is_last_sequence_id_behind(answer: int, behind: bool) -> None:
    b = producer_answered(answer)
    expected = [(Kind.LAST_SEQUENCE_ID_BEHIND, (3, 4))] if behind else []
    assert _found(b) == expected
    identity = ("last_sequence_id_behind", None, None, (3, 4))
    assert reference_check(b.header, b.events) == ({identity: 1} if behind else {})
    if behind:
        text = check_trace(b.events, header=b.header).violations[0].explanation
        assert f"producer 'p' was answered last sequence id {answer} after 5 was stored" in text


def test_an_answer_with_equal_timestamps_is_judged_and_with_deduplication_off_is_not() -> None:
    assert _found(producer_answered(4, step=0)) == [(Kind.LAST_SEQUENCE_ID_BEHIND, (3, 4))]
    b = producer_answered(4)
    b.header = replace(b.header, deduplication=False)
    assert _found(b) == []
    assert not reference_check(b.header, b.events)
