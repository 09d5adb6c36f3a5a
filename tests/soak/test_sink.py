"""The soak's trace sink process: the chunks it writes are the events fed, its live check counts what the
streaming checker finds, and a sink that dies is reported (the run then has no verdict), never waited on."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from conformance.trace import SubscriptionSpec, TraceHeader, TraceWriter
from conformance.trace.chunks import chunk_paths, read_chunks
from conformance.trace.rows import event_row, row_event
from pytest_keyshared.soak.sink import SinkError, TraceSink


def _events(n: int, *, redeliver_after_ack: bool = False) -> tuple[TraceHeader, list]:
    header = TraceHeader(target="pulsar-lite", subscription=SubscriptionSpec(name="s"))
    w = TraceWriter(None, header, clock=iter(range(0, 10**12, 1000)).__next__)
    w.record("open", topic="t", subscription="s", consumer="c1", result="ok", name="c1", policy={"mode": "x"})
    for seq in range(n):
        key, mid, uid = f"k{seq % 5}", f"0:{seq}:-1:-1", f"p:{seq}"
        w.record("publish", topic="t", producer="p", key=key, msg_id=mid, seq=seq, uid=uid, result="ok", t0=seq)
        w.record("receive", topic="t", subscription="s", consumer="c1", producer="p", key=key, msg_id=mid, seq=seq,
                 uid=uid, redelivery_count=0)  # fmt: skip
        w.record("ack", topic="t", subscription="s", consumer="c1", key=key, msg_id=mid, uid=uid)
    if redeliver_after_ack:  # message 3 again after its ack, no fault between: one violation
        w.record("receive", topic="t", subscription="s", consumer="c1", producer="p", key="k3", msg_id="0:3:-1:-1",
                 seq=3, uid="p:3", redelivery_count=0)  # fmt: skip
    w.record("fault", topic="t", fault="net_cut", consumers=["c1"], seconds=1.5)
    w.record("end", topic="t", subscription="s", drained=True)
    assert w.events is not None
    return header, w.events


def _sink(tmp_path: Path, header: TraceHeader, **kwargs: object) -> TraceSink:
    options: dict = {"rows": 100, "max_age_s": None, "live": True, "profile": None, **kwargs}
    return TraceSink(
        tmp_path / "trace", header, status_path=tmp_path / "status", log_path=tmp_path / "sink.log", **options
    )


def test_rows_round_trip() -> None:
    _, events = _events(3)
    assert [row_event(event_row(e)) for e in events] == events


def test_the_chunks_hold_the_events_fed_and_the_live_check_counts(tmp_path: Path) -> None:
    header, events = _events(120, redeliver_after_ack=True)
    sink = _sink(tmp_path, header)
    assert sink.wait_ready(60)  # loaded what it needs; a run starts its load after this
    rows = [event_row(e) for e in events]
    for start in range(0, len(rows), 64):  # as the pipeline feeds it: batches of rows in trace order
        sink.feed(rows[start : start + 64])
    summary = sink.finish(60)
    assert summary["events"] == len(events) and summary["chunks"] == len(chunk_paths(tmp_path / "trace")) == 4
    read_header, read = read_chunks(tmp_path / "trace")
    assert read_header == header
    assert [e.to_json() for e in read] == [e.to_json() for e in events]
    assert summary["violations"] == 1 and summary["kinds"] == {"redelivered_after_ack": 1}
    assert (tmp_path / "sink.log").read_text() == ""  # nothing on its stderr (no warning, no traceback)


def test_existing_chunks_are_refused_before_the_sink_starts(tmp_path: Path) -> None:
    header, events = _events(5)
    sink = _sink(tmp_path, header)
    sink.feed([event_row(e) for e in events])
    sink.finish(60)
    with pytest.raises(FileExistsError, match="already holds trace chunks"):
        _sink(tmp_path, header)


def test_a_dead_sink_is_reported_not_waited_on(tmp_path: Path) -> None:
    header, events = _events(5)
    sink = _sink(tmp_path, header)
    os.kill(sink.pid, signal.SIGKILL)
    assert not sink.wait_ready(10)  # a dead sink is never ready, and the wait says so at once
    for _ in range(50):  # the pipe breaks once the child is gone
        sink.feed([event_row(e) for e in events])
    with pytest.raises(SinkError, match="trace sink process"):
        sink.finish(10)


def test_a_sink_whose_run_is_gone_writes_its_chunks_and_no_traceback(tmp_path: Path) -> None:
    """The run killed before it read the sink's answer (a second Ctrl-C used to do that): the sink still writes
    every chunk, and leaves no BrokenPipeError traceback in its log (checker.log)."""
    header, events = _events(50)
    sink = _sink(tmp_path, header)
    assert sink.wait_ready(30)
    sink.feed([event_row(e) for e in events])
    child = sink._child
    child.stdout.close()  # nobody reads the answer any more
    child.stdin.close()  # end of input: finish
    assert child.proc.wait(timeout=60) == 0
    assert "Traceback" not in (tmp_path / "sink.log").read_text()
    assert [e.i for e in read_chunks(tmp_path / "trace")[1]] == [e.i for e in events]
