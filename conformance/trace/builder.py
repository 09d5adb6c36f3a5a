"""Writing small traces by hand: for tests, documentation and reproducing a report.

>>> b = TraceBuilder()
>>> _ = b.open("c1"), b.publish("k", "1:0"), b.receive("c1", "k", "1:0"), b.ack("c1", "1:0"), b.end()
>>> [e.op.value for e in b.events]
['open', 'publish', 'receive', 'ack', 'end']

Indexes are 0, 1, 2, ...; ``t`` advances by ``step`` per event; the topic and subscription default to the
builder's.  A publish gets the next sequence id of its producer and, like a receive, a ``uid`` derived from
the message id unless one is given, so receives match their publishes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conformance.trace.events import Event, Op, Result
from conformance.trace.header import SubscriptionSpec, TraceHeader

__all__ = ["TraceBuilder"]


class TraceBuilder:
    """Appends events with consecutive ``i``; read them from :attr:`events`, or :meth:`write` them."""

    def __init__(
        self,
        header: TraceHeader | None = None,
        *,
        topic: str = "t",
        subscription: str = "s",
        step: int = 10,
        start: int = 1000,
    ) -> None:
        self.header = header or TraceHeader(target="hand-written", subscription=SubscriptionSpec(subscription))
        self.topic = topic
        self.subscription = subscription
        self.step = step
        self.t = start
        self.events: list[Event] = []
        self._seq: dict[str, int] = {}

    def add(self, op: str, **fields: Any) -> Event:
        core = {k: fields.pop(k) for k in list(fields) if k in _CORE}
        if core.get("result") is not None:
            core["result"] = Result(core["result"])
        extra = {k: v for k, v in fields.items() if v is not None}
        event = Event(i=len(self.events), t=self.t, op=Op(op), extra=extra, **core)
        self.events.append(event)
        self.t += self.step
        return event

    @staticmethod
    def uid_of(msg_id: str) -> str:
        return "m" + msg_id

    def open(
        self,
        consumer: str,
        *,
        name: str | None = None,
        subscription: str | None = None,
        result: str = "ok",
        policy: dict[str, Any] | None = None,
        topic: str | None = None,
        t0: int | None = None,
        error: str | None = None,
    ) -> Event:
        return self.add(
            "open",
            consumer=consumer,
            subscription=subscription or self.subscription,
            topic=topic or self.topic,
            result=result,
            name=name,
            policy=policy,
            t0=t0,
            error=error,
        )

    def publish(
        self,
        key: str | None,
        msg_id: str,
        *,
        producer: str = "p",
        seq: int | None = None,
        uid: str | None = None,
        result: str = "ok",
        t0: int | None = None,
        topic: str | None = None,
        send_ids: tuple[int, int] | None = None,
    ) -> Event:
        """A publish receipt; ``send_ids``: ``(sequence_id, highest_sequence_id)`` of the batch it was sent in by the
        raw protocol producer (``send_seq``, ``highest_seq``)."""
        if seq is None:
            seq = self._seq.get(producer, 0)
            self._seq[producer] = seq + 1
        return self.add(
            "publish",
            topic=topic or self.topic,
            producer=producer,
            key=key,
            msg_id=msg_id,
            seq=seq,
            uid=uid or self.uid_of(msg_id),
            result=result,
            t0=self.t - 1 if t0 is None else t0,
            send_seq=None if send_ids is None else send_ids[0],
            highest_seq=None if send_ids is None else send_ids[1],
        )

    def receive(
        self,
        consumer: str,
        key: str | None,
        msg_id: str,
        *,
        uid: str | None = None,
        topic: str | None = None,
        redelivery_count: int | None = None,
    ) -> Event:
        return self.add(
            "receive",
            consumer=consumer,
            topic=topic or self.topic,
            key=key,
            msg_id=msg_id,
            uid=uid or self.uid_of(msg_id),
            redelivery_count=redelivery_count,
        )

    def ack(self, consumer: str, msg_id: str, *, key: str | None = None, topic: str | None = None) -> Event:
        return self.add("ack", consumer=consumer, topic=topic or self.topic, msg_id=msg_id, key=key)

    def nack(self, consumer: str, msg_id: str, *, key: str | None = None, topic: str | None = None) -> Event:
        return self.add("nack", consumer=consumer, topic=topic or self.topic, msg_id=msg_id, key=key)

    def dead_letter(
        self, key: str | None, msg_id: str, *, topic: str | None = None, subscription: str | None = None
    ) -> Event:
        """The reader of the dead-letter topic saw ``msg_id`` of ``topic`` (the original), routed there by a
        consumer of ``subscription``."""
        return self.add(
            "dead_letter",
            topic=topic or self.topic,
            msg_id=msg_id,
            key=key,
            uid=self.uid_of(msg_id),
            subscription=subscription or self.subscription,
        )

    def redeliver(self, consumer: str) -> Event:
        return self.add("redeliver", consumer=consumer)

    def close(self, consumer: str) -> Event:
        return self.add("close", consumer=consumer)

    def closed(self, consumer: str) -> Event:
        return self.add("closed", consumer=consumer)

    def crash(self, consumer: str) -> Event:
        return self.add("crash", consumer=consumer)

    def gone(self, consumer: str) -> Event:
        return self.add("gone", consumer=consumer)

    def fault(self, fault: str = "restart") -> Event:
        return self.add("fault", fault=fault)

    def end(self, drained: bool = True) -> Event:
        return self.add("end", drained=drained)

    def write(self, path: str | Path, *, gzip: bool = False) -> Path:
        """Write header and events as JSON Lines (gzip when ``gzip`` or the name ends in ``.gz``)."""
        import gzip as gz

        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        text = "\n".join([self.header.to_json(), *(e.to_json() for e in self.events)]) + "\n"
        if gzip or out.suffix == ".gz":
            out.write_bytes(gz.compress(text.encode("utf-8"), mtime=0))
        else:
            out.write_text(text, encoding="utf-8")
        return out


_CORE = frozenset(
    {"topic", "subscription", "consumer", "producer", "key", "msg_id", "seq", "uid", "result", "redelivery_count",
     "drained"}
)  # fmt: skip
