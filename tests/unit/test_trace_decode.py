"""The checker's intake: Arrow batches decoded to the columns its loop reads, and the reader's read-ahead."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from trace_synth import SynthConfig, synthesize

from conformance.checks import check_trace
from conformance.trace.decode import ROW_FIELDS, RowDecoder, decode_batch, is_row_columns, row_columns
from conformance.trace.parquet import write_parquet
from conformance.trace.readahead import read_ahead
from conformance.trace.reader import fast_schema, open_trace
from conformance.trace.validation import TraceFormatError


def _trace(tmp_path: Path, seed: int = 3) -> Path:
    run = synthesize(seed, SynthConfig(messages=40, partitions=2, fault_rate=0.05))
    return write_parquet(tmp_path / "t.parquet", run.header, run.events)


def _expected_rows(path: Path) -> list[tuple[object, ...]]:
    """The fields of ROW_FIELDS (but n) of every event, from the exact path, as the loop must see them."""
    from conformance.trace.identity import canonical_message, parse_position

    rows = []
    for e in open_trace(path).events():
        mkey = stream = None
        position = (-1, -1, -1)
        if e.msg_id is not None and e.topic is not None:
            mkey, stream, msg = canonical_message(e.topic, e.msg_id)
            position = parse_position(msg)
        result = None if e.result is None else e.result.value
        rows.append(
            (e.i, e.t, e.op.value, e.consumer, e.key or "", mkey, stream, e.uid, e.producer, e.seq, result,
             e.extra.get("t0"), *position, e.redelivery_count)
        )  # fmt: skip
    return rows


def _decoded_rows(batches: list[pa.RecordBatch]) -> list[tuple[object, ...]]:
    decoder = RowDecoder()
    rows = []
    for batch in batches:
        decoded = decoder.decode(batch)
        rows += [decoded.row(n)[:-1] for n in range(decoded.count)]
    return rows


def test_every_form_of_a_batch_decodes_to_what_the_exact_path_reads(tmp_path: Path) -> None:
    """Validated batches (with derived columns), the reader's row batches and raw batches of the reader's
    schema (as the Spark engine hands its parts over) all decode to the same values as the exact path."""
    path = _trace(tmp_path)
    expected = _expected_rows(path)
    validated = list(open_trace(path).batches())
    shaped = list(open_trace(path).row_batches())
    raw = [b.select(fast_schema().names) for b in validated]
    assert all(is_row_columns(b) for b in shaped) and not any(is_row_columns(b) for b in raw)
    for batches in (validated, shaped, raw):
        assert _decoded_rows(batches) == expected
    assert _decoded_rows([b.slice(k, 7) for b in shaped for k in range(0, b.num_rows, 7)]) == expected


def test_the_rare_fields_are_read_by_index(tmp_path: Path) -> None:
    path = _trace(tmp_path)
    decoded = decode_batch(next(open_trace(path).row_batches()))
    opens = [n for n in range(decoded.count) if decoded.columns[ROW_FIELDS.index("op")][n] == "open"]
    assert opens
    extras = decoded.extras(opens[0])
    assert extras["subscription"] is not None and "policy" in extras


def test_a_dictionary_column_with_null_indices_decodes_to_none() -> None:
    """A dictionary array made elsewhere keeps nulls in its indices, not its dictionary."""
    batch = pa.RecordBatch.from_pydict(
        {
            "i": [0, 1, 2],
            "t": [0, 1, 2],
            "op": pa.array(["open", "fault", "close"]).dictionary_encode(),
            "consumer": pa.array(["c1", None, "c1"]).dictionary_encode(),
        }
    )
    decoded = RowDecoder().decode(row_columns(batch))
    assert decoded.columns[ROW_FIELDS.index("consumer")] == ["c1", None, "c1"]
    assert decoded.columns[ROW_FIELDS.index("key")] == ["", "", ""]
    assert decoded.columns[ROW_FIELDS.index("ledger")] == [-1, -1, -1]


def test_read_ahead_gives_the_items_in_order_then_the_error_where_it_was_raised() -> None:
    def items() -> Iterator[int]:
        yield from range(5)
        raise ValueError("boom at 5")

    got = []
    with pytest.raises(ValueError, match="boom at 5"):
        for item in read_ahead(items, depth=2):
            got.append(item)
    assert got == [0, 1, 2, 3, 4]
    assert list(read_ahead(lambda: iter(range(100)), depth=3)) == list(range(100))


def test_read_ahead_stops_its_thread_when_the_caller_stops_reading() -> None:
    def endless() -> Iterator[int]:
        n = 0
        while True:
            yield n
            n += 1

    before = {t.ident for t in threading.enumerate()}
    reader = read_ahead(endless, depth=1)
    assert next(reader) == 0
    (thread,) = [t for t in threading.enumerate() if t.ident not in before]
    reader.close()
    deadline = time.monotonic() + 10
    while thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not thread.is_alive()


def test_read_ahead_shortens_the_switch_interval_while_it_runs_and_restores_it() -> None:
    """The reader thread gets the GIL quickly while a read-ahead runs; afterwards the interval is the caller's,
    also when the caller stops early or two read-aheads overlap."""
    import sys

    from conformance.trace.readahead import SWITCH_INTERVAL_S

    before = sys.getswitchinterval()
    outer = read_ahead(lambda: iter(range(10)), depth=1)
    assert next(outer) == 0
    assert sys.getswitchinterval() == pytest.approx(min(before, SWITCH_INTERVAL_S))
    assert list(read_ahead(lambda: iter(range(3)))) == [0, 1, 2]
    assert sys.getswitchinterval() == pytest.approx(min(before, SWITCH_INTERVAL_S))  # the outer one still runs
    outer.close()
    assert sys.getswitchinterval() == before
    with pytest.raises(ValueError, match="boom"):
        for _ in read_ahead(lambda: iter([int("boom")])):
            pass
    assert sys.getswitchinterval() == before


def test_a_malformed_trace_read_ahead_is_refused_with_the_exact_words(tmp_path: Path) -> None:
    """The read-ahead thread finds the problem; the caller gets the exact path's TraceFormatError."""
    import pyarrow.parquet as pq

    path = _trace(tmp_path)
    table = pq.read_table(path)
    ops = table.column("op").to_pylist()
    ops[len(ops) // 2] = "recieve"
    bad = tmp_path / "bad.parquet"
    pq.write_table(table.set_column(table.schema.get_field_index("op"), "op", pa.array(ops)), bad)
    with pytest.raises(TraceFormatError) as exact:
        list(open_trace(bad).events())
    with pytest.raises(TraceFormatError) as checked:
        check_trace(bad)
    assert str(checked.value) == str(exact.value)
    assert "unknown op 'recieve'" in str(checked.value)
