"""A batch sent with its highest sequence id (the raw protocol producer's ``send_seq``/``highest_seq`` on each
publish): a duplicate receipt for a message of a batch whose send id is at or below an id already stored is
Pulsar's answer, not a ``lost_write``; one above every stored id is (``MessageDuplicationTest.testIsDuplicate``:
``1, highest 5`` then ``4, highest 8``).  Proven both ways on the streaming engine and the reference reading of
``docs/checker.md``; the Spark engine's twin is in ``tests/spark/test_spark_exemptions.py``."""

from __future__ import annotations

import pytest
from exemption_traces import batch_answered_below_its_highest, batch_stored_below_its_pushed_id
from reference_checker import reference_check

from conformance.checks import Kind, check_trace
from conformance.checks.duplicates import dup_threshold


@pytest.mark.parametrize("step", [1000, 0], ids=["spaced", "equal-timestamps"])
def test_a_batch_answered_below_its_send_id_is_valid(step: int) -> None:
    b = batch_answered_below_its_highest(step=step)
    verdict = check_trace(b.events, header=b.header)
    assert verdict.all_violations() == () and verdict.validity.value == "valid", verdict.render()
    assert not reference_check(b.header, b.events)


@pytest.mark.parametrize("step", [1000, 0], ids=["spaced", "equal-timestamps"])
def test_a_batch_answered_above_everything_stored_is_lost(step: int) -> None:
    b = batch_answered_below_its_highest(second_send=6, step=step)
    verdict = check_trace(b.events, header=b.header)
    assert [(v.kind, v.events) for v in verdict.violations] == [
        (Kind.LOST_WRITE, (8,)),
        (Kind.LOST_WRITE, (9,)),
        (Kind.LOST_WRITE, (10,)),
    ]
    assert "producer 'p' sequence id 6 was answered as a duplicate" in verdict.violations[0].explanation
    assert reference_check(b.header, b.events) == {("lost_write", None, "k", (i,)): 1 for i in (8, 9, 10)}


def test_without_the_send_ids_the_same_receipts_are_lost_writes() -> None:
    """The ids on the publish are what excuse 6..8: the trace without them reads as lost writes (per message)."""
    b = batch_answered_below_its_highest()
    for event in b.events:
        event.extra.pop("send_seq", None)
        event.extra.pop("highest_seq", None)
    kinds = [v.kind for v in check_trace(b.events, header=b.header).violations]
    assert kinds == [Kind.LOST_WRITE] * 3


def test_an_unacknowledged_drain_is_judged_alike() -> None:
    """Acks that may never have arrived change nothing here: the rule reads publish receipts only."""
    b = batch_answered_below_its_highest()
    b.events[:] = [e for e in b.events if e.op.value != "ack"]
    kinds = {v.kind for v in check_trace(b.events, header=b.header).all_violations()}
    assert Kind.LOST_WRITE not in kinds


@pytest.mark.parametrize(("seq", "send", "need"), [(6, None, 7), (6, 4, 4), (1, 5, 5), (3, "x", 4), (3, True, 4)])
def test_dup_threshold(seq: int, send: object, need: int) -> None:
    assert dup_threshold(seq, send) == need


def _found(b) -> list[tuple[Kind, tuple[int, ...]]]:  # type: ignore[no-untyped-def]
    return [(v.kind, v.events) for v in check_trace(b.events, header=b.header).violations]


def test_a_batch_stored_under_a_send_id_below_the_pushed_one_is_stored_below_highest() -> None:
    b = batch_stored_below_its_pushed_id(send=4)  # 6..8 sent as 4, highest 8 after 1, highest 5: a duplicate
    assert _found(b) == [(Kind.STORED_BELOW_HIGHEST, (1, 6))]
    text = check_trace(b.events, header=b.header).violations[0].explanation
    assert "sequence id 6 (the first of a batch sent under id 4) was stored after its id 5 was" in text
    assert reference_check(b.header, b.events) == {("stored_below_highest", None, "k", (1, 6)): 1}


def test_the_same_batch_sent_above_the_pushed_id_passes() -> None:
    b = batch_stored_below_its_pushed_id(send=6)
    assert _found(b) == []
    assert not reference_check(b.header, b.events)


@pytest.mark.parametrize("send", [6, 4])
def test_a_lone_id_below_a_batchs_highest_id_is_stored_below_highest(send: int) -> None:
    """A stored batch shows ``max(send id, highest id)`` pushed (8 for 6..8's entry, stored either way here): a lone 0
    stored after it is below it; the witness is that entry's first receipt."""
    b = batch_stored_below_its_pushed_id(send=send, then_alone=0)
    expected = [(Kind.STORED_BELOW_HIGHEST, (1, 6))] if send == 4 else []
    expected.append((Kind.STORED_BELOW_HIGHEST, (6, 9)))
    assert _found(b) == expected
    assert reference_check(b.header, b.events) == {("stored_below_highest", None, "k", w): 1 for _, w in expected}
