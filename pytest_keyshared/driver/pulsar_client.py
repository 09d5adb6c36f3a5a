"""Consumers and producers on a real broker, through the real ``pulsar-client``.

Every consumer gets its own ``pulsar.Client`` (its own connection), as separate applications would; the
producers share one more.  Against brokers that key a subscription's consumers by the client-chosen consumer
id (pulsar-lite, ``ClientQuirks.distinct_consumer_ids``), each new client first subscribes throwaway
consumers on a private non-persistent topic, so that its real consumer's id is one no other consumer of
the run has: every fresh client numbers its consumers from 0, and two consumer 0s collide.

The client library logs to a file, not to the terminal.  Its logger is process-wide and the first one a
process sets stays for good (``LogUtils::setLoggerFactory``), so every client this process creates logs to one
file, :func:`process_client_log`; each run copies its part into ``<run>/pulsar-client.log`` and reads it for
unplanned reconnects (:mod:`.client_log`).  A consumer process logs to ``<run>/consumer-processes.log``.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import tempfile
import threading
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pulsar

from pytest_keyshared.driver.handles import (
    BATCHING_MAX_BYTES,
    BATCHING_MAX_MESSAGES,
    BATCHING_MAX_PUBLISH_DELAY_MS,
    ConsumerSpec,
    Delivery,
    OutgoingMessage,
    SendCallback,
    SendOutcome,
    delivery_from_message,
    format_msg_id,
)
from pytest_keyshared.driver.zero_queue import ZeroQueueReceiver
from pytest_keyshared.targets.base import TargetError

__all__ = [
    "ClientSettings",
    "PulsarConsumer",
    "PulsarProducer",
    "consumer_options",
    "delivery_from_message",
    "process_client_log",
    "send_error_result",
    "subscribe",
]

_PROCESS_LOG: Path | None = None
_PROCESS_LOG_LOCK = threading.Lock()


def process_client_log() -> Path:
    """The file every ``pulsar.Client`` of this process logs to (created on first use, removed at exit).

    The C++ library keeps the first logger factory a process installs and ignores later ones, so a per-run
    file would receive nothing after the first run.  If some other code in the process created a client with
    another logger first, this file stays empty; the client-log watch then notes that it sees nothing.
    """
    global _PROCESS_LOG
    with _PROCESS_LOG_LOCK:
        if _PROCESS_LOG is None:
            fd, name = tempfile.mkstemp(prefix=f"keyshared-pulsar-client-{os.getpid()}-", suffix=".log")
            os.close(fd)
            _PROCESS_LOG = Path(name)
            atexit.register(_remove_quietly, _PROCESS_LOG)
        return _PROCESS_LOG


def _remove_quietly(path: Path) -> None:  # pragma: no cover - runs at exit
    with contextlib.suppress(OSError):
        path.unlink()


_TIMEOUT_ERRORS: tuple[type[BaseException], ...] = (pulsar.Timeout,)
#: Errors after which the message was certainly not stored.  Anything else is ``info``: it may have been.
_DEFINITE_SEND_FAILURES: tuple[str, ...] = (
    "MessageTooBig",
    "InvalidMessage",
    "ProducerQueueIsFull",
    "ProducerBlockedQuotaExceededError",
    "ProducerBlockedQuotaExceededException",
    "TopicTerminated",
    "NotAllowedError",
    "InvalidTopicName",
)


class ClientSettings:
    """How to build clients for one run: broker URL, operation timeout, log file, consumer-id spacing.

    ``log_path`` is the file the process's clients log to: :func:`process_client_log` in the driver's
    process, the run's ``consumer-processes.log`` in a consumer process (a fresh process, so its first logger).
    """

    def __init__(
        self, service_url: str, *, operation_timeout_s: int, log_path: Path, distinct_ids: bool, nonce: str
    ) -> None:
        self.service_url = service_url
        self.operation_timeout_s = operation_timeout_s
        self.log_path = log_path
        self.distinct_ids = distinct_ids
        self.nonce = nonce
        self._next_consumer_id = 0
        self._lock = threading.Lock()

    def reserve_consumer_id(self) -> int:
        """The consumer id the next consumer client should end up with (0 when ids need not be distinct)."""
        if not self.distinct_ids:
            return 0
        with self._lock:
            reserved = self._next_consumer_id
            self._next_consumer_id += 1
            return reserved

    def client(self) -> pulsar.Client:
        return pulsar.Client(
            self.service_url,
            operation_timeout_seconds=self.operation_timeout_s,
            connection_timeout_ms=self.operation_timeout_s * 1000,
            logger=pulsar.FileLogger(pulsar.LoggerLevel.Info, str(self.log_path)),
        )


def _key_shared_policy(spec: ConsumerSpec) -> pulsar.ConsumerKeySharedPolicy:
    mode = pulsar.KeySharedMode.Sticky if spec.mode == "STICKY" else pulsar.KeySharedMode.AutoSplit
    ranges = [tuple(r) for r in spec.ranges] if spec.mode == "STICKY" else None
    return pulsar.ConsumerKeySharedPolicy(
        key_shared_mode=mode, allow_out_of_order_delivery=spec.allow_out_of_order_delivery, sticky_ranges=ranges
    )


def consumer_options(spec: ConsumerSpec) -> dict[str, Any]:
    """The keyword arguments of ``Client.subscribe`` for ``spec`` (everything but topic and subscription).

    ``unacked_messages_timeout_ms`` only when the scenario's ``open`` sets ``ack_timeout_ms``: the client then
    asks the broker to redeliver held messages on its own, which no client call shows, so the driver records
    each such release itself, a little before the client can make it (``ConsumerAgent.expired``: a ``nack``
    event with ``cause = "ack_timeout"``).  Otherwise the client's default, no timeout.
    """
    options: dict[str, Any] = {}
    if spec.ack_timeout_ms:
        options["unacked_messages_timeout_ms"] = spec.ack_timeout_ms
    if spec.dead_letter is not None:
        options["dead_letter_policy"] = pulsar.ConsumerDeadLetterPolicy(spec.dead_letter[0], spec.dead_letter[1])
    return {
        **options,
        "consumer_type": pulsar.ConsumerType.KeyShared,
        "consumer_name": spec.name,
        "receiver_queue_size": spec.receiver_queue,
        "negative_ack_redelivery_delay_ms": spec.nack_delay_ms,
        "initial_position": pulsar.InitialPosition.Earliest,
        "key_shared_policy": _key_shared_policy(spec),
    }


def subscribe(client: pulsar.Client, spec: ConsumerSpec, *, burn_ids: int, burn_topic: str, burn_tag: str) -> Any:
    """Subscribe ``spec`` on ``client``, after ``burn_ids`` throwaway consumers (see the module docstring)."""
    for _ in range(burn_ids):
        client.subscribe(burn_topic, f"ks-idburn-{burn_tag}", consumer_type=pulsar.ConsumerType.Shared)
    return client.subscribe(spec.topic, spec.subscription, **consumer_options(spec))


class PulsarConsumer:
    """One consumer on its own client.  ``crash`` is not offered here (see :mod:`.consumer_process`)."""

    def __init__(self, settings: ClientSettings, spec: ConsumerSpec, burn_tag: str) -> None:
        self._client = settings.client()
        burn = settings.reserve_consumer_id()
        try:
            self._consumer = subscribe(
                self._client,
                spec,
                burn_ids=burn,
                burn_topic=f"non-persistent://public/default/ks-idburn-{settings.nonce}",
                burn_tag=burn_tag,
            )
        except BaseException:
            with contextlib.suppress(Exception):
                self._client.close()
            raise
        #: a zero-queue consumer's bounded receives (pulsar-client refuses a receive timeout with queue 0)
        self._zero_queue = ZeroQueueReceiver(self._consumer) if spec.receiver_queue == 0 else None

    def receive(self, timeout_ms: int) -> Delivery | None:
        if self._zero_queue is not None:
            msg = self._zero_queue.receive(timeout_ms)
            return None if msg is None else delivery_from_message(msg)
        try:
            msg = self._consumer.receive(timeout_millis=timeout_ms)
        except _TIMEOUT_ERRORS:
            return None
        return delivery_from_message(msg)

    def acknowledge(self, delivery: Delivery) -> None:
        self._consumer.acknowledge(delivery.token)

    def negative_acknowledge(self, delivery: Delivery) -> None:
        self._consumer.negative_acknowledge(delivery.token)

    def redeliver_unacknowledged(self) -> None:
        self._consumer.redeliver_unacknowledged_messages()

    def close(self) -> None:
        try:
            if self._zero_queue is not None:
                self._zero_queue.close()  # the consumer's close ends its blocking receive
            else:
                self._consumer.close()
        finally:
            with contextlib.suppress(Exception):
                self._client.close()

    def is_connected(self) -> bool:
        return bool(self._consumer.is_connected())

    def crash(self) -> None:  # pragma: no cover - the driver runs crashable consumers in a child process
        raise TargetError("An in-process consumer cannot crash; the driver should have used a consumer process.")


def send_error_result(exc: BaseException) -> str:
    """``fail`` when the broker certainly did not store the message, else ``info``."""
    name = type(exc).__name__
    if isinstance(exc, _TIMEOUT_ERRORS):
        return "info"
    return "fail" if name in _DEFINITE_SEND_FAILURES else "info"


class PulsarProducer:
    """A producer with an explicit name (the 4.0 keyless sticky key is ``producerName-sequenceId``)."""

    def __init__(
        self, client: pulsar.Client, topic: str, name: str | None, *, batching: str, send_timeout_ms: int, clock: Any
    ) -> None:
        """``name`` None: created without a ``producer_name``, so the broker generates one (read back into
        :attr:`name`)."""
        self._clock = clock
        kwargs: dict[str, Any] = {}
        if batching != "none":
            kwargs.update(
                batching_enabled=True,
                batching_type=pulsar.BatchingType.KeyBased if batching == "key_based" else pulsar.BatchingType.Default,
                batching_max_messages=BATCHING_MAX_MESSAGES,
                batching_max_allowed_size_in_bytes=BATCHING_MAX_BYTES,
                batching_max_publish_delay_ms=BATCHING_MAX_PUBLISH_DELAY_MS,
            )
        self.created_t0: int = clock()
        if name is not None:
            kwargs["producer_name"] = name
        self._producer = client.create_producer(
            topic, send_timeout_millis=send_timeout_ms, block_if_queue_full=True, **kwargs
        )
        self.name: str = name if name is not None else str(self._producer.producer_name())
        # no initial_sequence_id is set, so the C++ client takes the broker's answer as its last published id
        self.answered_sequence_id: int = int(self._producer.last_sequence_id())

    @staticmethod
    def _send_kwargs(message: OutgoingMessage) -> dict[str, Any]:
        properties = message.properties  # the client only reads it: no copy when it is a dict already
        kwargs: dict[str, Any] = {"properties": properties if type(properties) is dict else dict(properties)}
        if not message.auto_sequence:  # else the client numbers it from the broker's answer on connect
            kwargs["sequence_id"] = message.seq
        if message.partition_key:
            kwargs["partition_key"] = message.partition_key
        if message.ordering_key:
            kwargs["ordering_key"] = message.ordering_key
        if message.deliver_after_ms:
            kwargs["deliver_after"] = timedelta(milliseconds=message.deliver_after_ms)
        return kwargs

    def send(self, message: OutgoingMessage) -> SendOutcome:
        t0 = self._clock()
        try:
            mid = self._producer.send(message.payload, **self._send_kwargs(message))
        except Exception as exc:
            return SendOutcome(result=send_error_result(exc), error=f"{type(exc).__name__}: {exc}", t0=t0)
        return SendOutcome(
            result="ok",
            msg_id=format_msg_id(mid.ledger_id(), mid.entry_id(), mid.partition(), mid.batch_index()),
            t0=t0,
            last_seq=int(self._producer.last_sequence_id()),
        )

    def send_batch(
        self,
        messages: list[OutgoingMessage],
        on_done: SendCallback,
        timeout_s: float,
        between: Callable[[], None] | None = None,
    ) -> bool:
        """Pipelined sends (batching needs them); ``on_done`` per message from the client's thread; ``between``
        after each send but the last.

        Returns False if some sends did not complete within ``timeout_s``; those are reported ``info``.
        """
        if not messages:
            return True
        pending: dict[str, tuple[OutgoingMessage, int]] = {}
        lock = threading.Lock()
        all_done = threading.Event()
        remaining = [len(messages)]

        def settle(message: OutgoingMessage) -> bool:
            """True if this completion is the first for ``message`` (not already reported as timed out)."""
            with lock:
                if pending.pop(message.uid, None) is None:
                    return False
                remaining[0] -= 1
                if remaining[0] == 0:
                    all_done.set()
                return True

        def completer(message: OutgoingMessage, t0: int) -> Any:
            def callback(res: Any, mid: Any) -> None:
                if not settle(message):
                    return
                if res == pulsar.Result.Ok:
                    outcome = SendOutcome(
                        "ok",
                        format_msg_id(mid.ledger_id(), mid.entry_id(), mid.partition(), mid.batch_index()),
                        t0=t0,
                        last_seq=int(self._producer.last_sequence_id()),  # set from the receipt before callbacks
                    )
                else:
                    result = "info" if res == pulsar.Result.Timeout else "fail"
                    outcome = SendOutcome(result, error=str(res), t0=t0)
                on_done(message, outcome)

            return callback

        for index, message in enumerate(messages):
            if index and between is not None:
                between()
            t0 = self._clock()
            with lock:
                pending[message.uid] = (message, t0)
            try:
                self._producer.send_async(message.payload, completer(message, t0), **self._send_kwargs(message))
            except Exception as exc:
                if settle(message):
                    error = f"{type(exc).__name__}: {exc}"
                    on_done(message, SendOutcome(send_error_result(exc), error=error, t0=t0))
        with contextlib.suppress(Exception):
            self._producer.flush()
        finished = all_done.wait(timeout_s)
        if not finished:
            with lock:
                late = list(pending.values())
                pending.clear()
            for message, t0 in late:
                on_done(message, SendOutcome("info", error=f"no receipt within {timeout_s:g}s", t0=t0))
        return finished

    def is_connected(self) -> bool:
        return bool(self._producer.is_connected())

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._producer.close()
