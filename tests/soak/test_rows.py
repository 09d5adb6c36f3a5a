"""Events as rows (conformance.trace.rows): what the trace writer makes first, what the soak's recording threads
hand over, and what the Parquet chunks are written from.  Each path must give the same events and files as the
``Event`` path it replaces, since a soak against the model must keep its trace byte for byte."""

from __future__ import annotations

from pathlib import Path

from conformance.trace import Op, SubscriptionSpec, TraceHeader, TraceWriter, write_parquet
from conformance.trace.chunks import ChunkWriter, chunk_paths
from conformance.trace.parquet import write_parquet_rows
from conformance.trace.rows import event_row, row_event
from pytest_keyshared.soak.live import LiveCount

HEADER = TraceHeader(target="model", subscription=SubscriptionSpec(name="s"))


def _writer() -> TraceWriter:
    return TraceWriter(None, HEADER, clock=iter(range(0, 10**9, 1000)).__next__)


def _record_all(w: TraceWriter) -> None:
    """One event of each shape a run records, through ``record`` (keywords)."""
    w.record("open", topic="t", subscription="s", consumer="c1", result="ok", name="c1", policy={"mode": "x"})
    w.record("publish", topic="t", producer="p", key="k", msg_id="0:1:-1:-1", seq=1, uid="p:1", result="ok", t0=5,
             partition_key="k", error=None)  # fmt: skip
    w.record("publish", topic="t", producer="p", key="k", seq=2, uid="p:2", result="info", t0=6, error="Timeout")
    w.record("receive", topic="t", subscription="s", consumer="c1", producer="p", key="k", msg_id="0:1:-1:-1", seq=1,
             uid="p:1", redelivery_count=0)  # fmt: skip
    w.record("ack", topic="t", subscription="s", consumer="c1", key="k", msg_id="0:1:-1:-1", uid="p:1")
    w.record("fault", topic="t", fault="net_delay", consumers=["c1"], seconds=1.5, delay=0.05)
    w.record("fault", topic="t", fault="net_delay", consumers=[], seconds=2)  # int, then float: a float64 column
    w.record("end", topic="t", subscription="s", drained=True)


def _emit_all(w: TraceWriter) -> None:
    """The same events, through ``emit`` where the recorder uses it."""
    w.record("open", topic="t", subscription="s", consumer="c1", result="ok", name="c1", policy={"mode": "x"})
    w.emit(
        Op.PUBLISH.value, "t", None, None, "p", "k", "0:1:-1:-1", 1, "p:1", "ok", None, {"t0": 5, "partition_key": "k"}
    )
    w.emit(Op.PUBLISH.value, "t", None, None, "p", "k", None, 2, "p:2", "info", None, {"t0": 6, "error": "Timeout"})
    w.emit(Op.RECEIVE.value, "t", "s", "c1", "p", "k", "0:1:-1:-1", 1, "p:1", None, 0)
    w.emit(Op.ACK.value, "t", "s", "c1", None, "k", "0:1:-1:-1", None, "p:1")
    w.record("fault", topic="t", fault="net_delay", consumers=["c1"], seconds=1.5, delay=0.05)
    w.record("fault", topic="t", fault="net_delay", consumers=[], seconds=2)
    w.record("end", topic="t", subscription="s", drained=True)


def test_emit_records_what_record_does_and_row_listeners_see_every_event() -> None:
    by_record, by_emit = _writer(), _writer()
    rows: list[tuple] = []
    by_emit.add_row_listener(rows.append)
    _record_all(by_record)
    _emit_all(by_emit)
    assert by_record.events is not None and by_emit.events is not None
    assert by_emit.events == by_record.events
    assert [e.to_json() for e in by_emit.events] == [e.to_json() for e in by_record.events]
    assert [row_event(r) for r in rows] == by_record.events and rows == [event_row(e) for e in by_record.events]


