"""The fast (columnar) reader is never more lenient than the exact one, and both word errors alike."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.checks import check_trace
from conformance.trace.reader import FastPathUnavailable, open_trace
from conformance.trace.validation import TraceFormatError

VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 5),
    st.integers(2**62, 2**64),
    st.sampled_from(["ok", "fail", "x", "1:0", "-1:-1", "c1", "3:4:-1:0", "+1:2", "01:2", " 1:2", "1:2\n", "1:0\n"]),
    st.floats(allow_nan=False, allow_infinity=False, width=16),
    st.lists(st.integers(0, 3), max_size=2),
)
FIELDS = ["i", "t", "op", "topic", "consumer", "msg_id", "result", "seq", "drained", "t0", "key", "uid", "name"]
OPS = ["open", "close", "receive", "ack", "publish", "end", "fault", "nack", "redeliver", "crash"]


@st.composite
def events(draw: st.DrawFn) -> list[dict[str, object]]:
    out = []
    for n in range(draw(st.integers(1, 8))):
        event: dict[str, object] = {"i": n, "t": n, "op": draw(st.sampled_from(OPS)), "consumer": "c1", "topic": "t"}
        event["msg_id"] = draw(st.sampled_from(["1:0", "1:1:-1:-1", "-1:-1"]))
        event["result"] = "ok"
        for name in draw(st.lists(st.sampled_from(FIELDS), max_size=2)):
            event[name] = draw(VALUES)
        out.append(event)
    return out


@settings(max_examples=150, deadline=None)
@given(events())
def test_the_fast_path_rejects_whatever_the_exact_path_rejects(evs: list[dict[str, object]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.jsonl"
        path.write_text("\n".join(json.dumps(e) for e in evs) + "\n")
        exact: str | None = None
        try:
            list(open_trace(path).events())
        except TraceFormatError as exc:
            exact = str(exc)
        fast: str | None = None
        try:
            for _ in open_trace(path).batches():
                pass
        except TraceFormatError as exc:
            fast = str(exc)
        except FastPathUnavailable:
            fast = "unavailable"
        if exact is not None:
            assert fast == exact  # rejected, with the exact path's words
        else:
            assert fast in (None, "unavailable")
            check_trace(path)  # and the checker reads it either way


def test_a_msg_id_with_a_final_newline_is_rejected_by_both_paths(tmp_path: Path) -> None:
    """``$`` in the id pattern once let the exact path take ``'1:0\\n'`` (as message 1:0) where the fast path
    refused it."""
    path = tmp_path / "nl.jsonl"
    path.write_text(json.dumps({"i": 0, "t": 0, "op": "publish", "topic": "t", "msg_id": "1:0\n", "result": "ok"}))
    words = []
    for read in (lambda: list(open_trace(path).events()), lambda: list(open_trace(path).batches())):
        try:
            read()
        except TraceFormatError as exc:
            words.append(str(exc))
    assert len(words) == 2 and words[0] == words[1]
    assert "but got '1:0\\n' in publish i=0" in words[0]


def test_an_open_with_a_null_result_counts_as_open_on_both_paths(tmp_path: Path) -> None:
    """Found by the property above: the exact path skipped ``"result": null`` opens, so a second open of the
    same consumer passed reading and failed later in the checker, without the file's name or line."""
    path = tmp_path / "twice.jsonl"
    evs = [
        {"i": 0, "t": 0, "op": "open", "consumer": "c1", "topic": "t", "result": None},
        {"i": 1, "t": 1, "op": "open", "consumer": "c1", "topic": "t", "result": "ok"},
    ]
    path.write_text("\n".join(json.dumps(e) for e in evs) + "\n")
    for read in (lambda: list(open_trace(path).events()), lambda: list(open_trace(path).batches())):
        try:
            read()
        except TraceFormatError as exc:
            assert str(exc).startswith(f"{path}:2: consumer 'c1' opened again (i=1)")
        else:
            raise AssertionError("a second open of a consumer still open was read")


@settings(max_examples=100, deadline=None)
@given(events())
def test_the_vector_check_judges_columns_read_as_dictionaries_alike(evs: list[dict[str, object]]) -> None:
    """A Spark task reads the string columns of few values dictionary-encoded (``conformance.spark.rows``): the
    vector check finds a problem in such a batch exactly when it finds one in the same batch of plain strings."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from conformance.spark.rows import _FEW_VALUES
    from conformance.trace.reader import FastPathFailed
    from conformance.trace.validation import BatchState, check_batch

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.jsonl"
        path.write_text("\n".join(json.dumps(e) for e in evs) + "\n")
        try:
            batches = list(open_trace(path).unchecked_batches())
        except FastPathFailed:
            return
    plain_state, encoded_state = BatchState(), BatchState()
    for batch in batches:
        encoded = pa.RecordBatch.from_arrays(
            [
                pc.dictionary_encode(column) if name in _FEW_VALUES else column
                for name, column in zip(batch.schema.names, batch.columns, strict=True)
            ],
            names=batch.schema.names,
        )
        plain, _rows = check_batch(batch, plain_state)
        dictionary, _rows = check_batch(encoded, encoded_state)
        assert (plain is None) == (dictionary is None), (plain, dictionary)
        if plain is not None:
            break
