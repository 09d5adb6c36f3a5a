"""Canonical topics and message ids: the Python rules, and the vectorised twin held equal to them."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.trace.identity import canonical_message, derive_message_columns, normalize_topic, parse_position


@pytest.mark.parametrize(
    ("topic", "expected"),
    [
        ("orders", ("persistent://public/default/orders", -1)),
        ("public/default/orders", ("persistent://public/default/orders", -1)),
        ("persistent://public/default/orders", ("persistent://public/default/orders", -1)),
        ("non-persistent://t/n/x", ("non-persistent://t/n/x", -1)),
        ("orders-partition-3", ("persistent://public/default/orders", 3)),
        ("persistent://a/b/orders-partition-12", ("persistent://a/b/orders", 12)),
        ("a/b", ("a/b", -1)),
    ],
)
def test_normalize_topic(topic: str, expected: tuple[str, int]) -> None:
    assert normalize_topic(topic) == expected


def test_the_partition_may_come_from_the_id_or_the_topic() -> None:
    by_id = canonical_message("orders", "5:7:2:-1")
    by_name = canonical_message("orders-partition-2", "5:7")
    assert (
        by_id
        == by_name
        == (
            "persistent://public/default/orders|5:7:2:-1",
            "persistent://public/default/orders|2",
            "5:7:2:-1",
        )
    )
    assert parse_position("5:7:2:3") == (5, 7, 3)


topics = st.sampled_from(["t", "t-partition-0", "persistent://public/default/t-partition-7", "a/b/c", "x/y", "q-"])
ints = st.integers(min_value=-1, max_value=2**40)
msg_ids = st.builds(
    lambda parts, n: ":".join(str(p) for p in parts[:n]), st.lists(ints, min_size=4, max_size=4), st.integers(2, 4)
)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(topics, st.one_of(st.none(), msg_ids)), min_size=1, max_size=30))
def test_the_vectorised_derivation_equals_the_python_one(rows: list[tuple[str, str | None]]) -> None:
    ids = pa.array([m for _, m in rows], pa.string())
    names = pa.array([t for t, _ in rows], pa.string())
    encoded = pc.dictionary_encode(names)
    # a topic column as Parquet gives it, dictionary-encoded with a value no row uses
    stored = pa.DictionaryArray.from_arrays(
        pc.add(encoded.indices, 1), pa.concat_arrays([pa.array(["unused-partition-9"]), encoded.dictionary])
    )
    # the ids as text, or encoded by the caller (check_batch); the topics as text, or as stored
    for topics_in, form in (
        (names, ids),
        (names, pc.dictionary_encode(ids)),
        (stored, ids),
        (stored, pc.dictionary_encode(ids)),
    ):
        keys, streams, canon = derive_message_columns(topics_in, form)
        for (topic, msg_id), key, stream, msg in zip(
            rows, keys.to_pylist(), streams.to_pylist(), canon.to_pylist(), strict=True
        ):
            if msg_id is None:
                assert (key, stream, msg) == (None, None, None)
            else:
                assert (key, stream, msg) == canonical_message(topic, msg_id)


@settings(max_examples=50, deadline=None)
@given(topics, st.lists(st.one_of(st.none(), msg_ids), min_size=1, max_size=30), st.data())
def test_one_topic_is_derived_once_per_distinct_id(topic: str, distinct: list[str | None], data: st.DataObject) -> None:
    """With one topic the ids are derived once each (dictionary-encoded results): the same values as the
    Python rules, position included, for every repeat of an id."""
    from conformance.trace.identity import derive_message_columns_with_position

    ids = data.draw(st.lists(st.sampled_from(distinct), min_size=1, max_size=60))
    # events without a message id (close, end, ...) may name no topic
    named = [topic if m is not None or data.draw(st.booleans()) else None for m in ids]
    keys, streams, canon, position = derive_message_columns_with_position(pa.array(named, pa.string()), pa.array(ids))
    assert pa.types.is_dictionary(keys.type) or all(t is None for t in named)
    rows = zip(
        ids, keys.to_pylist(), streams.to_pylist(), canon.to_pylist(), *(p.to_pylist() for p in position), strict=True
    )
    for msg_id, key, stream, msg, *at in rows:
        if msg_id is None:
            assert (key, stream, msg, at) == (None, None, None, [None, None, None])
        else:
            assert (key, stream, msg) == canonical_message(topic, msg_id)
            assert tuple(at) == parse_position(msg)


@settings(max_examples=50, deadline=None)
@given(topics, st.integers(2, 4), st.lists(st.lists(ints, min_size=4, max_size=4), min_size=1, max_size=30))
def test_ids_of_one_width_on_one_topic_follow_the_python_rules(topic: str, width: int, ids: list[list[int]]) -> None:
    """Every id with as many parts (a trace's ids, nearly always) takes a shorter way: the same values."""
    from conformance.trace.identity import derive_message_columns_with_position

    texts = [":".join(str(p) for p in parts[:width]) for parts in ids]
    keys, streams, canon, position = derive_message_columns_with_position(pa.array([topic] * len(texts)), texts)
    for n, msg_id in enumerate(texts):
        expected = canonical_message(topic, msg_id)
        assert (keys[n].as_py(), streams[n].as_py(), canon[n].as_py()) == expected
        assert tuple(p[n].as_py() for p in position) == parse_position(expected[2])
