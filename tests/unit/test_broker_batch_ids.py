"""The model producer's batches sent with their ids (``send_batch_with_ids``, the model's side of the raw protocol
producer): the broker judges the batch by its send id and pushes ``max(sequence_id, highest_sequence_id)``
(``MessageDuplicationTest.testIsDuplicate``: ``1, highest 5`` then ``4, highest 8``)."""

from __future__ import annotations

import pytest

from reference_model.broker import BrokerConfig, ModelBroker, ModelMessageId
from reference_model.dedup import DedupConfig
from reference_model.errors import InvalidArgument


def _batch(ids: range | tuple[int, ...]) -> list[tuple[bytes, dict[str, str], str | None, int]]:
    return [(f"m{i}".encode(), {"id": str(i)}, "k", i) for i in ids]


def _broker() -> ModelBroker:
    return ModelBroker(config=BrokerConfig(dedup=DedupConfig(broker_enabled=True)))


def test_a_batch_under_an_id_at_or_below_the_pushed_highest_is_a_duplicate_whole() -> None:
    broker = _broker()
    p = broker.create_producer("t", producer_name="p1")
    first = p.send_batch_with_ids(_batch(range(1, 6)), sequence_id=1, highest_sequence_id=5)
    assert [r for r, _ in first] == ["Ok"] * 5 and all(m is not None and m.ledger_id() >= 0 for _, m in first)
    second = p.send_batch_with_ids(_batch(range(4, 9)), sequence_id=4, highest_sequence_id=8)
    assert [(r, m) for r, m in second] == [("Ok", ModelMessageId(-1, -1, -1, n)) for n in range(5)]
    assert p.send(b"six", sequence_id=6).ledger_id() >= 0  # the duplicate pushed nothing: 6 is above 5
    assert len(broker.topic_log("t")) == 2
    entry = next(iter(broker.topic_log("t")))
    assert (entry.metadata.sequence_id, entry.metadata.highest_sequence_id) == (1, 5)
    assert entry.metadata.num_messages_in_batch == 5


def test_the_answer_on_connect_is_the_pushed_highest_id() -> None:
    broker = _broker()
    p = broker.create_producer("t", producer_name="p1")
    p.send_batch_with_ids(_batch((2, 3)), sequence_id=3, highest_sequence_id=3)  # Java's key-based rewrite
    p.send_batch_with_ids(_batch((1, 4, 5)), sequence_id=5, highest_sequence_id=5)
    p.close()
    again = broker.create_producer("t", producer_name="p1")
    assert again.last_sequence_id() == 5
    assert [again.send(b"x", sequence_id=i) for i in range(1, 6)] == [ModelMessageId(-1, -1)] * 5


@pytest.mark.parametrize(
    ("messages", "seq", "highest", "match"),
    [([], 1, 1, "at least one"), (_batch((1,)), -1, 1, "sequence_id"), (_batch((1,)), 1, True, "highest")],
)
def test_bad_arguments_are_refused(messages: list, seq: int, highest: object, match: str) -> None:  # type: ignore[type-arg]
    p = _broker().create_producer("t", producer_name="p1")
    with pytest.raises(InvalidArgument, match=match):
        p.send_batch_with_ids(messages, sequence_id=seq, highest_sequence_id=highest)  # type: ignore[arg-type]
