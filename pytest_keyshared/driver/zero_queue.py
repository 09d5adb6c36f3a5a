"""Bounded receives for a zero-queue consumer (``receiver_queue = 0``) of pulsar-client.

pulsar-client refuses ``receive(timeout_millis=...)`` when the receiver queue is 0 (``InvalidConfiguration``: the
C++ client's ``ConsumerImpl::receiveHelper(msg, timeout)``), and every receive the harness makes is bounded.  Its
blocking ``receive()`` works: each call asks the broker for exactly one message (a ``Flow`` of one permit), and on a
reconnect while it waits the client asks again on the new connection.

:class:`ZeroQueueReceiver` runs that blocking receive in a thread, one call per receive the harness asks for: a
bounded :meth:`ZeroQueueReceiver.receive` that times out leaves its request standing (the broker may still send the
one message asked for, which the next receive returns), so the broker never has more than one message asked for,
as the model's zero-queue consumer.  :meth:`ZeroQueueReceiver.close` closes the consumer, which ends a blocking
receive (``AlreadyClosed``).
"""

from __future__ import annotations

import queue
import threading
from typing import Any

__all__ = ["ZeroQueueReceiver"]

_POLL_S = 0.1  #: how often the thread looks at the stop flag while nothing is asked of it


class ZeroQueueReceiver:
    """The receives of one zero-queue ``pulsar.Consumer`` (see the module)."""

    def __init__(self, consumer: Any) -> None:
        self._consumer = consumer
        self._slot: queue.Queue[Any] = queue.Queue(maxsize=1)  #: the one message received and not yet taken
        self._wanted = threading.Event()  #: a receive is asked for and not yet answered
        self._stop = threading.Event()
        self.error: BaseException | None = None  #: what ended the blocking receive, unless a close did
        self._thread = threading.Thread(target=self._run, name="zero-queue-receive", daemon=True)
        self._thread.start()

    def receive(self, timeout_ms: int) -> Any:
        """The next message, or None after ``timeout_ms`` (the request stands: nothing more is asked)."""
        try:
            return self._slot.get_nowait()
        except queue.Empty:
            pass
        if self.error is not None:
            raise self.error
        self._wanted.set()
        try:
            return self._slot.get(timeout=max(timeout_ms, 0) / 1000) if timeout_ms > 0 else None
        except queue.Empty:
            return None

    def close(self, join_s: float = 2.0) -> None:
        """Stop asking and close the consumer, which ends a blocking receive; the thread is joined (bounded)."""
        self._stop.set()
        try:
            self._consumer.close()
        finally:
            self._thread.join(join_s)

    def _run(self) -> None:
        while not self._stop.is_set():
            if not self._wanted.wait(_POLL_S):
                continue
            try:
                msg = self._consumer.receive()  # blocking: one Flow permit, asked again after a reconnect
            except BaseException as exc:  # AlreadyClosed on close; anything else is reported to the next receive
                if not self._stop.is_set():
                    self.error = exc
                return
            self._wanted.clear()
            self._slot.put(msg)  # the slot is empty: only one receive is ever asked for at a time
