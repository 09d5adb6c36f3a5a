"""Reading the dead-letter topic of a run whose consumers have a dead-letter policy (``[settings] dead_letter``).

The client routes a message it would hand over for the ``max_redeliver_count + 1``-th redelivery to the
dead-letter topic and acknowledges the original, without the application seeing it, so the trace would show
it lost (``undelivered``).  :class:`DeadLetterWatch` reads consumers of that topic (of a partitioned topic's
run: of each partition's dead-letter topic), opened before the first step; it
is polled after every step and during the drain: each copy it gets is recorded as a ``dead_letter`` event
naming the original (the ``REAL_TOPIC`` and ``ORIGIN_MESSAGE_ID`` properties the client sets), then
acknowledged.  Every wait is bounded: a poll takes what has arrived, each receive waiting a few milliseconds.
"""

from __future__ import annotations

import contextlib
import re
from typing import Any

from pytest_keyshared.driver.handles import delivery_from_message, format_msg_id
from pytest_keyshared.driver.recorder import Recorder

__all__ = ["DeadLetterWatch", "origin_msg_id"]

#: the C++ client writes ``(ledger,entry,partition,batch)``; the Java client ``ledger:entry:partition[:batch]``
_ORIGIN = re.compile(r"^\(?(-?\d+)[,:](-?\d+)[,:](-?\d+)(?:[,:](-?\d+))?\)?$")
_POLL_MS = 5  #: how long one receive of a poll waits
_POLL_MAX = 1000  #: messages taken by one poll at most


def origin_msg_id(text: str | None) -> str | None:
    """``ORIGIN_MESSAGE_ID`` as a trace message id, or None when it is not one."""
    match = _ORIGIN.match(text.strip()) if isinstance(text, str) else None
    if match is None:
        return None
    ledger, entry, partition, batch = (int(g) if g is not None else -1 for g in match.groups())
    return format_msg_id(ledger, entry, partition, batch)


class DeadLetterWatch:
    """The run's reader of its dead-letter topic (see the module)."""

    def __init__(self, readers: list[tuple[Any, str]], recorder: Recorder) -> None:
        self.readers = readers  #: (consumer, the dead-letter topic it reads), one per dead-letter topic
        self.recorder = recorder
        self.unreadable: list[str] = []  #: copies without a usable ``ORIGIN_MESSAGE_ID`` (noted by the run)

    def poll(self) -> int:
        """Record and acknowledge what has arrived, reader after reader; returns how many copies."""
        return sum(self._poll(consumer, topic) for consumer, topic in self.readers)

    def _poll(self, consumer: Any, topic: str) -> int:
        taken = 0
        while taken < _POLL_MAX:
            msg = self._receive(consumer)
            if msg is None:
                break
            taken += 1
            props = msg.properties() or {}
            d = delivery_from_message(msg)
            origin = origin_msg_id(props.get("ORIGIN_MESSAGE_ID"))
            if origin is None:
                self.unreadable.append(d.msg_id)
            else:
                self.recorder.dead_letter(props.get("REAL_TOPIC") or self.recorder.topic, origin, d, topic)
            with contextlib.suppress(Exception):
                consumer.acknowledge(msg)
        return taken

    @staticmethod
    def _receive(consumer: Any) -> Any:
        try:
            return consumer.receive(timeout_millis=_POLL_MS)
        except Exception as exc:  # pulsar.Timeout: nothing arrived
            if type(exc).__name__ == "Timeout":
                return None
            raise

    def close(self) -> None:
        for consumer, _topic in self.readers:
            with contextlib.suppress(Exception):
                consumer.close()
