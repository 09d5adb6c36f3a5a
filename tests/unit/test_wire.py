"""The raw protocol's hand-made protobuf and frames (``pytest_keyshared/driver/wire.py``): round trips, frames
captured from a real pulsar-lite 0.2.0 broker, and bad input refused with :class:`DecodeError`."""

from __future__ import annotations

import pytest

from pytest_keyshared.driver import wire

# Captured from pulsar-lite 0.2.0 (2026-11-29), each answering the frame named, total-size prefix included.
CONNECTED = bytes.fromhex("0000001d0000001908031a150a1150756c7361722d4c6974652d302e312e30100f")
LOOKUP_RESPONSE = bytes.fromhex(
    "0000002b000000270818c201220a1870756c7361723a2f2f3132372e302e302e313a33373833351801200128004000"
)
PRODUCER_SUCCESS = bytes.fromhex("000000200000001c08118a0117080212046361707018ffffffffffffffffff0122003001")
SEND_RECEIPT = bytes.fromhex("0000001d0000001908073a15080110031a0f0800100018ffffffffffffffffff01")


def _one_frame(data: bytes) -> wire.Frame:
    buffer = bytearray(data)
    frames = list(wire.split_frames(buffer))
    assert len(frames) == 1 and not buffer
    return wire.decode_frame(frames[0])


@pytest.mark.parametrize("value", [0, 1, 127, 128, 300, 2**31, 2**63 - 1, -1, -(2**63)])
def test_varint_round_trip(value: int) -> None:
    encoded = wire._int_field(7, value)
    fields = wire.decode_fields(encoded)
    assert wire.field_int(fields, 7) == value


def test_negative_int64_is_ten_bytes() -> None:
    assert wire.encode_varint(-1) == b"\xff" * 9 + b"\x01"


def test_captured_connected() -> None:
    frame = _one_frame(CONNECTED)
    assert frame.kind == wire.BaseCommandType.CONNECTED
    assert wire.field_str(frame.fields, 1) == "Pulsar-Lite-0.1.0"
    assert wire.field_int(frame.fields, 2) == 15  # the protocol version the client asked for, echoed


def test_captured_lookup_response() -> None:
    frame = _one_frame(LOOKUP_RESPONSE)
    assert frame.kind == wire.BaseCommandType.LOOKUP_RESPONSE
    assert wire.field_str(frame.fields, 1) == "pulsar://127.0.0.1:37835"
    assert wire.field_int(frame.fields, 3) == 1  # Connect
    assert wire.field_int(frame.fields, 4) == 1  # request id


def test_captured_producer_success() -> None:
    frame = _one_frame(PRODUCER_SUCCESS)
    assert frame.kind == wire.BaseCommandType.PRODUCER_SUCCESS
    assert wire.field_int(frame.fields, 1) == 2
    assert wire.field_str(frame.fields, 2) == "capp"
    assert wire.field_int(frame.fields, 3) == -1  # last_sequence_id: none known
    assert wire.field_int(frame.fields, 6) == 1  # producer_ready


def test_captured_send_receipt() -> None:
    frame = _one_frame(SEND_RECEIPT)
    assert frame.kind == wire.BaseCommandType.SEND_RECEIPT
    assert wire.field_int(frame.fields, 1) == 1 and wire.field_int(frame.fields, 2) == 3
    assert wire.message_id(wire.field_message(frame.fields, 3)) == (0, 0, -1, -1)


def test_duplicate_receipt_ids_are_minus_one() -> None:
    mid = wire._int_field(1, -1) + wire._int_field(2, -1)
    assert wire.message_id(wire.decode_fields(mid)) == (-1, -1, -1, -1)


