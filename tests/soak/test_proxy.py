"""The loopback proxy: lookup responses point at the proxy; bytes pass unchanged; faults act on connections."""

from __future__ import annotations

import socket
import struct
import threading

from pytest_keyshared.driver.wire import encode_varint as _encode_varint
from pytest_keyshared.soak.proxy import ProxyLink, _delimited, rewrite_lookup_response


def _varint_field(number: int, value: int) -> bytes:
    return _encode_varint(number << 3) + _encode_varint(value)


def _lookup_response(url: str) -> bytes:
    inner = _delimited(1, url.encode()) + _varint_field(3, 1) + _varint_field(4, 77) + _varint_field(5, 1)
    return _varint_field(1, 24) + _delimited(24, inner)


def test_lookup_response_gets_the_proxy_url_and_keeps_the_rest() -> None:
    rewritten = rewrite_lookup_response(_lookup_response("pulsar://10.0.0.9:6650"), "pulsar://127.0.0.1:5555")
    assert rewritten == _lookup_response("pulsar://127.0.0.1:5555")


def test_other_commands_pass_unchanged() -> None:
    ping = _varint_field(1, 18) + _delimited(18, b"")
    assert rewrite_lookup_response(ping, "pulsar://x:1") is None
    assert rewrite_lookup_response(b"\xff\xff", "pulsar://x:1") is None  # malformed: forwarded as it is


def _frame(command: bytes) -> bytes:
    return struct.pack(">II", len(command) + 4, len(command)) + command


def test_proxy_forwards_frames_rewrites_lookups_and_cuts() -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    received: list[bytes] = []
    accepted: list[socket.socket] = []

    def broker() -> None:
        conn, _ = server.accept()
        accepted.append(conn)
        received.append(conn.recv(100))
        conn.sendall(_frame(_lookup_response("pulsar://elsewhere:6650")) + _frame(b"\x08\x12\x92\x01\x00"))

    thread = threading.Thread(target=broker, daemon=True)
    thread.start()
    link = ProxyLink(("127.0.0.1", port), "c1")
    try:
        client = socket.create_connection(("127.0.0.1", link.port), timeout=5)
        client.sendall(b"hello")
        want = _frame(_lookup_response(link.url)) + _frame(b"\x08\x12\x92\x01\x00")
        got = b""
        while len(got) < len(want):
            got += client.recv(1000)
        assert got == want and link.rewritten == 1
        thread.join(5)
        assert received == [b"hello"]
        assert link.open_connections == 1
        assert link.cut() == 1
        client.settimeout(5)
        assert client.recv(10) == b""  # the client sees its connection closed
        link.partition(True)
        again = socket.create_connection(("127.0.0.1", link.port), timeout=5)
        again.settimeout(5)
        assert again.recv(10) == b""  # refused while partitioned
        assert link.connections == 1
    finally:
        link.close()
        server.close()


def test_frames_split_across_reads_come_out_whole_and_rewritten() -> None:
    """The broker's direction holds a partial frame until the rest arrives, however the reads cut it."""
    link = ProxyLink(("127.0.0.1", 9), "c1")  # never connects: only its broker-side forward is used
    try:
        stream = _frame(b"\x08\x12\x92\x01\x00") + _frame(_lookup_response("pulsar://elsewhere:6650"))
        want = _frame(b"\x08\x12\x92\x01\x00") + _frame(_lookup_response(link.url))
        forward = link._lookups_rewritten()
        pieces = [bytes(forward(stream[i : i + 1])) for i in range(len(stream))]
        assert b"".join(pieces) == want and link.rewritten == 1
        assert all(p == b"" for p in pieces[:8])  # nothing goes out before a frame is whole
        whole = link._lookups_rewritten()
        assert bytes(whole(stream[:-1])) == _frame(b"\x08\x12\x92\x01\x00")  # the whole first frame only
        assert bytes(whole(stream[-1:])) == _frame(_lookup_response(link.url))
    finally:
        link.close()


def test_a_stall_to_the_client_backs_the_broker_up_while_the_client_still_talks() -> None:
    """``stall_to_client``: nothing of the broker's reaches the client and the broker's sends stop completing (its
    socket fills: the proxy reads no more), the client's bytes still arrive; after the stall everything arrives in
    order, and ``close`` ends the proxy's threads."""
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    from_client: list[bytes] = []
    sent = [0]
    done = threading.Event()
    chunk = _frame(b"\x08\x12" + b"x" * 16000)

    def broker() -> None:
        conn, _ = server.accept()
        conn.settimeout(5)
        from_client.append(conn.recv(100))
        conn.setblocking(False)
        try:
            while not done.is_set():  # write until the socket takes no more (or the test ends)
                try:
                    sent[0] += conn.send(chunk)
                except BlockingIOError:
                    break
        finally:
            done.set()
        conn.setblocking(True)
        from_client.append(conn.recv(100))
        conn.close()

    thread = threading.Thread(target=broker, daemon=True)
    link = ProxyLink(("127.0.0.1", port), "slow", upstream_rcvbuf=64 * 1024)
    try:
        client = socket.create_connection(("127.0.0.1", link.port), timeout=5)
        thread.start()
        link.stall_to_client(True)
        client.sendall(b"hello")
        assert done.wait(10), "the broker's writes never backed up"
        client.sendall(b"still")
        thread.join(5)
        assert from_client == [b"hello", b"still"]  # the client's direction goes on
        client.settimeout(0.2)
        try:
            early = client.recv(1 << 20)
        except TimeoutError:
            early = b""
        assert early == b""  # nothing of the broker's while stalled
        link.stall_to_client(False)
        client.settimeout(5)
        whole = sent[0] // len(chunk)  # the proxy forwards whole frames only: a cut-off last one waits
        got = b""
        while len(got) < whole * len(chunk):
            data = client.recv(1 << 20)
            if not data:
                break
            got += data
        assert whole > 4 and got == chunk * whole
    finally:
        link.close()
        server.close()
    assert not any(t.is_alive() for t in link._threads)
