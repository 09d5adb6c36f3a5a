"""Pulsar's binary protocol, the few commands a raw producer needs, encoded and decoded by hand (no I/O).

Why by hand: the C++ client behind ``pulsar-client`` never sets ``CommandSend.highest_sequence_id`` (a batch goes
under its first id), so the sends of Pulsar's own deduplication tests that carry a batch's highest id
(``MessageDuplicationTest.testIsDuplicate``, ``ClientDeduplicationTest.testKeyBasedBatchingOrder``) cannot be made
through it.  :mod:`.raw_producer` speaks the protocol over a socket with these frames.

Protobuf (proto2) is encoded for the fields named below only, with the field numbers of
``pulsar-common/src/main/proto/PulsarApi.proto``.  Decoding keeps every field (unknown ones included) as a
``{number: [values]}`` map: varints as ints, length-delimited fields as bytes; fixed32/fixed64 are skipped over.

Frames (``Commands.java``): a simple command is ``[total size][command size][BaseCommand]``, sizes as 4-byte big
endian; a ``SEND`` adds ``[metadata size][MessageMetadata][payload]`` after the command.  The magic number 0x0e01
and its CRC32C between the command and the metadata are optional (``Commands.hasChecksum`` looks for the magic;
the broker's ``Producer.verifyChecksum`` checks one only when it is there: "ignore if checksum is not
available"), so frames are written without them; a
received frame carrying one is read past it.  A batch's payload is, per message,
``[size][SingleMessageMetadata][payload]`` (``Commands.serializeSingleMessageInBatchWithPayload``).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

__all__ = [
    "BATCH_MESSAGE_HEADER",
    "MAGIC_CRC32C",
    "BaseCommandType",
    "DecodeError",
    "Fields",
    "Frame",
    "OutgoingSingle",
    "batch_messages",
    "close_producer",
    "connect",
    "decode_fields",
    "decode_frame",
    "field_int",
    "field_message",
    "field_str",
    "lookup",
    "message_id",
    "ping",
    "pong",
    "producer",
    "send",
    "signed64",
    "split_frames",
]

MAGIC_CRC32C = 0x0E01
#: the size prefix of each message in a batch payload
BATCH_MESSAGE_HEADER = 4
_U32 = struct.Struct(">I")
_U16 = struct.Struct(">H")
_MAX_FRAME = 5 * 1024 * 1024 + 10 * 1024  # Pulsar's default maxMessageSize plus the frame's own headroom


class DecodeError(ValueError):
    """Bytes that are not a frame or a message of the protocol (truncated, bad wire type, oversized)."""


class BaseCommandType:
    """``BaseCommand.Type``: each command's sub-message is the BaseCommand field with the same number."""

    CONNECT = 2
    CONNECTED = 3
    PRODUCER = 5
    SEND = 6
    SEND_RECEIPT = 7
    SEND_ERROR = 8
    SUCCESS = 13
    ERROR = 14
    CLOSE_PRODUCER = 15
    PRODUCER_SUCCESS = 17
    PING = 18
    PONG = 19
    LOOKUP = 23
    LOOKUP_RESPONSE = 24


# --- encoding ----------------------------------------------------------------------------------------------


def encode_varint(value: int) -> bytes:
    """A varint; a negative int is its 64-bit two's complement (ten bytes), as protobuf writes int64 -1."""
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(number: int, wire_type: int) -> bytes:
    return encode_varint(number << 3 | wire_type)


def _int_field(number: int, value: int) -> bytes:
    return _key(number, 0) + encode_varint(value)


def _bytes_field(number: int, value: bytes) -> bytes:
    return _key(number, 2) + encode_varint(len(value)) + value


def _str_field(number: int, value: str) -> bytes:
    return _bytes_field(number, value.encode("utf-8"))


def _key_values(number: int, pairs: Mapping[str, str]) -> bytes:
    """``repeated KeyValue`` (key = 1, value = 2), in the mapping's order."""
    return b"".join(_bytes_field(number, _str_field(1, k) + _str_field(2, v)) for k, v in pairs.items())


def _command(kind: int, body: bytes) -> bytes:
    """``BaseCommand { type = kind; <sub-message kind> = body }``."""
    return _int_field(1, kind) + _bytes_field(kind, body)


def _simple_frame(command: bytes) -> bytes:
    return _U32.pack(len(command) + 4) + _U32.pack(len(command)) + command


def connect(client_version: str, protocol_version: int) -> bytes:
    """``CONNECT`` (client_version = 1, protocol_version = 4); no authentication."""
    return _simple_frame(
        _command(BaseCommandType.CONNECT, _str_field(1, client_version) + _int_field(4, protocol_version))
    )


