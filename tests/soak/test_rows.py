"""Events as rows (conformance.trace.rows): what the trace writer makes first, what the soak's recording threads
hand over, and what the Parquet chunks are written from.  Each path must give the same events and files as the
``Event`` path it replaces, since a soak against the model must keep its trace byte for byte."""

from __future__ import annotations

from pathlib import Path

from conformance.trace import Op, SubscriptionSpec, TraceHeader, TraceWriter, write_parquet
from conformance.trace.parquet import write_parquet_rows
from conformance.trace.rows import event_row, row_event

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
