"""A loopback TCP proxy in front of a Pulsar broker, one per client, so faults hit one client's connections.

The client is given ``pulsar://127.0.0.1:<proxy port>`` as its service URL.  A broker answers topic lookups with
its own address, and the client would then connect there directly, around the proxy.  So the proxy reads the
broker's frames (``[total size][command size][BaseCommand]...``, ``docs/BinaryProtocol.md`` in Apache Pulsar)
and, in every ``LOOKUP_RESPONSE`` (BaseCommand field 24), replaces ``brokerServiceUrl`` (field 1) with its own
URL; every other frame passes unchanged.  The client-to-broker direction is forwarded as bytes.

Faults (each on every connection of this proxy; see :mod:`.nemesis`):

* ``cut()``: close every open connection (the client reconnects, through the proxy);
* ``stall(on)``: forward nothing in either direction while on (data waits, connections stay open);
* ``stall_to_client(on)``: forward nothing from the broker to the client while on (the client's bytes still go
  through): the proxy stops reading the broker's socket, so the broker's writes back up as if the client had
  stopped reading (``stall_connection`` in a scenario);
* ``delay(ms)``: hold each chunk ``ms`` before forwarding it (0 ends it);
* ``partition(on)``: cut, and close every new connection at once while on.

Threads: one accepting, two per connection.  ``close()`` stops them all (bounded).
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from collections.abc import Callable

from pytest_keyshared.driver.wire import encode_varint, read_varint

__all__ = ["ProxyLink", "rewrite_lookup_response"]

_LOOKUP_RESPONSE = 24
_U32 = struct.Struct(">I")
_MAX_FRAME = 64 << 20


def _fields(buf: bytes) -> list[tuple[int, int, bytes]]:
    """Top-level protobuf fields of ``buf`` as ``(number, wire type, raw bytes of the whole field)``."""
    out, pos = [], 0
    while pos < len(buf):
        start = pos
        tag, pos = read_varint(buf, pos)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            _, pos = read_varint(buf, pos)
        elif wire == 1:
            pos += 8
        elif wire == 2:
            length, pos = read_varint(buf, pos)
            pos += length
        elif wire == 5:
            pos += 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        if pos > len(buf):
            raise ValueError("truncated field")
        out.append((number, wire, buf[start:pos]))
    return out


def _payload(raw: bytes) -> bytes:
    """The bytes of a length-delimited field (without tag and length)."""
    _, pos = read_varint(raw, 0)
    length, pos = read_varint(raw, pos)
    return raw[pos : pos + length]


def _delimited(number: int, data: bytes) -> bytes:
    return encode_varint(number << 3 | 2) + encode_varint(len(data)) + data


def rewrite_lookup_response(command: bytes, url: str) -> bytes | None:
    """``command`` (a serialized BaseCommand) with ``brokerServiceUrl`` set to ``url`` if it is a lookup
    response carrying one; else None (forward the frame unchanged)."""
    try:
        fields = _fields(command)
        if not fields or fields[0][0] != 1 or read_varint(fields[0][2], 1)[0] != _LOOKUP_RESPONSE:
            return None
        out = bytearray()
        changed = False
        for number, wire, raw in fields:
            if number == _LOOKUP_RESPONSE and wire == 2:
                inner = bytearray()
                for n, w, r in _fields(_payload(raw)):
                    if n == 1 and w == 2:
                        inner += _delimited(1, url.encode())
                        changed = True
                    else:
                        inner += r
                out += _delimited(_LOOKUP_RESPONSE, bytes(inner))
            else:
                out += raw
        return bytes(out) if changed else None
    except (ValueError, IndexError):
        return None


class ProxyLink:
    """Listens on ``127.0.0.1:<port>`` and forwards every connection to ``upstream`` (host, port)."""

    def __init__(self, upstream: tuple[str, int], name: str, *, upstream_rcvbuf: int = 0) -> None:
        """``upstream_rcvbuf``: the receive buffer (bytes) of each socket to the broker, set before it connects (0:
        the system's, which grows to megabytes): a small one lets a stall back the broker's writes up sooner."""
        self.upstream = upstream
        self.name = name
        self.upstream_rcvbuf = upstream_rcvbuf
        self._server = socket.create_server(("127.0.0.1", 0))
        self._server.settimeout(0.2)
        self.port: int = self._server.getsockname()[1]
        self.url = f"pulsar://127.0.0.1:{self.port}"
        self._lock = threading.Lock()
        self._conns: list[tuple[socket.socket, socket.socket]] = []
        self._stalled = threading.Event()
        self._stalled_to_client = threading.Event()
        self._delay_s = 0.0
        self._partitioned = False
        self._closing = threading.Event()
        self.connections = 0  #: accepted so far
        self.rewritten = 0  #: lookup responses pointed at the proxy
        self._threads: list[threading.Thread] = []
        self._accept = threading.Thread(target=self._accept_loop, name=f"ks-proxy-{name}", daemon=True)
        self._accept.start()

    # --- faults ------------------------------------------------------------------------------------------

    def cut(self) -> int:
        """Close every open connection; returns how many."""
        with self._lock:
            conns, self._conns = self._conns, []
        for a, b in conns:
            for s in (a, b):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                with contextlib.suppress(OSError):
                    s.close()
        return len(conns)

    def stall(self, on: bool) -> None:
        if on:
            self._stalled.set()
        else:
            self._stalled.clear()

    def stall_to_client(self, on: bool) -> None:
        if on:
            self._stalled_to_client.set()
        else:
            self._stalled_to_client.clear()

    def delay(self, ms: int) -> None:
        self._delay_s = max(0, ms) / 1000

    def partition(self, on: bool) -> int:
        self._partitioned = on
        return self.cut() if on else 0

    @property
    def open_connections(self) -> int:
        with self._lock:
            return len(self._conns)

    # --- forwarding --------------------------------------------------------------------------------------

    def _accept_loop(self) -> None:
        while not self._closing.is_set():
            try:
                client, _ = self._server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            if self._partitioned or self._closing.is_set():
                with contextlib.suppress(OSError):
                    client.close()
                continue
            try:
                broker = self._connect_upstream()
            except OSError:
                with contextlib.suppress(OSError):
                    client.close()
                continue
            for s in (client, broker):
                s.settimeout(None)
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self._conns.append((client, broker))
                self.connections += 1
            pumps = ((client, broker, _unchanged, False), (broker, client, self._lookups_rewritten(), True))
            for args in pumps:
                thread = threading.Thread(target=self._pump, args=args, daemon=True, name=f"ks-proxy-{self.name}")
                thread.start()
                self._threads.append(thread)
            self._threads = [t for t in self._threads if t.is_alive()]

    def _connect_upstream(self) -> socket.socket:
        if not self.upstream_rcvbuf:
            return socket.create_connection(self.upstream, timeout=5)
        host, port = self.upstream
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.upstream_rcvbuf)  # before connect: the window
            sock.settimeout(5)
            sock.connect(address)
        except OSError:
            sock.close()
            raise
        return sock

    def _hold(self, to_client: bool = False) -> None:
        """Wait while stalled (bounded by close), then add the delay."""
        while (self._stalled.is_set() or (to_client and self._stalled_to_client.is_set())) and (
            not self._closing.is_set()
        ):
            time.sleep(0.01)
        if self._delay_s:
            time.sleep(self._delay_s)

    def _pump(
        self,
        src: socket.socket,
        dst: socket.socket,
        forward: Callable[[bytes], bytes | bytearray],
        to_client: bool = False,
    ) -> None:
        """Send on to ``dst`` what ``forward`` makes of each read from ``src`` (held while stalled or delayed),
        until either side closes or ``forward`` raises ``OSError``.  ``to_client``: the broker's direction (held
        by ``stall_to_client`` too; while held nothing more is read from the broker)."""
        try:
            while True:
                if to_client:
                    self._hold(to_client)  # stalled: stop reading, so the broker's writes back up
                data = src.recv(65536)
                if not data:
                    break
                out = forward(data)
                if out:
                    self._hold(to_client)
                    dst.sendall(out)
        except OSError:
            pass
        finally:
            self._drop(src, dst)

    def _lookups_rewritten(self) -> Callable[[bytes], bytes | bytearray]:
        """The broker's direction of one connection: whole frames only (a partial one waits for the rest of
        it), each ``LOOKUP_RESPONSE`` pointed at this proxy."""
        buffer = bytearray()
        url = self.url

        def forward(data: bytes) -> bytearray:
            buffer.extend(data)
            out = bytearray()
            pos = 0
            while len(buffer) - pos >= 8:
                (total,) = _U32.unpack_from(buffer, pos)
                if total > _MAX_FRAME:
                    raise OSError("frame too large")
                if len(buffer) - pos < 4 + total:
                    break
                (size,) = _U32.unpack_from(buffer, pos + 4)
                frame_end = pos + 4 + total
                if size + 4 == total and buffer[pos + 8] == 0x08 and buffer[pos + 9] == _LOOKUP_RESPONSE:
                    new = rewrite_lookup_response(bytes(buffer[pos + 8 : frame_end]), url)
                    if new is not None:
                        self.rewritten += 1
                        out += _U32.pack(len(new) + 4) + _U32.pack(len(new)) + new
                        pos = frame_end
                        continue
                out += buffer[pos:frame_end]
                pos = frame_end
            del buffer[:pos]
            return out

        return forward

    def _drop(self, a: socket.socket, b: socket.socket) -> None:
        with self._lock:
            self._conns = [c for c in self._conns if c[0] is not a and c[1] is not a]
        for s in (a, b):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                s.close()

    def close(self, timeout_s: float = 5.0) -> None:
        self._closing.set()
        self._stalled.clear()
        self._stalled_to_client.clear()
        with contextlib.suppress(OSError):
            self._server.close()
        self.cut()
        self._accept.join(timeout_s)
        for thread in self._threads:
            thread.join(max(0.0, timeout_s / 4))


def _unchanged(data: bytes) -> bytes:
    """The client's direction: forwarded as read."""
    return data