def lookup(topic: str, request_id: int, *, authoritative: bool = False) -> bytes:
    """``LOOKUP`` (topic = 1, request_id = 2, authoritative = 3)."""
    body = _str_field(1, topic) + _int_field(2, request_id) + (_int_field(3, 1) if authoritative else b"")
    return _simple_frame(_command(BaseCommandType.LOOKUP, body))


def producer(topic: str, producer_id: int, request_id: int, producer_name: str) -> bytes:
    """``PRODUCER`` (topic = 1, producer_id = 2, request_id = 3, producer_name = 4)."""
    body = _str_field(1, topic) + _int_field(2, producer_id) + _int_field(3, request_id) + _str_field(4, producer_name)
    return _simple_frame(_command(BaseCommandType.PRODUCER, body))


def close_producer(producer_id: int, request_id: int) -> bytes:
    """``CLOSE_PRODUCER`` (producer_id = 1, request_id = 2)."""
    return _simple_frame(
        _command(BaseCommandType.CLOSE_PRODUCER, _int_field(1, producer_id) + _int_field(2, request_id))
    )


def ping() -> bytes:
    return _simple_frame(_command(BaseCommandType.PING, b""))


def pong() -> bytes:
    return _simple_frame(_command(BaseCommandType.PONG, b""))


@dataclass(frozen=True, slots=True)
class OutgoingSingle:
    """One message of a send: its payload, properties, partition key and (in a batch) its own sequence id."""

    payload: bytes
    sequence_id: int
    partition_key: str | None = None
    properties: Mapping[str, str] = field(default_factory=dict)


def _single_metadata(message: OutgoingSingle) -> bytes:
    """``SingleMessageMetadata``: properties = 1, partition_key = 2, payload_size = 3, sequence_id = 8."""
    out = _key_values(1, message.properties)
    if message.partition_key is not None:
        out += _str_field(2, message.partition_key)
    return out + _int_field(3, len(message.payload)) + _int_field(8, message.sequence_id)


def send(
    producer_id: int,
    producer_name: str,
    messages: Sequence[OutgoingSingle],
    *,
    sequence_id: int,
    highest_sequence_id: int | None,
    publish_time_ms: int,
    batch: bool,
) -> bytes:
    """A ``SEND`` frame of ``messages``: one entry, a batch of them (``batch``) or one message alone.

    ``CommandSend``: producer_id = 1, sequence_id = 2, num_messages = 3, highest_sequence_id = 6 (omitted when
    ``None``).  ``MessageMetadata``: producer_name = 1, sequence_id = 2, publish_time = 3, properties = 4 (unbatched),
    partition_key = 6 (the first message's), num_messages_in_batch = 11 (batched), highest_sequence_id = 24.
    """
    if not messages:
        raise ValueError("a send needs at least one message")
    if not batch and len(messages) != 1:
        raise ValueError(f"an unbatched send carries one message, not {len(messages)}")
    command = _int_field(1, producer_id) + _int_field(2, sequence_id) + _int_field(3, len(messages))
    if highest_sequence_id is not None:
        command += _int_field(6, highest_sequence_id)
    first = messages[0]
    metadata = _str_field(1, producer_name) + _int_field(2, sequence_id) + _int_field(3, publish_time_ms)
    if not batch:
        metadata += _key_values(4, first.properties)
    if first.partition_key is not None:
        metadata += _str_field(6, first.partition_key)
    if batch:
        metadata += _int_field(11, len(messages))
    if highest_sequence_id is not None:
        metadata += _int_field(24, highest_sequence_id)
    if batch:
        parts = []
        for message in messages:
            single = _single_metadata(message)
            parts.append(_U32.pack(len(single)) + single + message.payload)
        payload = b"".join(parts)
    else:
        payload = first.payload
    cmd = _command(BaseCommandType.SEND, command)
    total = 4 + len(cmd) + 4 + len(metadata) + len(payload)
    return _U32.pack(total) + _U32.pack(len(cmd)) + cmd + _U32.pack(len(metadata)) + metadata + payload


# --- decoding ----------------------------------------------------------------------------------------------

#: a decoded message: field number -> its values in order (ints for varints, bytes for length-delimited)
Fields = dict[int, list[int | bytes]]


def read_varint(data: bytes, at: int) -> tuple[int, int]:
    """The varint at ``at`` in ``data`` and the offset after it (:class:`DecodeError` if truncated or too long)."""
    value = shift = 0
    while True:
        if at >= len(data):
            raise DecodeError("truncated varint")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7
        if shift > 63:
            raise DecodeError("varint longer than 10 bytes")


