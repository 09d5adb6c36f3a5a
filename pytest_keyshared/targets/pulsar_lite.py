"""The default target: pulsar-lite, the Rust Pulsar-compatible broker shipped in the ``pulsar-lite`` wheel.

It runs as a subprocess on a free 127.0.0.1 port with its own temporary data directory and a generated
config.  The config matters: pulsar-lite serves metrics on ``0.0.0.0:8080`` by default and silently falls
back to all defaults (listening on ``0.0.0.0:6650``) when its config is malformed, so readiness is judged
from its log: both ``Server listening on 127.0.0.1:<port>`` and the metrics line on our loopback port must
appear, else the start fails.

What it lacks is declared, not worked around: no admin API, no deduplication switch, no replication.  What
it needs from the client is declared in :class:`~.base.ClientQuirks` (distinct consumer ids, sync sends, no
nacks in a soak).
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from pytest_keyshared.targets._process import free_port, port_accepts, spawn, stop_process
from pytest_keyshared.targets.base import Capabilities, Claims, ClientQuirks, PulsarTarget, TargetError, check_options

__all__ = ["PulsarLiteTarget", "find_binary", "render_config"]

_OPTIONS: dict[str, type | tuple[type, ...]] = {
    "binary": str,  #: path to a pulsar-lite executable (default: the one in the installed wheel)
    "startup_timeout_s": (int, float),
    "log_level": str,
    "keep_data": bool,  #: keep the data directory after stopping (it is in the artifacts dir then)
    "operation_timeout_s": int,
}
_LOG_LEVELS = ("error", "warn", "info", "debug", "trace")


def find_binary(explicit: str | None = None) -> Path:
    """The pulsar-lite executable: ``explicit``, ``$PULSAR_LITE_BINARY``, or the installed wheel's ``bin/``."""
    if explicit:
        path = Path(explicit).absolute()  # the broker is started in its data directory, not here
        if path.is_file() and os.access(path, os.X_OK):
            return path
        raise TargetError(
            f"Option binary={explicit!r}: no executable file there; give the path of a pulsar-lite binary."
        )
    candidates: list[tuple[str, Path]] = []
    if os.environ.get("PULSAR_LITE_BINARY"):
        candidates.append(("PULSAR_LITE_BINARY", Path(os.environ["PULSAR_LITE_BINARY"]).absolute()))
    spec = importlib.util.find_spec("pulsar_lite")
    if spec is not None and spec.origin is not None:
        candidates.append(("the pulsar-lite wheel", Path(spec.origin).parent / "bin" / "pulsar-lite"))
    for _source, path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return path
    tried = ", ".join(f"{src}: {path}" for src, path in candidates) or "nothing (pulsar-lite is not installed)"
    raise TargetError(
        f"No pulsar-lite executable found (tried {tried}). Install it with 'pip install pulsar-lite>=0.2.0',"
        f" or pass the path with the target option binary=..."
    )


def render_config(port: int, metrics_port: int, log_level: str = "info") -> str:
    """pulsar-lite's TOML config: broker and metrics on 127.0.0.1 (the metrics default is 0.0.0.0:8080)."""
    return (
        f'addr = "127.0.0.1:{port}"\n'
        f'log_level = "{log_level}"\n'
        "\n[metrics]\n"
        "enabled = true\n"
        f'addr = "127.0.0.1:{metrics_port}"\n'
        'cluster = "keyshared"\n'
    )


