"""Record a trace of your own ``pulsar-client`` code, so the checkers can judge it.

An application team wraps the producer and consumers its code uses; the wrappers behave like the
``pulsar`` objects they wrap and write each event with the recording discipline the checkers rely on
(``docs/trace-format.md``): ``receive`` after the client returned the message; ``ack``, ``nack``,
``redeliver`` and ``close`` *before* the client call; ``publish`` once the send completed, with the time
the send started.  Each message carries its identity in properties (``ks-uid``, ``ks-seq``, ``ks-key``,
the driver's names), so a receive is traced to its publish even without a key.

The ``keyshared_trace`` fixture returns a :class:`TraceRecorder`; ``keyshared_check(recorder)`` judges it.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Mapping
from typing import Any

from conformance.trace import Op, TraceWriter
from pytest_keyshared.driver.handles import PROP_KEY, PROP_SEQ, PROP_UID, delivery_key, format_msg_id

__all__ = ["RecordingConsumer", "RecordingProducer", "TraceRecorder", "message_id_text"]


def message_id_text(message_id: Any) -> str:
    """A pulsar ``MessageId`` as the trace writes it: ``ledger:entry:partition:batch_index``."""
    return format_msg_id(
        message_id.ledger_id(), message_id.entry_id(), message_id.partition(), message_id.batch_index()
    )


class TraceRecorder:
    """One trace: the writer, the topic and subscription it is about, and wrappers that record into it."""

    def __init__(self, writer: TraceWriter, *, topic: str, subscription: str) -> None:
        self.writer = writer
        self.topic = topic
        self.subscription = subscription
        self._ended = False

    # the surface keyshared_check() reads
    @property
    def header(self) -> Any:
        return self.writer.header

    @property
    def events(self) -> Any:
        return self.writer.events

    @property
    def path(self) -> Any:
        return self.writer.path

    def record(self, op: Op | str, **fields: Any) -> Any:
        """Record any event by hand (``fault`` for a fault your test injects, say)."""
        return self.writer.record(op, **fields)

    def producer(self, producer: Any, *, name: str | None = None) -> RecordingProducer:
        """Wrap a ``pulsar.Producer``; ``name`` defaults to ``producer.producer_name()``."""
        return RecordingProducer(self, producer, name or str(producer.producer_name()))

    def consumer(
        self,
        consumer: Any,
        handle: str,
        *,
        key_shared_mode: str = "AUTO_SPLIT",
        allow_out_of_order_delivery: bool = False,
        sticky_ranges: list[tuple[int, int]] | None = None,
        receiver_queue: int = 1000,
    ) -> RecordingConsumer:
        """Wrap a subscribed ``pulsar.Consumer`` as consumer ``handle`` (its ``open`` is recorded now)."""
        self.writer.record(
            Op.OPEN,
            topic=self.topic,
            subscription=self.subscription,
            consumer=handle,
            result="ok",
            name=str(consumer.consumer_name()),
            policy={
                "key_shared_mode": key_shared_mode,
                "allow_out_of_order_delivery": allow_out_of_order_delivery,
                "sticky_ranges": [list(r) for r in sticky_ranges] if sticky_ranges else None,
            },
            receiver_queue=receiver_queue,
        )
        return RecordingConsumer(self, consumer, handle)

    def end(self, *, drained: bool) -> None:
        """Mark the run over; ``drained=True`` says every message was received and acknowledged (or should
        have been), which lets the checker judge ``undelivered``."""
        if not self._ended:
            self.writer.record(Op.END, topic=self.topic, subscription=self.subscription, drained=drained)
            self._ended = True

    def close(self) -> None:
        self.writer.close()


class RecordingProducer:
    """A ``pulsar.Producer`` whose ``send`` records a ``publish`` event; anything else passes through."""

    def __init__(self, recorder: TraceRecorder, producer: Any, name: str) -> None:
        self._recorder = recorder
        self._producer = producer
        self.name = name
        self._lock = threading.Lock()
        self._counter = itertools.count(1)

    def send(
        self,
        content: bytes,
        properties: Mapping[str, str] | None = None,
        partition_key: str | None = None,
        ordering_key: str | None = None,
        **kwargs: Any,
    ) -> Any:
        """Send synchronously and record the outcome (``ok`` with the message id, or ``fail``)."""
        with self._lock:  # one send at a time: the predicted sequence id is the one the client assigns
            seq = kwargs.get("sequence_id") or int(self._producer.last_sequence_id()) + 1
            key = ordering_key or partition_key or f"{self.name}-{seq}"
            uid = f"{self.name}:{next(self._counter)}"
            props = {**(properties or {}), PROP_UID: uid, PROP_SEQ: str(seq), PROP_KEY: key}
            t0 = time.monotonic_ns()
            try:
                message_id = self._producer.send(
                    content, properties=props, partition_key=partition_key, ordering_key=ordering_key, **kwargs
                )
            except Exception as exc:
                self._recorder.writer.record(
                    Op.PUBLISH, topic=self._recorder.topic, producer=self.name, key=key, seq=seq, uid=uid,
                    result="info" if type(exc).__name__ == "Timeout" else "fail", t0=t0,
                    error=f"{type(exc).__name__}: {exc}",
                )  # fmt: skip
                raise
            self._recorder.writer.record(
                Op.PUBLISH, topic=self._recorder.topic, producer=self.name, key=key, seq=seq, uid=uid,
                msg_id=message_id_text(message_id), result="ok", t0=t0,
                partition_key=partition_key, ordering_key=ordering_key,
            )  # fmt: skip
            return message_id

    def __getattr__(self, name: str) -> Any:
        return getattr(self._producer, name)


class RecordingConsumer:
    """A ``pulsar.Consumer`` whose receive, acknowledgements and close are recorded as consumer ``handle``."""

    def __init__(self, recorder: TraceRecorder, consumer: Any, handle: str) -> None:
        self._recorder = recorder
        self._consumer = consumer
        self.handle = handle

    def _fields(self, message: Any) -> dict[str, Any]:
        props = dict(message.properties())
        seq = props.get(PROP_SEQ)
        return {
            "topic": self._recorder.topic,
            "subscription": self._recorder.subscription,
            "consumer": self.handle,
            "key": delivery_key(message.ordering_key() or None, message.partition_key() or None, props, None),
            "msg_id": message_id_text(message.message_id()),
            "uid": props.get(PROP_UID),
            "seq": int(seq) if seq and seq.isdigit() else None,
        }

    def receive(self, timeout_millis: int | None = None) -> Any:
        message = self._consumer.receive(timeout_millis) if timeout_millis is not None else self._consumer.receive()
        self._recorder.writer.record(
            Op.RECEIVE, redelivery_count=int(message.redelivery_count()), **self._fields(message)
        )
        return message

    def acknowledge(self, message: Any) -> None:
        self._recorder.writer.record(Op.ACK, **self._fields(message))
        self._consumer.acknowledge(message)

    def negative_acknowledge(self, message: Any) -> None:
        self._recorder.writer.record(Op.NACK, **self._fields(message))
        self._consumer.negative_acknowledge(message)

    def redeliver_unacknowledged_messages(self) -> None:
        self._recorder.writer.record(
            Op.REDELIVER, topic=self._recorder.topic, subscription=self._recorder.subscription, consumer=self.handle
        )
        self._consumer.redeliver_unacknowledged_messages()

    def close(self) -> None:
        self._recorder.writer.record(
            Op.CLOSE, topic=self._recorder.topic, subscription=self._recorder.subscription, consumer=self.handle
        )
        self._consumer.close()
        self._recorder.writer.record(  # the close completed: the broker no longer has this consumer
            Op.CLOSED, topic=self._recorder.topic, subscription=self._recorder.subscription, consumer=self.handle
        )

    def __getattr__(self, name: str) -> Any:
        return getattr(self._consumer, name)
