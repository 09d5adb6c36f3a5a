"""The pulsar-lite target's lifecycle on a real process: loopback only, ready when it says, stopped by pid."""

from __future__ import annotations

import contextlib
import os
import socket
import urllib.request
from pathlib import Path

import pulsar
import pytest

from pytest_keyshared.targets import open_target
from pytest_keyshared.targets.pulsar_lite import PulsarLiteTarget

pytestmark = pytest.mark.broker


def listening_addresses(pid: int) -> set[tuple[str, int]]:
    """(ip, port) of every TCP socket ``pid`` listens on, read from /proc."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as fh:
            next(fh)
            for line in fh:
                fields = line.split()
                local, state, inode = fields[1], fields[3], fields[9]
                if state != "0A" or inode not in inodes:  # 0A: LISTEN
                    continue
                ip_hex, port_hex = local.split(":")
                if len(ip_hex) == 8:
                    ip = socket.inet_ntop(socket.AF_INET, bytes.fromhex(ip_hex)[::-1])
                else:
                    ip = socket.inet_ntop(
                        socket.AF_INET6, b"".join(bytes.fromhex(ip_hex[i : i + 8])[::-1] for i in range(0, 32, 8))
                    )
                found.add((ip, int(port_hex, 16)))
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as fh:
        return fh.read().split()[2] != "Z"


def test_it_listens_on_loopback_only_and_stops_by_pid(tmp_path: Path) -> None:
    with open_target("pulsar-lite", artifacts_dir=tmp_path) as target:
        assert isinstance(target, PulsarLiteTarget)
        pid = target.pid
        assert pid is not None and alive(pid)
        port = int(target.service_url.rsplit(":", 1)[1])
        metrics_port = int(target.metrics_url.split(":")[2].split("/")[0])
        assert listening_addresses(pid) == {("127.0.0.1", port), ("127.0.0.1", metrics_port)}
        with urllib.request.urlopen(target.metrics_url, timeout=5) as resp:
            assert b"pulsar_version_info" in resp.read()
        data_dirs = list(Path("/tmp").glob("ks-pulsar-lite-*"))
        assert data_dirs
    assert not alive(pid)
    log = (tmp_path / "pulsar-lite.log").read_text()
    assert f"Server listening on 127.0.0.1:{port}" in log  # the log stays with the artifacts
    assert (tmp_path / "pulsar-lite.toml").exists()


def test_it_is_stopped_when_the_body_fails(tmp_path: Path) -> None:
    pid = None
    with pytest.raises(RuntimeError, match="body failed"), open_target("pulsar-lite", artifacts_dir=tmp_path) as target:
        pid = target.pid  # type: ignore[attr-defined]
        raise RuntimeError("body failed")
    assert pid is not None and not alive(pid)


def test_a_restart_keeps_the_messages_and_the_port(tmp_path: Path) -> None:
    with open_target("pulsar-lite", artifacts_dir=tmp_path) as target:
        assert isinstance(target, PulsarLiteTarget)
        topic = "persistent://public/default/restart-keeps"
        client = pulsar.Client(
            target.service_url, operation_timeout_seconds=5, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)
        )
        try:
            producer = client.create_producer(topic)
            consumer = client.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
            for n in range(5):
                producer.send(f"m{n}".encode())
            first_pid, url = target.pid, target.service_url
            target.restart_broker(kill=True)
            assert target.pid != first_pid and target.service_url == url and not alive(first_pid or 0)
            got: set[bytes] = set()
            while len(got) < 5:  # prefetched copies may come again after the reconnect: at least once
                got.add(consumer.receive(timeout_millis=10_000).data())
            assert got == {f"m{n}".encode() for n in range(5)}
        finally:
            client.close()
    log = (tmp_path / "pulsar-lite.log").read_text()
    assert "broker killed for a restart" in log and log.count("Server listening on 127.0.0.1:") == 2
