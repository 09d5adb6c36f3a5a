"""Writes the trace in the order and with the fields the checkers rely on, and keeps the run's counters.

One method per event kind, so the recording discipline lives in one place: ``receive`` after the client
returned a message (and after any client reconnect it could follow, see :mod:`.client_log`); ``ack``,
``nack``, ``redeliver``, ``close``, ``crash`` and ``fault`` before the client call; ``open`` and ``publish``
once their outcome is known.  The counters (per-consumer receives, acked and published uids, the time of the
last receive) are updated under the writer's lock, in trace order, and feed the bounded waits, the drain and
progress reports.

The frequent events (publish, receive, ack, nack) go through :meth:`TraceWriter.emit` and the counters read
rows (:mod:`conformance.trace.rows`): against a real broker this runs in the threads that drive the clients,
and no :class:`~conformance.trace.Event` is made there unless something listens for one.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from conformance.trace import Event, Op, Result, TraceWriter
from conformance.trace.identity import MSG_ID_RE, canonical_message
from conformance.trace.rows import Row
from pytest_keyshared.driver.handles import ConsumerSpec, Delivery, OutgoingMessage, SendOutcome

__all__ = ["Counters", "Recorder"]

#: Op and Result values, as :meth:`TraceWriter.emit` takes them (an enum's ``.value`` costs a descriptor call).
_RECEIVE, _ACK, _NACK, _PUBLISH = Op.RECEIVE.value, Op.ACK.value, Op.NACK.value, Op.PUBLISH.value
#: Events after which a consumer holds nothing: it left, or asked for all it held again.
_RELEASES_ALL = frozenset((Op.CLOSE.value, Op.CRASH.value, Op.REDELIVER.value))
_RESULTS = frozenset(r.value for r in Result)


@dataclass(frozen=True, slots=True)
class Counters:
    """A consistent snapshot of the run so far."""

    published_ok: int
    published_info: int
    published_fail: int
    received: int
    acked: int
    expected_uids: int  #: distinct uids published ok (what the drain waits for)
    acked_expected: int  #: of those, how many were acknowledged at least once
    last_receive_ns: int
    events: int
    #: second copies of a uid stored under another message id (a resend with deduplication off) not yet
    #: acknowledged: the broker owes each copy to the subscription, so the drain waits for them too
    unacked_copies: int = 0

    @property
    def all_acknowledged(self) -> bool:
        """Every message stored was acknowledged: each uid, and each second copy of one (what the drain waits for)."""
        return self.acked_expected >= self.expected_uids and not self.unacked_copies


def non_persistent_id(msg_id: str | None, seq: int | None) -> str | None:
    """The trace's name of a message of a non-persistent topic: ``0:<seq>:<partition>:-1``.

    The broker gives every message there the id ``0:0`` (``NonPersistentTopic.publishMessage`` completes each send
    with ledger 0, entry 0, and dispatches ``Entry`` 0:0), so the id tells no two messages apart; the run's one
    producer numbers its messages 1, 2, ... in send order, which is the topic's order, so the sequence id takes the
    entry's place (``docs/trace-format.md``, "Non-persistent topics"). ``None`` stays ``None`` (a send without a
    receipt), and a message without a sequence id keeps the id it came with."""
    if msg_id is None or seq is None:
        return msg_id
    parts = msg_id.split(":")
    partition = parts[2] if len(parts) > 2 else "-1"
    return f"0:{seq}:{partition}:-1"


def _message(topic: str | None, msg_id: str | None) -> str | None:
    """The message key (topic partition and canonical id) of a recorded id, None when the row has none."""
    if topic is None or msg_id is None or not MSG_ID_RE.match(msg_id):
        return None
    return canonical_message(topic, msg_id)[0]


class Recorder:
    def __init__(self, writer: TraceWriter, topic: str, subscription: str, *, non_persistent: bool = False) -> None:
        self.writer = writer
        self.topic = topic
        self.subscription = subscription
        #: a non-persistent topic: message ids are named by :func:`non_persistent_id`, the client's in ``broker_msg_id``
        self.non_persistent = non_persistent
        self._lock = threading.Lock()
        self._published: Counter[str] = Counter()
        self._ok_uids: set[str] = set()
        self._acked_uids: set[str] = set()
        self._received_by: Counter[str] = Counter()
        self._received = 0
        self._acked = 0
        self._acked_expected = 0  # |ok_uids & acked_uids|, kept up to date event by event
        self._last_receive_ns = 0
        #: uid -> the message id of its first copy stored, and the ids of later copies not yet acknowledged
        self._first_id: dict[str, str] = {}
        self._copies: set[str] = set()
        self._acked_ids: set[str] = set()  #: message ids acknowledged (a copy's ack may precede its receipt)
        #: uid -> the consumer holding it (received, not acknowledged or released since), and its reverse
        self._holder: dict[str, str] = {}
        self._holds: dict[str, set[str]] = {}
        #: Called with the consumer's handle before its ``receive`` is recorded (the client-log watch records
        #: reconnect faults first).
        self.before_receive: Callable[[str], object] | None = None
        writer.add_row_listener(self._observe)

    # --- counters ---------------------------------------------------------------------------------------

    def _observe(self, row: Row) -> None:
        """Count one event (a row: ``i, t, op, topic, subscription, consumer, producer, key, msg_id, seq, uid,
        result, ...``)."""
        with self._lock:
            op = row[2]
            if op == "receive":
                self._received += 1
                self._received_by[row[5] or ""] += 1
                self._last_receive_ns = row[1]
                self._hold(row[10], row[5] or "")
            elif op == "ack" or op == "dead_letter":  # a dead letter: the client acknowledged the original
                self._acked += op == "ack"
                uid = row[10]
                self._release(uid)
                mid = _message(row[3], row[8])
                if mid is not None:
                    self._acked_ids.add(mid)
                    self._copies.discard(mid)
                if uid is not None and uid not in self._acked_uids:
                    self._acked_uids.add(uid)
                    self._acked_expected += uid in self._ok_uids
            elif op == "publish":
                result = row[11] or "ok"
                self._published[result] += 1
                uid = row[10]
                if result == "ok" and uid is not None and uid not in self._ok_uids:
                    self._ok_uids.add(uid)  # a batch receipt may come after the message was acked
                    self._acked_expected += uid in self._acked_uids
                if result == "ok" and uid is not None and not self.non_persistent:
                    self._stored_copy(uid, row[3], row[8])
            elif op == _NACK:
                self._release(row[10])
            elif op in _RELEASES_ALL:
                for uid in self._holds.pop(row[5] or "", set()):
                    del self._holder[uid]

    def _stored_copy(self, uid: str, topic: str | None, msg_id: str | None) -> None:
        """A receipt of ``uid`` stored at ``msg_id``: a copy under another id than its first is another message
        the subscription is owed (``undelivered`` judges message ids), so the drain waits for its ack too."""
        if msg_id is None or msg_id.startswith("-1:"):
            return  # no receipt id, or a duplicate's (-1:-1): nothing stored
        mid = _message(topic, msg_id)
        if mid is None:
            return
        first = self._first_id.setdefault(uid, mid)
        if first != mid and mid not in self._acked_ids:
            self._copies.add(mid)

    def _hold(self, uid: str | None, consumer: str) -> None:
        if uid is None:
            return
        self._release(uid)
        self._holder[uid] = consumer
        self._holds.setdefault(consumer, set()).add(uid)

    def _release(self, uid: str | None) -> None:
        holder = self._holder.pop(uid, None) if uid is not None else None
        if holder is not None:
            self._holds[holder].discard(uid)

    def counters(self) -> Counters:
        with self._lock:
            return Counters(
                published_ok=self._published["ok"],
                published_info=self._published["info"],
                published_fail=self._published["fail"],
                received=self._received,
                acked=self._acked,
                expected_uids=self._expected_uids(),
                acked_expected=self._acked_expected,
                last_receive_ns=self._last_receive_ns,
                events=self.writer.count,
                unacked_copies=len(self._copies),
            )

    def _expected_uids(self) -> int:
        """Logical messages stored (``ok``), counted once each; called under the lock."""
        return len(self._ok_uids)

    def received_by(self, consumer: str | None) -> int:
        with self._lock:
            return self._received if consumer is None else self._received_by[consumer]

    def owed(self) -> int:
        """Messages published ok that are neither acknowledged nor held by a consumer still open: what the broker
        still has to deliver (``wait_delivered``)."""
        with self._lock:
            holder, acked = self._holder, self._acked_uids
            return sum(1 for uid in self._ok_uids if uid not in acked and uid not in holder)

    def all_acked(self) -> bool:
        with self._lock:
            return self._acked_expected == len(self._ok_uids)

    # --- events -----------------------------------------------------------------------------------------

    def open(
        self, handle: str, spec: ConsumerSpec, *, ok: bool, error: str | None = None, t0: int | None = None
    ) -> Event:
        """The subscribe's outcome; ``t0``: when it was sent (a refused one is judged from it: refused_open)."""
        return self.writer.record(
            Op.OPEN,
            topic=self.topic,
            subscription=self.subscription,
            consumer=handle,
            result="ok" if ok else "fail",
            name=spec.name,
            policy=spec.policy(),
            receiver_queue=spec.receiver_queue,
            ack_timeout_ms=spec.ack_timeout_ms or None,
            error=error,
            t0=t0,
        )

    def receive(self, handle: str, d: Delivery) -> None:
        hook = self.before_receive
        if hook is not None:
            hook(handle)
        # an event time is recorded only when the message carries one (the harness sends none: wrong_event_time)
        timed = {"event_time": d.event_time} if d.event_time else None
        if self.non_persistent:
            self.writer.emit(
                _RECEIVE, self.topic, self.subscription, handle, d.producer, d.key, non_persistent_id(d.msg_id, d.seq),
                d.seq, d.uid, None, d.redelivery_count, {"broker_msg_id": d.msg_id, **(timed or {})},
            )  # fmt: skip
            return
        self.writer.emit(
            _RECEIVE, self.topic, self.subscription, handle, d.producer, d.key, d.msg_id, d.seq, d.uid, None,
            d.redelivery_count, timed,
        )  # fmt: skip

    def _msg_id(self, d: Delivery) -> str:
        return (non_persistent_id(d.msg_id, d.seq) or d.msg_id) if self.non_persistent else d.msg_id

    def ack(self, handle: str, d: Delivery) -> None:
        self.writer.emit(_ACK, self.topic, self.subscription, handle, None, d.key, self._msg_id(d), None, d.uid)

    def nack(self, handle: str, d: Delivery) -> None:
        self.writer.emit(_NACK, self.topic, self.subscription, handle, None, d.key, self._msg_id(d), None, d.uid)

    def ack_timeout(self, handle: str, d: Delivery) -> None:
        """The client's ack timeout may release ``d`` from now on: a ``nack`` with ``cause = "ack_timeout"``.

        The client's ``UnAckedMessageTracker`` sends ``RedeliverUnacknowledgedMessages`` for the timed-out ids,
        the very command a negative ack sends, so the checkers read it as the holder's nack of ``d``.
        """
        self.writer.emit(
            _NACK, self.topic, self.subscription, handle, None, d.key, self._msg_id(d), None, d.uid, None, None,
            {"cause": "ack_timeout"},
        )  # fmt: skip

    def membership(self, op: Op, handle: str, **extra: Any) -> Event:
        """``close``, ``closed`` (the close returned), ``crash``, ``redeliver`` or ``gone`` of one consumer."""
        return self.writer.record(op, topic=self.topic, subscription=self.subscription, consumer=handle, **extra)

    def publish(
        self,
        producer: str,
        message: OutgoingMessage,
        outcome: SendOutcome,
        *,
        send_ids: tuple[int, int] | None = None,
        last_seq: int | None = None,
        size: int | None = None,
        step: int | None = None,
    ) -> None:
        """A send's outcome; ``send_ids`` ``(sequence_id, highest_sequence_id)`` of a batch sent with its highest id
        (``send_seq``, ``highest_seq`` on the event: the ids the broker judged the send by); ``last_seq`` the
        client's last published sequence id right after the receipt (``last_seq``: judged, ``wrong_sequence_id``;
        for a message of a batch, its batch's last id); ``size`` the payload's bytes of a message the client batched
        (``bytes``: judged, ``oversized_batch``); ``step`` the index of the publish step that spaced its sends
        (``spacing_ms``: judged, ``batch_flushed_early``)."""
        extra: dict[str, Any] = {"t0": outcome.t0}
        if size is not None:
            extra["bytes"] = size
        if step is not None:
            extra["step"] = step
        if last_seq is not None and outcome.result == "ok":
            extra["last_seq"] = last_seq
        if send_ids is not None:
            extra["send_seq"], extra["highest_seq"] = send_ids
        if message.partition_key is not None:
            extra["partition_key"] = message.partition_key
        if message.ordering_key is not None:
            extra["ordering_key"] = message.ordering_key
        if message.deliver_after_ms:
            extra["deliver_after_ms"] = message.deliver_after_ms
        if outcome.error is not None:
            extra["error"] = outcome.error
        result = outcome.result
        if result not in _RESULTS:
            result = Result(result).value  # raises, naming the bad value
        msg_id = outcome.msg_id
        if self.non_persistent and msg_id is not None:
            extra["broker_msg_id"] = msg_id
            msg_id = non_persistent_id(msg_id, message.seq)
        self.writer.emit(
            _PUBLISH, self.topic, None, None, producer, message.key, msg_id, message.seq, message.uid, result,
            None, extra,
        )  # fmt: skip

    def producer_open(self, producer: str, t0: int, answered: int) -> Event:
        """Producer ``producer`` was created; the broker answered ``answered`` as its last sequence id."""
        return self.writer.record(
            Op.PRODUCER_OPEN, topic=self.topic, producer=producer, seq=answered, result="ok", t0=t0
        )

    def producer_close(self, producer: str, t0: int) -> Event:
        """Producer ``producer``'s close, called at ``t0``, returned: the broker no longer has it (the deduplication
        purge's clock)."""
        return self.writer.record(Op.PRODUCER_CLOSE, topic=self.topic, producer=producer, result="ok", t0=t0)

    def dead_letter(self, topic: str, msg_id: str, d: Delivery, dead_letter_topic: str) -> Event:
        """The reader of the dead-letter topic got ``d``, the copy of ``msg_id`` of ``topic`` (the original)."""
        return self.writer.record(
            Op.DEAD_LETTER,
            topic=topic,
            subscription=self.subscription,
            key=d.key,
            msg_id=msg_id,
            uid=d.uid,
            dead_letter_topic=dead_letter_topic,
            dead_letter_msg_id=d.msg_id,
        )

    def fault(self, fault: str, **extra: Any) -> Event:
        return self.writer.record(Op.FAULT, topic=self.topic, fault=fault, **extra)

    def end(self, *, drained: bool, **extra: Any) -> Event:
        return self.writer.record(Op.END, topic=self.topic, subscription=self.subscription, drained=drained, **extra)
