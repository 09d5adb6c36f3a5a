"""A producer that speaks Pulsar's binary protocol over TCP itself, for sends ``pulsar-client`` cannot make.

The C++ client behind ``pulsar-client`` sends a batch under its first sequence id and never sets
``CommandSend.highest_sequence_id``; Pulsar's own deduplication tests send batches with their highest id
(``MessageDuplicationTest.testIsDuplicate``: ``1, highest 5``; Java's key-based batches in
``ClientDeduplicationTest.testKeyBasedBatchingOrder``).  This client sends exactly the ids it is given.

Scope: CONNECT/CONNECTED, LOOKUP (following a redirect), PRODUCER/PRODUCER_SUCCESS (the broker's
``last_sequence_id``), SEND with ``sequence_id``, ``highest_sequence_id`` and ``num_messages`` (a batch or one
message), SEND_RECEIPT/SEND_ERROR, CLOSE_PRODUCER, PING/PONG.  No TLS, no authentication, no partitioned
topics, no compression.  One send at a time: a send waits for its receipt (bounded); a receipt that arrives after
its send timed out is dropped.  Every socket wait is bounded by the deadline of the call; a failure raises
:class:`RawProtocolError` with one line naming what went wrong.  The frames are built by :mod:`.wire` (no I/O).
"""

from __future__ import annotations

import contextlib
import socket
import time
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pytest_keyshared.driver import wire

__all__ = ["CLIENT_VERSION", "PROTOCOL_VERSION", "RawProducer", "RawProtocolError", "RawReceipt", "parse_service_url"]

CLIENT_VERSION = "pytest-keyshared-raw"
#: v15: the broker may send PRODUCER_SUCCESS with producer_ready = false first (exclusive producers), handled
PROTOCOL_VERSION = 15
_MAX_REDIRECTS = 3
_SERVER_ERRORS = {
    0: "UnknownError", 1: "MetadataError", 2: "PersistenceError", 3: "AuthenticationError", 4: "AuthorizationError",
    5: "ConsumerBusy", 6: "ServiceNotReady", 7: "ProducerBlockedQuotaExceededError",
    8: "ProducerBlockedQuotaExceededException", 9: "ChecksumError", 10: "UnsupportedVersionError",
    11: "TopicNotFound", 12: "SubscriptionNotFound", 13: "ConsumerNotFound", 14: "TooManyRequests",
    15: "TopicTerminatedError", 16: "ProducerBusy", 17: "InvalidTopicName",
}  # fmt: skip


class RawProtocolError(Exception):
    """The broker refused, closed, timed out or answered something this client cannot read (one line)."""


@dataclass(frozen=True, slots=True)
class RawReceipt:
    """The outcome of one send: ``ok`` with the entry's id (``-1:-1`` for a duplicate), ``fail`` with the broker's
    error (SEND_ERROR), or ``info`` (no answer in time, or the connection broke: it may have been stored)."""

    result: str
    ledger: int = -1
    entry: int = -1
    error: str | None = None