def decode_fields(data: bytes) -> Fields:
    """Every field of one protobuf message (wire types 0, 1, 2 and 5; groups are refused)."""
    out: Fields = {}
    at = 0
    while at < len(data):
        key, at = read_varint(data, at)
        number, wire_type = key >> 3, key & 7
        value: int | bytes
        if wire_type == 0:
            value, at = read_varint(data, at)
        elif wire_type == 2:
            size, at = read_varint(data, at)
            if at + size > len(data):
                raise DecodeError(f"field {number}: {size} bytes announced, {len(data) - at} left")
            value, at = data[at : at + size], at + size
        elif wire_type in (1, 5):
            width = 8 if wire_type == 1 else 4
            if at + width > len(data):
                raise DecodeError(f"field {number}: truncated fixed{width * 8}")
            value, at = int.from_bytes(data[at : at + width], "little"), at + width
        else:
            raise DecodeError(f"field {number}: unsupported wire type {wire_type}")
        out.setdefault(number, []).append(value)
    return out


def signed64(value: int) -> int:
    """An int64 read as a varint (``-1`` arrives as 2**64 - 1)."""
    return value - (1 << 64) if value >= 1 << 63 else value


def field_int(fields: Fields, number: int, default: int | None = None) -> int | None:
    values = fields.get(number)
    if not values or not isinstance(values[-1], int):
        return default
    return signed64(values[-1])


def field_str(fields: Fields, number: int, default: str | None = None) -> str | None:
    values = fields.get(number)
    if not values or not isinstance(values[-1], bytes):
        return default
    return values[-1].decode("utf-8", "replace")


def field_message(fields: Fields, number: int) -> Fields | None:
    values = fields.get(number)
    if not values or not isinstance(values[-1], bytes):
        return None
    return decode_fields(values[-1])


def message_id(fields: Fields | None) -> tuple[int, int, int, int] | None:
    """``MessageIdData`` as ``(ledger, entry, partition, batch_index)``; the duplicate receipt is ``(-1, -1, ..)``."""
    if fields is None:
        return None
    ledger, entry, partition, batch_index = (field_int(fields, n) for n in (1, 2, 3, 4))
    return (
        -1 if ledger is None else ledger,
        -1 if entry is None else entry,
        -1 if partition is None else partition,
        -1 if batch_index is None else batch_index,
    )


@dataclass(frozen=True, slots=True)
class Frame:
    """One received frame: its command type, the command's fields, and what follows the command (if any)."""

    kind: int
    fields: Fields
    metadata: bytes | None = None
    payload: bytes | None = None


def decode_frame(frame: bytes) -> Frame:
    """A whole frame without its total-size prefix: ``[command size][BaseCommand][optional message part]``."""
    if len(frame) < 4:
        raise DecodeError("frame shorter than its command size")
    (cmd_size,) = _U32.unpack_from(frame, 0)
    if 4 + cmd_size > len(frame):
        raise DecodeError(f"command of {cmd_size} bytes announced in a frame of {len(frame)}")
    base = decode_fields(frame[4 : 4 + cmd_size])
    kind = field_int(base, 1)
    if kind is None:
        raise DecodeError("BaseCommand without a type")
    body = field_message(base, kind) or {}
    rest = frame[4 + cmd_size :]
    if not rest:
        return Frame(kind, body)
    if len(rest) >= 2 and _U16.unpack_from(rest, 0)[0] == MAGIC_CRC32C:
        rest = rest[6:]  # magic and checksum: not verified (the socket is local and TCP checks its bytes)
    if len(rest) < 4:
        raise DecodeError("message part shorter than its metadata size")
    (meta_size,) = _U32.unpack_from(rest, 0)
    if 4 + meta_size > len(rest):
        raise DecodeError(f"metadata of {meta_size} bytes announced, {len(rest) - 4} left")
    return Frame(kind, body, rest[4 : 4 + meta_size], rest[4 + meta_size :])


def split_frames(buffer: bytearray) -> Iterable[bytes]:
    """Take every complete frame off the front of ``buffer`` (each without its size prefix); a partial one stays."""
    while len(buffer) >= 4:
        (size,) = _U32.unpack_from(buffer, 0)
        if size > _MAX_FRAME:
            raise DecodeError(f"frame of {size} bytes announced (more than {_MAX_FRAME})")
        if len(buffer) < 4 + size:
            return
        frame = bytes(buffer[4 : 4 + size])
        del buffer[: 4 + size]
        yield frame


def batch_messages(payload: bytes, count: int) -> list[tuple[Fields, bytes]]:
    """The ``count`` messages of a batch payload: each one's ``SingleMessageMetadata`` fields and its payload."""
    out = []
    at = 0
    for index in range(count):
        if at + 4 > len(payload):
            raise DecodeError(f"batch message {index}: truncated size")
        (size,) = _U32.unpack_from(payload, at)
        at += 4
        single = decode_fields(payload[at : at + size])
        at += size
        body_size = field_int(single, 3, 0) or 0
        out.append((single, payload[at : at + body_size]))
        at += body_size
    return out
