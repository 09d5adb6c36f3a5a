"""A consumer that can crash: it lives in a child process, and a crash is ``SIGKILL`` of that process.

Why a process: a crash must cut the consumer's connection without a close, and the client must not quietly
reconnect it.  Killing the process does both on every broker (the kernel resets the socket; nothing is left
to reconnect), and it is what a crashed application looks like to the broker.  The parent drives the child
over a pipe, one JSON line per request and per reply, with every wait bounded; recording stays in the parent,
so the trace keeps its discipline: ``receive`` is recorded after the child handed the message over, ``ack``
before the parent asks the child to acknowledge.  Acknowledgements are one-way (the child answers only when
one fails), so a message costs one round trip, not two; the child handles requests in order, so an
acknowledgement is made before anything asked after it.

Run as ``python -m pytest_keyshared.driver.consumer_process``; it speaks only on stdout (client logs go to a
file).
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

from pytest_keyshared.driver.handles import ConsumerSpec, Delivery
from pytest_keyshared.targets.base import TargetError

__all__ = ["ProcessConsumer"]


class ProcessConsumer:
    """Parent side: the :class:`~.handles.ConsumerHandle` of a consumer in a child process."""

    def __init__(
        self,
        spec: ConsumerSpec,
        *,
        service_url: str,
        operation_timeout_s: int,
        log_path: Path,
        burn_ids: int,
        burn_topic: str,
        burn_tag: str,
    ) -> None:
        self._lock = threading.Lock()
        self._buffer = b""
        self._timeout_s = operation_timeout_s + 5.0
        self._refs: dict[int, int] = {}
        self._async_errors: list[dict[str, Any]] = []  #: failures of quiet requests, not yet raised
        env = dict(os.environ)
        env["PYTHONUNBUFFERED"] = "1"
        with log_path.open("ab") as stderr_log:  # the child's own errors, beside the client log
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "pytest_keyshared.driver.consumer_process"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr_log,
                env=env,
                start_new_session=True,
            )
        assert self._proc.stdout is not None and self._proc.stdin is not None
        self._stdin: IO[bytes] = self._proc.stdin
        self._stdout: IO[bytes] = self._proc.stdout
        os.set_blocking(self._stdout.fileno(), False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._stdout, selectors.EVENT_READ)
        request = {
            "op": "subscribe",
            "service_url": service_url,
            "operation_timeout_s": operation_timeout_s,
            "log_path": str(log_path),
            "burn_ids": burn_ids,
            "burn_topic": burn_topic,
            "burn_tag": burn_tag,
            "spec": {
                "topic": spec.topic,
                "subscription": spec.subscription,
                "name": spec.name,
                "mode": spec.mode,
                "allow_out_of_order_delivery": spec.allow_out_of_order_delivery,
                "ranges": [list(r) for r in spec.ranges],
                "receiver_queue": spec.receiver_queue,
                "nack_delay_ms": spec.nack_delay_ms,
                "ack_timeout_ms": spec.ack_timeout_ms,
                "dead_letter": None if spec.dead_letter is None else list(spec.dead_letter),
            },
        }
        try:
            self._call(request, timeout_s=2 * operation_timeout_s + 10.0)
        except BaseException:
            self.crash()
            raise

    @property
    def pid(self) -> int:
        return self._proc.pid

    # --- protocol ---------------------------------------------------------------------------------------

    def _call(self, request: dict[str, Any], *, timeout_s: float | None = None) -> dict[str, Any]:
        with self._lock:
            self._write(request)
            reply = self._read_reply(timeout_s if timeout_s is not None else self._timeout_s)
        if "error" in reply:
            raise ConsumerProcessError(reply["error"], reply.get("type", "Error"))
        return reply

    def _tell(self, request: dict[str, Any]) -> None:
        """A request the child answers only if it fails (acknowledgements): no round trip per message.

        The child handles requests in order, so the acknowledgement is made before anything asked after it;
        a failure comes back as an ``async_error`` line, set aside while reading other replies (a receive's
        message must not be lost to it) and raised by the next acknowledgement, once that one is sent.
        """
        with self._lock:
            self._write({**request, "quiet": True})
            self._raise_async_error()

    def _write(self, request: dict[str, Any]) -> None:
        if self._proc.poll() is not None:
            raise TargetError(f"consumer process {self._proc.pid} is gone (exit code {self._proc.returncode})")
        try:
            self._stdin.write(json.dumps(request).encode() + b"\n")
            self._stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise TargetError(f"consumer process {self._proc.pid} stopped reading: {exc}") from None

    def _read_reply(self, timeout_s: float) -> dict[str, Any]:
        """The reply to the request just written (earlier quiet requests' failures are set aside)."""
        while True:
            reply = self._read_line(timeout_s)
            if "async_error" not in reply:
                return reply
            self._async_errors.append(reply)

    def _raise_async_error(self) -> None:
        while b"\n" in self._buffer or self._selector.select(0):  # failures already sent back
            try:
                reply = self._read_line(0.0)
            except TargetError:
                break
            if "async_error" in reply:
                self._async_errors.append(reply)
        if self._async_errors:
            failed = self._async_errors.pop(0)
            raise ConsumerProcessError(failed["async_error"], failed.get("type", "Error"))

    def _read_line(self, timeout_s: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TargetError(f"consumer process {self._proc.pid} did not answer within {timeout_s:g}s")
            if not self._selector.select(remaining):
                continue
            try:
                chunk = os.read(self._stdout.fileno(), 65536)
            except BlockingIOError:
                continue
            if not chunk:
                raise TargetError(f"consumer process {self._proc.pid} exited (code {self._proc.poll()})")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        reply: dict[str, Any] = json.loads(line)
        return reply

    # --- ConsumerHandle ---------------------------------------------------------------------------------

    def receive(self, timeout_ms: int) -> Delivery | None:
        reply = self._call({"op": "receive", "timeout_ms": timeout_ms}, timeout_s=timeout_ms / 1000 + self._timeout_s)
        msg = reply.get("msg")
        if msg is None:
            return None
        return Delivery(
            key=msg["key"],
            msg_id=msg["msg_id"],
            uid=msg["uid"],
            redelivery_count=msg["redelivery_count"],
            producer=msg["producer"],
            seq=msg["seq"],
            event_time=msg.get("event_time", 0),
            token=msg["ref"],
        )

    def acknowledge(self, delivery: Delivery) -> None:
        self._tell({"op": "ack", "ref": delivery.token})

    def negative_acknowledge(self, delivery: Delivery) -> None:
        self._tell({"op": "nack", "ref": delivery.token})

    def redeliver_unacknowledged(self) -> None:
        self._call({"op": "redeliver"})

    def is_connected(self) -> bool | None:
        """Asks the child (after any receive in flight); None if the child cannot answer."""
        try:
            return bool(self._call({"op": "is_connected"})["connected"])
        except (TargetError, KeyError, OSError, ValueError):
            return None

    def close(self) -> None:
        try:
            self._call({"op": "close"})
        finally:
            self._reap(kill=False)

    def crash(self) -> None:
        """SIGKILL the child: its connection is reset by the kernel, with no close and no reconnect."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self._proc.pid, signal.SIGKILL)
        self._reap(kill=True)

    def _reap(self, *, kill: bool) -> None:
        with contextlib.suppress(Exception):
            self._stdin.close()
        try:
            self._proc.wait(timeout=0.5 if kill else 5.0)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._proc.pid, signal.SIGKILL)
            self._proc.wait(timeout=5.0)
        with contextlib.suppress(Exception):
            self._selector.close()
        with contextlib.suppress(Exception):
            self._stdout.close()


class ConsumerProcessError(TargetError):
    """A client call failed in the consumer process; ``kind`` is the pulsar exception's class name."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind


# --- child side -----------------------------------------------------------------------------------------


def _child_main() -> int:  # pragma: no cover - runs in the child process (exercised by the broker tests)
    import pulsar

    from pytest_keyshared.driver.pulsar_client import ClientSettings, delivery_from_message, subscribe
    from pytest_keyshared.driver.zero_queue import ZeroQueueReceiver

    out = sys.stdout.buffer
    client: Any = None
    consumer: Any = None
    zero_queue: ZeroQueueReceiver | None = None  # a zero-queue consumer's bounded receives
    messages: dict[int, Any] = {}
    next_ref = 0

    def reply(obj: dict[str, Any]) -> None:
        out.write(json.dumps(obj).encode() + b"\n")
        out.flush()

    for raw in sys.stdin.buffer:
        request = json.loads(raw)
        op = request["op"]
        try:
            if op == "subscribe":
                spec = ConsumerSpec(
                    **{
                        **request["spec"],
                        "ranges": tuple(tuple(r) for r in request["spec"]["ranges"]),
                        "dead_letter": None
                        if request["spec"].get("dead_letter") is None
                        else tuple(request["spec"]["dead_letter"]),
                    }
                )
                settings = ClientSettings(
                    request["service_url"],
                    operation_timeout_s=request["operation_timeout_s"],
                    log_path=Path(request["log_path"]),
                    distinct_ids=False,
                    nonce="",
                )
                client = settings.client()
                consumer = subscribe(
                    client, spec, burn_ids=request["burn_ids"], burn_topic=request["burn_topic"],
                    burn_tag=request["burn_tag"],
                )  # fmt: skip
                zero_queue = ZeroQueueReceiver(consumer) if spec.receiver_queue == 0 else None
                reply({"ok": True})
            elif op == "receive":
                if zero_queue is not None:
                    msg = zero_queue.receive(request["timeout_ms"])
                else:
                    try:
                        msg = consumer.receive(timeout_millis=request["timeout_ms"])
                    except pulsar.Timeout:
                        msg = None
                if msg is None:
                    reply({"ok": True, "msg": None})
                    continue
                d = delivery_from_message(msg)
                messages[next_ref] = msg
                reply({"ok": True, "msg": {
                    "key": d.key, "msg_id": d.msg_id, "uid": d.uid, "redelivery_count": d.redelivery_count,
                    "producer": d.producer, "seq": d.seq, "event_time": d.event_time, "ref": next_ref,
                }})  # fmt: skip
                next_ref += 1
            elif op == "ack":
                consumer.acknowledge(messages.pop(request["ref"]))
                if not request.get("quiet"):
                    reply({"ok": True})
            elif op == "nack":
                consumer.negative_acknowledge(messages.pop(request["ref"]))
                if not request.get("quiet"):
                    reply({"ok": True})
            elif op == "redeliver":
                consumer.redeliver_unacknowledged_messages()
                messages.clear()
                reply({"ok": True})
            elif op == "is_connected":
                reply({"ok": True, "connected": bool(consumer.is_connected())})
            elif op == "close":
                if zero_queue is not None:
                    zero_queue.close()  # the consumer's close ends its blocking receive
                else:
                    consumer.close()
                client.close()
                reply({"ok": True})
                return 0
            else:
                reply({"error": f"unknown request {op!r}", "type": "ProtocolError"})
        except Exception as exc:
            key = "async_error" if request.get("quiet") else "error"
            reply({key: str(exc), "type": type(exc).__name__})
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(_child_main())