def test_batch_send_round_trip() -> None:
    messages = [
        wire.OutgoingSingle(b"one", 4, "A", {"uid": "p1:4"}),
        wire.OutgoingSingle(b"", 5, None, {}),
        wire.OutgoingSingle(b"three", 8, "B", {"uid": "p1:8", "k": "v"}),
    ]
    data = wire.send(9, "p1", messages, sequence_id=4, highest_sequence_id=8, publish_time_ms=1234, batch=True)
    frame = _one_frame(data)
    assert frame.kind == wire.BaseCommandType.SEND
    assert [wire.field_int(frame.fields, n) for n in (1, 2, 3, 6)] == [9, 4, 3, 8]
    assert frame.metadata is not None and frame.payload is not None
    meta = wire.decode_fields(frame.metadata)
    assert wire.field_str(meta, 1) == "p1"
    assert [wire.field_int(meta, n) for n in (2, 3, 11, 24)] == [4, 1234, 3, 8]
    assert wire.field_str(meta, 6) == "A"
    singles = wire.batch_messages(frame.payload, 3)
    assert [body for _, body in singles] == [b"one", b"", b"three"]
    assert [wire.field_int(single, 8) for single, _ in singles] == [4, 5, 8]
    assert [wire.field_str(single, 2) for single, _ in singles] == ["A", None, "B"]
    kv = [wire.decode_fields(v) for v in singles[2][0][1] if isinstance(v, bytes)]
    assert [(wire.field_str(f, 1), wire.field_str(f, 2)) for f in kv] == [("uid", "p1:8"), ("k", "v")]


def test_unbatched_send_without_highest_id() -> None:
    message = wire.OutgoingSingle(b"body", 7, "K", {"uid": "p1:7"})
    frame = _one_frame(
        wire.send(1, "p1", [message], sequence_id=7, highest_sequence_id=None, publish_time_ms=5, batch=False)
    )
    assert 6 not in frame.fields and wire.field_int(frame.fields, 2) == 7
    assert frame.metadata is not None
    meta = wire.decode_fields(frame.metadata)
    assert 11 not in meta and 24 not in meta and 4 in meta
    assert frame.payload == b"body"


def test_frame_with_checksum_is_read_past_it() -> None:
    plain = wire.send(1, "p", [wire.OutgoingSingle(b"x", 1)], sequence_id=1, highest_sequence_id=None,
                      publish_time_ms=1, batch=False)  # fmt: skip
    cmd_size = int.from_bytes(plain[4:8], "big")
    cut = 8 + cmd_size
    with_crc = plain[4:cut] + b"\x0e\x01" + b"\x00\x00\x00\x00" + plain[cut:]
    frame = wire.decode_frame(with_crc)
    assert frame.payload == b"x"


def test_simple_frames_decode() -> None:
    for data, kind in (
        (wire.ping(), wire.BaseCommandType.PING),
        (wire.pong(), wire.BaseCommandType.PONG),
        (wire.close_producer(3, 4), wire.BaseCommandType.CLOSE_PRODUCER),
        (wire.connect("c", 15), wire.BaseCommandType.CONNECT),
        (wire.producer("t", 1, 2, "n"), wire.BaseCommandType.PRODUCER),
        (wire.lookup("t", 1, authoritative=True), wire.BaseCommandType.LOOKUP),
    ):
        assert _one_frame(data).kind == kind


def test_partial_frame_stays_in_the_buffer() -> None:
    buffer = bytearray(CONNECTED + PRODUCER_SUCCESS[:10])
    assert len(list(wire.split_frames(buffer))) == 1
    assert bytes(buffer) == PRODUCER_SUCCESS[:10]
    buffer += PRODUCER_SUCCESS[10:]
    assert len(list(wire.split_frames(buffer))) == 1 and not buffer


@pytest.mark.parametrize(
    "data",
    [b"\x80", b"\x0a\x05ab", b"\x0b", b"\xff" * 11],
    ids=["truncated-varint", "short-bytes", "group-wire-type", "varint-too-long"],
)
def test_bad_messages_are_refused(data: bytes) -> None:
    with pytest.raises(wire.DecodeError):
        wire.decode_fields(data)


def test_oversized_frame_is_refused() -> None:
    with pytest.raises(wire.DecodeError, match="announced"):
        list(wire.split_frames(bytearray(b"\x7f\xff\xff\xff")))


def test_send_needs_messages() -> None:
    with pytest.raises(ValueError, match="at least one"):
        wire.send(1, "p", [], sequence_id=1, highest_sequence_id=None, publish_time_ms=1, batch=True)
    two = [wire.OutgoingSingle(b"a", 1), wire.OutgoingSingle(b"b", 2)]
    with pytest.raises(ValueError, match="one message"):
        wire.send(1, "p", two, sequence_id=1, highest_sequence_id=None, publish_time_ms=1, batch=False)