class PulsarLiteTarget(PulsarTarget):
    """pulsar-lite as a subprocess; stopped by pid, also when the run fails or is interrupted."""

    def __init__(self, name: str, artifacts_dir: Path, options: Mapping[str, Any] | None = None) -> None:
        super().__init__(name, artifacts_dir)
        opts = check_options(options, _OPTIONS, name)
        self._binary = find_binary(opts.get("binary"))
        self._startup_timeout_s = float(opts.get("startup_timeout_s", 15.0))
        self._log_level = str(opts.get("log_level", "info"))
        if self._log_level not in _LOG_LEVELS:
            raise TargetError(f"Option log_level={self._log_level!r}: expected one of {', '.join(_LOG_LEVELS)}.")
        self._keep_data = bool(opts.get("keep_data", False))
        self.capabilities = Capabilities(
            admin_api=False,
            dedup_switch=False,
            replication=False,
            crash_consumer=True,
            broker_restart=True,
            raw_send=True,
            reasons={
                "admin_api": "pulsar-lite has no admin REST API",
                "dedup_switch": "pulsar-lite has no deduplication and no setting to enable it",
                "replication": "pulsar-lite is a single broker without geo-replication",
                "storage_failure": "pulsar-lite writes to its own local files, which the harness cannot make fail",
                "delayed_delivery": "pulsar-lite ignores a message's delivery time (deliver_after)",
                "message_expiry": "pulsar-lite has no message TTL and no admin API to expire messages",
                "partitioned_topics": "pulsar-lite has no admin API to create a partitioned topic (only its"
                " default_partitions setting, which would partition every topic of the broker)",
            },
        )
        self.claims = Claims(pulsar_version="4.0", implementation="pip379", selector="consistent-hashing", points=100)
        self.quirks = ClientQuirks(
            distinct_consumer_ids=True,
            sync_publish=True,
            nack_stalls=True,
            operation_timeout_s=int(opts.get("operation_timeout_s", 10)),
        )
        self._port = 0
        self._metrics_port = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_fh: IO[bytes] | None = None
        self._data_dir: Path | None = None
        self._log_path = self.artifacts_dir / "pulsar-lite.log"
        self._config_path = self.artifacts_dir / "pulsar-lite.toml"

    # --- facts ------------------------------------------------------------------------------------------

    @property
    def service_url(self) -> str:
        if not self._port:
            raise TargetError(f"Target {self.name!r} is not started.")
        return f"pulsar://127.0.0.1:{self._port}"

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self._metrics_port}/metrics"

    @property
    def broker_log(self) -> Path:
        return self._log_path

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def header_extra(self) -> dict[str, Any]:
        try:
            version = importlib.metadata.version("pulsar-lite")
        except importlib.metadata.PackageNotFoundError:  # pragma: no cover - a binary given by path
            version = "unknown"
        return {**super().header_extra(), "broker": f"pulsar-lite {version}", "claimed_contract": "Pulsar 4.0"}

    def describe(self) -> str:
        return f"pulsar-lite at {self.service_url} (pid {self.pid}, log {self._log_path})"

    # --- lifecycle --------------------------------------------------------------------------------------

    def start(self) -> None:
        self.artifacts_dir.mkdir(parents=True, exist_ok=True)
        if self._data_dir is None:
            parent = self.artifacts_dir if self._keep_data else None
            self._data_dir = Path(tempfile.mkdtemp(prefix="ks-pulsar-lite-", dir=parent))
        if not self._port:
            self._port = free_port()
            self._metrics_port = free_port()
            while self._metrics_port == self._port:  # pragma: no cover - vanishingly rare
                self._metrics_port = free_port()
        self._config_path.write_text(render_config(self._port, self._metrics_port, self._log_level), encoding="utf-8")
        self._launch()

    def _launch(self) -> None:
        assert self._data_dir is not None
        if self._log_fh is None:
            self._log_fh = self._log_path.open("ab")
        start_offset = self._log_path.stat().st_size
        argv = [
            str(self._binary),
            "--config",
            str(self._config_path),
            "--addr",
            f"127.0.0.1:{self._port}",
            "--db-path",
            str(self._data_dir / "broker"),
            "--log-level",
            self._log_level,
        ]
        env = {k: v for k, v in os.environ.items() if k != "RUST_LOG"}
        self._proc = spawn(argv, log=self._log_fh, cwd=self._data_dir, env=env)
        self._await_ready(start_offset)

    def _await_ready(self, log_offset: int) -> None:
        """Bounded wait for both loopback listeners, judged from the log and a TCP connect."""
        assert self._proc is not None
        want_broker = f"Server listening on 127.0.0.1:{self._port}".encode()
        want_metrics = f"Metrics endpoint listening on http://127.0.0.1:{self._metrics_port}".encode()
        deadline = time.monotonic() + self._startup_timeout_s
        while True:
            looked_at = time.monotonic()  # ready only counts when seen before the deadline
            code = self._proc.poll()
            if code is not None:
                self._proc = None
                raise TargetError(
                    f"pulsar-lite exited with code {code} before it was ready; see its log {self._log_path}:"
                    f" {self._log_tail(log_offset)}"
                )
            text = self._read_log(log_offset)
            if b"0.0.0.0:" in text:
                self.stop()
                raise TargetError(
                    f"pulsar-lite ignored its config {self._config_path} and listens on 0.0.0.0 (it falls back to"
                    f" defaults on a malformed config); stopped it. Log: {self._log_path}"
                )
            ready = want_broker in text and want_metrics in text and port_accepts("127.0.0.1", self._port)
            if ready and looked_at < deadline:
                return
            if time.monotonic() >= deadline:
                self.stop()
                raise TargetError(
                    f"pulsar-lite did not become ready on 127.0.0.1:{self._port} within"
                    f" {self._startup_timeout_s:g}s; stopped it. Raise startup_timeout_s, or see its log"
                    f" {self._log_path}"
                )
            time.sleep(0.01)

    def _read_log(self, offset: int) -> bytes:
        try:
            with self._log_path.open("rb") as fh:
                fh.seek(offset)
                return fh.read()
        except OSError:
            return b""

    def _log_tail(self, offset: int) -> str:
        """The log's last lines, short enough for a one-line error (the whole log is named beside it)."""
        lines = self._read_log(offset).decode("utf-8", "replace").strip().splitlines()
        tail = " | ".join(lines[-3:]) or "(empty)"
        return tail if len(tail) <= 160 else "..." + tail[-157:]

    def stop(self) -> None:
        if self._proc is not None:
            stop_process(self._proc)
            self._proc = None
        if self._log_fh is not None:
            with contextlib.suppress(OSError):
                self._log_fh.close()
            self._log_fh = None
        if self._data_dir is not None and not self._keep_data:
            shutil.rmtree(self._data_dir, ignore_errors=True)
            self._data_dir = None

    def restart_broker(self, *, kill: bool = False) -> None:
        """SIGTERM (or SIGKILL) the broker and start it again on the same port and data directory."""
        if self._proc is None:
            raise TargetError(f"Target {self.name!r} is not running; cannot restart it.")
        stop_process(self._proc, kill=kill)
        self._proc = None
        if self._log_fh is not None:
            self._log_fh.write(f"--- keyshared: broker {'killed' if kill else 'stopped'} for a restart ---\n".encode())
            self._log_fh.flush()
        self._launch()
