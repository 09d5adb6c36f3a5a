"""Reading traces: formats, the header, and one-line errors for every kind of malformed input."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conformance.checks import check_trace
from conformance.trace import SubscriptionSpec, TraceHeader, TraceWriter
from conformance.trace.builder import TraceBuilder
from conformance.trace.parquet import convert_to_parquet, write_parquet
from conformance.trace.reader import PARQUET_HEADER_KEY, open_trace, read_trace
from conformance.trace.validation import TraceFormatError
from reference_model.errors import InvalidArgument

HEADER = '{"trace_format":1,"target":"t","subscription":{"name":"s"}}'


def sample() -> TraceBuilder:
    b = TraceBuilder()
    b.open("c1", policy={"key_shared_mode": "STICKY", "sticky_ranges": [[0, 9]]})
    b.publish("k", "1:0")
    b.publish("k", "1:1")
    b.receive("c1", "k", "1:1")
    b.receive("c1", "k", "1:0")
    b.ack("c1", "1:0")
    b.ack("c1", "1:1")
    b.end()
    return b


def test_jsonl_gzip_and_parquet_read_back_the_same_events(tmp_path: Path) -> None:
    b = sample()
    plain = b.write(tmp_path / "t.jsonl")
    zipped = b.write(tmp_path / "t.jsonl.gz")
    parquet = convert_to_parquet(plain, tmp_path / "t.parquet")
    for path, fmt in ((plain, "jsonl"), (zipped, "jsonl"), (parquet, "parquet")):
        source = open_trace(path)
        assert source.format == fmt and source.header == b.header
        _header, events = read_trace(path)
        assert events == b.events, path
        assert sum(batch.num_rows for batch in source.batches()) == len(b.events)
    assert open_trace(zipped).compressed


def test_every_path_gives_the_same_verdict(tmp_path: Path) -> None:
    b = sample()
    expected = check_trace(b.events, header=b.header).identities()
    assert expected  # the sample has an out_of_order
    for path in (b.write(tmp_path / "t.jsonl"), b.write(tmp_path / "t.jsonl.gz")):
        assert check_trace(path).identities() == expected
    assert check_trace(convert_to_parquet(tmp_path / "t.jsonl", tmp_path / "t.parquet")).identities() == expected


def test_the_writer_output_is_a_readable_trace(tmp_path: Path) -> None:
    clock = iter(range(100, 200)).__next__
    with TraceWriter(tmp_path / "w.jsonl.gz", TraceHeader("model", SubscriptionSpec("s")), clock=clock) as w:
        w.record("open", consumer="c1", subscription="s", topic="t", result="ok")
        w.record("publish", topic="t", key="k", msg_id="1:0:-1:-1", uid="u", result="ok", t0=99)
        w.record("end", drained=False)
    header, events = read_trace(tmp_path / "w.jsonl.gz")
    assert header.target == "model" and [e.op.value for e in events] == ["open", "publish", "end"]


def test_a_trace_without_header_uses_the_default_contract(tmp_path: Path) -> None:
    b = sample()
    path = tmp_path / "bare.jsonl"
    path.write_text("\n".join(e.to_json() for e in b.events) + "\n")
    source = open_trace(path)
    assert not source.has_header_line and source.header == TraceHeader.unknown()
    assert check_trace(path).events == len(b.events)


def test_parquet_keeps_extension_columns_and_the_header(tmp_path: Path) -> None:
    b = sample()
    path = write_parquet(tmp_path / "x.parquet", b.header, b.events)
    pf = pq.ParquetFile(path)
    assert {"t0", "policy", "i", "msg_id"} <= set(pf.schema_arrow.names)
    assert json.loads(pf.schema_arrow.metadata[PARQUET_HEADER_KEY])["trace_format"] == 1
    assert read_trace(path)[1][0].extra["policy"] == {"key_shared_mode": "STICKY", "sticky_ranges": [[0, 9]]}


OPEN = '{"i":0,"t":1,"op":"open","consumer":"c1"}'


@pytest.mark.parametrize(
    ("lines", "where", "fragment"),
    [
        (['{"i":0,"t":1,"op":"recieve"}'], "2", "Did you mean 'receive'"),
        (["not json"], "2", "not valid JSON"),
        (["[1,2]"], "2", "expected a JSON object"),
        (['{"t":1,"op":"end"}'], "2", "event has no 'i'"),
        (['{"i":"0","t":1,"op":"end"}'], "2", "expected an integer for 'i'"),
        (['{"i":true,"t":1,"op":"end"}'], "2", "expected an integer for 'i'"),
        ([OPEN, '{"i":0,"t":2,"op":"end"}'], "3", "'i' must increase"),
        ([OPEN, '{"i":1,"t":0,"op":"end"}'], "3", "'t' must not decrease"),
        ([OPEN, '{"i":1,"t":2,"op":"receive","consumer":"c1","topic":"t"}'], "3", "has no 'msg_id'"),
        ([OPEN, '{"i":1,"t":2,"op":"receive","consumer":"c1","topic":"t","msg_id":"1:x"}'], "3", "ledger:entry"),
        ([OPEN, '{"i":1,"t":2,"op":"ack","consumer":"c1","topic":"t","msg_id":"-1:-1"}'], "3", "not a stored"),
        (['{"i":0,"t":1,"op":"publish","topic":"t","result":"ok"}'], "2", "has no 'msg_id'"),
        (['{"i":0,"t":1,"op":"publish","topic":"t","result":"maybe","msg_id":"1:0"}'], "2", "result 'ok'"),
        (['{"i":0,"t":1,"op":"publish","topic":"t","result":"ok","msg_id":"1:0","seq":"7"}'], "2", "'seq'"),
        (['{"i":0,"t":1,"op":"end","drained":"yes"}'], "2", "'drained'"),
        ([OPEN, '{"i":1,"t":2,"op":"open","consumer":"c1"}'], "3", "opened again"),
        (['{"i":0,"t":1,"op":"open","consumer":"c1","policy":{"sticky_ranges":[[1,2,3]]}}'], "2", "sticky_ranges"),
        (['{"i":0,"t":1,"op":"open","consumer":7}'], "2", "expected a string for 'consumer'"),
        (['{"i":0,"t":99999999999999999999,"op":"end"}'], "2", "64 bits"),
    ],
)
def test_a_malformed_event_is_one_line_naming_file_line_and_problem(
    tmp_path: Path, lines: list[str], where: str, fragment: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join([HEADER, *lines]) + "\n")
    for attempt in (lambda: check_trace(path), lambda: read_trace(path)):
        with pytest.raises(TraceFormatError) as err:
            attempt()
        message = str(err.value)
        assert message.startswith(f"{path}:{where}: "), message
        assert fragment in message and "\n" not in message
        assert isinstance(err.value, InvalidArgument) and err.value.exit_code == 2


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ('{"trace_format":2}\n', "unsupported trace_format 2"),
        ('{"trace_format":1,"deduplication":"yes"}\n', "'deduplication'"),
        ('{"trace_format":1,"subscription":{"name":"s","allow_out_of_order_delivery":1}}\n', "allow_out_of_order"),
        ('{"trace_format":1,"implementation":"fast"}\n', "'implementation'"),
        ('{"trace_format":1,"selector":{"kind":3}}\n', "selector.kind"),
    ],
)
def test_a_bad_header_names_the_key(tmp_path: Path, content: str, fragment: str) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text(content)
    with pytest.raises(TraceFormatError, match=fragment) as err:
        open_trace(path)
    assert str(err.value).startswith(f"{path}:1: header:")


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="no such file"):
        open_trace(tmp_path / "missing.jsonl")
    with pytest.raises(TraceFormatError, match="is a directory"):
        open_trace(tmp_path)
    corrupt = tmp_path / "x.jsonl.gz"
    lines = "".join(f'{{"i":{n},"t":{n},"op":"fault"}}\n' for n in range(200)).encode()
    corrupt.write_bytes(gzip.compress(lines)[:120])
    with pytest.raises(TraceFormatError, match="cannot be decompressed"):
        check_trace(corrupt)
    binary = tmp_path / "b.jsonl"
    binary.write_bytes(b"\xff\xfe\x00garbage\n")
    with pytest.raises(TraceFormatError, match=r"UTF-8|valid JSON"):
        check_trace(binary)
    fake = tmp_path / "p.parquet"
    fake.write_bytes(b"PAR1 not really")
    with pytest.raises(TraceFormatError, match="Parquet"):
        check_trace(fake)


def test_a_malformed_parquet_row_is_named(tmp_path: Path) -> None:
    table = pa.table({"i": [0, 1], "t": [1, 2], "op": ["open", "jump"], "consumer": ["c1", None]})
    path = tmp_path / "bad.parquet"
    pq.write_table(table, path)
    with pytest.raises(TraceFormatError, match=r"bad.parquet:row 1: unknown op 'jump'"):
        check_trace(path)
    typed = tmp_path / "typed.parquet"
    pq.write_table(pa.table({"i": ["0"], "t": [1], "op": ["end"]}), typed)
    with pytest.raises(TraceFormatError, match=r"row 0: expected an integer for 'i'"):
        check_trace(typed)


def test_blank_lines_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "blank.jsonl"
    path.write_text(HEADER + "\n\n" + OPEN + "\n\n" + '{"i":1,"t":2,"op":"end","drained":true}\n')
    assert check_trace(path).events == 2