def test_no_event_is_made_for_row_listeners_alone() -> None:
    w = TraceWriter(None, HEADER, keep=False)
    rows: list[tuple] = []
    w.add_row_listener(rows.append)
    w.emit(Op.ACK.value, "t", "s", "c1", None, "k", "0:1:-1:-1", None, "p:1")
    assert w.events is None and rows[0][:3] == (0, rows[0][1], "ack") and w.count == 1


def test_a_chunk_written_from_rows_is_the_file_written_from_events(tmp_path: Path) -> None:
    w = _writer()
    _record_all(w)
    assert w.events is not None
    # an extension field named like a core field fills that field where it is None (as Event.to_dict lets it)
    events = [*w.events, row_event((99, 10**6, "fault", None, None, None, None, None, None, None, None, None, None,
                                    None, {"topic": "t", "fault": "x"}))]  # fmt: skip
    write_parquet(tmp_path / "events.parquet", HEADER, events, columns={"zeta": "string"})
    kinds = write_parquet_rows(tmp_path / "rows.parquet", HEADER, [event_row(e) for e in events],
                               columns={"zeta": "string"})  # fmt: skip
    assert (tmp_path / "rows.parquet").read_bytes() == (tmp_path / "events.parquet").read_bytes()
    assert kinds["zeta"] == "string" and kinds["seconds"] == "float64" and kinds["consumers"] == "json"


def test_chunks_from_batches_of_rows_are_the_chunks_from_single_events(tmp_path: Path) -> None:
    w = _writer()
    for _ in range(40):
        _record_all(w)
    assert w.events is not None
    rows = [event_row(e) for e in w.events]
    one = ChunkWriter(tmp_path / "one", HEADER, rows=37)
    for event in w.events:
        one.append(event)
    one.close()
    batched = ChunkWriter(tmp_path / "batched", HEADER, rows=37)
    start = 0
    for size in [1, 36, 37, 38, 100, 5, 0, 74] * 3:  # batches smaller, equal to and larger than a chunk
        batched.extend_rows(rows[start : start + size])
        start += size
    batched.extend_rows(rows[start:])
    batched.close()
    assert batched.events == one.events == len(rows) and batched.chunks == one.chunks == -(-len(rows) // 37)
    for a, b in zip(chunk_paths(tmp_path / "one"), chunk_paths(tmp_path / "batched"), strict=True):
        assert a.read_bytes() == b.read_bytes()


def test_the_live_check_fed_rows_finds_what_it_finds_fed_events() -> None:
    w = _writer()
    w.record("open", topic="t", subscription="s", consumer="c1", result="ok", name="c1")
    for n in range(300):
        w.record("publish", topic="t", producer="p", key="k", msg_id=f"0:{n}:-1:-1", seq=n, uid=f"p:{n}", result="ok")
        w.record("receive", topic="t", subscription="s", consumer="c1", producer="p", key="k", msg_id=f"0:{n}:-1:-1",
                 seq=n, uid=f"p:{n}", redelivery_count=0)  # fmt: skip
        w.record("ack", topic="t", subscription="s", consumer="c1", key="k", msg_id=f"0:{n}:-1:-1", uid=f"p:{n}")
        if n % 50 == 7:  # received again after its ack, no fault between: a violation each time
            w.record("receive", topic="t", subscription="s", consumer="c1", producer="p", key="k",
                     msg_id=f"0:{n}:-1:-1", seq=n, uid=f"p:{n}", redelivery_count=0)  # fmt: skip
    assert w.events is not None
    by_event, by_rows = LiveCount(HEADER, None, slice_events=64), LiveCount(HEADER, None, slice_events=64)
    for event in w.events:
        by_event.feed(event)
    rows = [event_row(e) for e in w.events]
    for start in range(0, len(rows), 100):
        by_rows.feed_rows(rows[start : start + 100])
    by_event.close()
    by_rows.close()
    assert by_rows.events == by_event.events == len(rows)
    assert by_rows.kinds == by_event.kinds == {"redelivered_after_ack": 6}