def parse_service_url(url: str) -> tuple[str, int]:
    """``pulsar://HOST:PORT`` -> ``(host, port)``; anything else (``pulsar+ssl://``, no port) is refused."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "pulsar" or not parts.hostname or parts.port is None:
        raise RawProtocolError(f"raw producer: cannot reach {url!r}: only pulsar://HOST:PORT is spoken (no TLS)")
    return parts.hostname, parts.port


def _error_name(code: int | None) -> str:
    return _SERVER_ERRORS.get(code if code is not None else -1, f"ServerError({code})")


class _Connection:
    """One TCP connection: frames out, frames in (PING answered), every read bounded by a deadline."""

    def __init__(self, host: str, port: int, deadline: float) -> None:
        self.where = f"{host}:{port}"
        try:
            self.sock = socket.create_connection((host, port), timeout=max(0.001, deadline - time.monotonic()))
        except OSError as exc:
            raise RawProtocolError(f"raw producer: cannot connect to {self.where}: {exc}") from None
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._buffer = bytearray()
        self._frames: list[wire.Frame] = []

    def write(self, frame: bytes, deadline: float) -> None:
        try:
            self.sock.settimeout(max(0.001, deadline - time.monotonic()))
            self.sock.sendall(frame)
        except OSError as exc:
            raise RawProtocolError(f"raw producer: write to {self.where} failed: {exc}") from None

    def await_frame(self, wanted: Callable[[wire.Frame], bool], deadline: float, what: str) -> wire.Frame:
        """The first frame ``wanted`` accepts; a PING is answered, any other frame is dropped."""
        while True:
            for index, frame in enumerate(self._frames):
                if wanted(frame):
                    del self._frames[: index + 1]
                    return frame
            self._frames.clear()
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"raw producer: no {what} from {self.where} in time")
            try:
                self.sock.settimeout(left)
                chunk = self.sock.recv(65536)
            except TimeoutError:
                raise TimeoutError(f"raw producer: no {what} from {self.where} in time") from None
            except OSError as exc:
                raise RawProtocolError(f"raw producer: reading {what} from {self.where} failed: {exc}") from None
            if not chunk:
                raise RawProtocolError(f"raw producer: {self.where} closed the connection while awaiting {what}")
            self._buffer += chunk
            try:
                for raw in wire.split_frames(self._buffer):
                    frame = wire.decode_frame(raw)
                    if frame.kind == wire.BaseCommandType.PING:
                        self.write(wire.pong(), deadline)
                    else:
                        self._frames.append(frame)
            except wire.DecodeError as exc:
                raise RawProtocolError(f"raw producer: unreadable frame from {self.where}: {exc}") from None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


def _refusal(frame: wire.Frame, what: str) -> RawProtocolError:
    code = wire.field_int(frame.fields, 2)
    message = wire.field_str(frame.fields, 3, "")
    return RawProtocolError(f"raw producer: the broker refused {what}: {_error_name(code)}: {message}")


class RawProducer:
    """One named producer on one topic, over its own connection (``open`` connects, looks up, creates it)."""

    def __init__(self, connection: _Connection, topic: str, name: str, producer_id: int, last_sequence_id: int):
        self._conn = connection
        self.topic = topic
        self.name = name
        self._producer_id = producer_id
        #: the broker's answer on PRODUCER_SUCCESS (``last_sequence_id``; -1 when it knows none)
        self.last_sequence_id = last_sequence_id
        self._request_id = 10
        self.connected = True
        self.server_version = ""

    @classmethod
    def open(cls, service_url: str, topic: str, name: str, *, timeout_s: float, producer_id: int = 1) -> RawProducer:
        """Connect to ``service_url``, follow the topic's lookup, and create producer ``name`` (bounded by
        ``timeout_s`` in all); raises :class:`RawProtocolError` naming the step that failed."""
        deadline = time.monotonic() + timeout_s
        host, port = parse_service_url(service_url)
        try:
            conn, version = cls._handshake(host, port, deadline)
            for _ in range(_MAX_REDIRECTS + 1):
                target = cls._lookup(conn, topic, deadline)
                if target is None or target == (host, port):
                    break
                conn.close()
                host, port = target
                conn, version = cls._handshake(host, port, deadline)
            else:
                raise RawProtocolError(f"raw producer: lookup of {topic!r} redirected more than {_MAX_REDIRECTS} times")
            conn.write(wire.producer(topic, producer_id, 2, name), deadline)
            while True:
                frame = conn.await_frame(_answers(2), deadline, "PRODUCER_SUCCESS")
                if frame.kind == wire.BaseCommandType.ERROR:
                    raise _refusal(frame, f"producer {name!r} on {topic!r}")
                if wire.field_int(frame.fields, 6, 1) != 0:  # producer_ready (absent: ready)
                    break
        except TimeoutError as exc:
            raise RawProtocolError(str(exc)) from None
        last = wire.field_int(frame.fields, 3)
        made = cls(conn, topic, name, producer_id, -1 if last is None else last)
        made.server_version = version
        return made

    @staticmethod
    def _handshake(host: str, port: int, deadline: float) -> tuple[_Connection, str]:
        conn = _Connection(host, port, deadline)
        try:
            conn.write(wire.connect(CLIENT_VERSION, PROTOCOL_VERSION), deadline)
            frame = conn.await_frame(
                lambda f: f.kind in (wire.BaseCommandType.CONNECTED, wire.BaseCommandType.ERROR), deadline, "CONNECTED"
            )
        except BaseException:
            conn.close()
            raise
        if frame.kind == wire.BaseCommandType.ERROR:
            conn.close()
            raise _refusal(frame, "the connection")
        return conn, wire.field_str(frame.fields, 1, "") or ""

    @staticmethod
    def _lookup(conn: _Connection, topic: str, deadline: float) -> tuple[str, int] | None:
        """The broker that owns ``topic`` when it is another one (None: this one, or the service URL proxies)."""
        conn.write(wire.lookup(topic, 1), deadline)
        frame = conn.await_frame(
            lambda f: f.kind == wire.BaseCommandType.LOOKUP_RESPONSE and wire.field_int(f.fields, 4) == 1,
            deadline,
            "LOOKUP_RESPONSE",
        )
        response = wire.field_int(frame.fields, 3)
        if response == 2:  # Failed
            code = wire.field_int(frame.fields, 6)
            message = wire.field_str(frame.fields, 7, "")
            raise RawProtocolError(f"raw producer: lookup of {topic!r} failed: {_error_name(code)}: {message}")
        if wire.field_int(frame.fields, 8, 0):  # proxy_through_service_url
            return None
        url = wire.field_str(frame.fields, 1)
        return None if not url else parse_service_url(url)

    def _next_request(self) -> int:
        self._request_id += 1
        return self._request_id

    def send(
        self,
        messages: Sequence[wire.OutgoingSingle],
        *,
        sequence_id: int,
        highest_sequence_id: int | None,
        batch: bool,
        timeout_s: float,
    ) -> RawReceipt:
        """Send ``messages`` as one entry with these ids and wait (at most ``timeout_s``) for the receipt."""
        if not self.connected:
            return RawReceipt("fail", error="raw producer: not connected (an earlier send broke the connection)")
        deadline = time.monotonic() + timeout_s
        frame = wire.send(
            self._producer_id,
            self.name,
            messages,
            sequence_id=sequence_id,
            highest_sequence_id=highest_sequence_id,
            publish_time_ms=int(time.time() * 1000),
            batch=batch,
        )
        pid = self._producer_id

        def answers(f: wire.Frame) -> bool:
            return (
                f.kind in (wire.BaseCommandType.SEND_RECEIPT, wire.BaseCommandType.SEND_ERROR)
                and wire.field_int(f.fields, 1) == pid
                and wire.field_int(f.fields, 2) == sequence_id
            )

        try:
            self._conn.write(frame, deadline)
            got = self._conn.await_frame(answers, deadline, f"receipt for sequence id {sequence_id}")
        except TimeoutError as exc:
            return RawReceipt("info", error=str(exc))
        except RawProtocolError as exc:
            self.connected = False
            return RawReceipt("info", error=str(exc))
        if got.kind == wire.BaseCommandType.SEND_ERROR:
            code = wire.field_int(got.fields, 3)
            return RawReceipt("fail", error=f"{_error_name(code)}: {wire.field_str(got.fields, 4, '')}")
        ids = wire.message_id(wire.field_message(got.fields, 3)) or (-1, -1, -1, -1)
        return RawReceipt("ok", ids[0], ids[1])

    def close(self, timeout_s: float = 2.0) -> None:
        """CLOSE_PRODUCER (its answer awaited at most ``timeout_s``), then the connection; never raises."""
        deadline = time.monotonic() + timeout_s
        if self.connected:
            request = self._next_request()
            with contextlib.suppress(RawProtocolError, TimeoutError):
                self._conn.write(wire.close_producer(self._producer_id, request), deadline)
                self._conn.await_frame(_answers(request), deadline, "the close's SUCCESS")
        self.connected = False
        self._conn.close()


def _answers(request_id: int) -> Callable[[wire.Frame], bool]:
    """Whether a frame answers request ``request_id`` (its request_id is field 1 in every answer used here)."""
    kinds = (wire.BaseCommandType.PRODUCER_SUCCESS, wire.BaseCommandType.SUCCESS, wire.BaseCommandType.ERROR)
    return lambda f: f.kind in kinds and wire.field_int(f.fields, 1) == request_id
