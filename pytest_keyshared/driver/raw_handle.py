"""The driver's producer handle over the raw protocol producer (:mod:`.raw_producer`), for a real broker.

A scenario producer that sends some batch with its highest sequence id (``publish`` with ``highest_sequence_id``)
is this handle for the whole run: the broker allows one producer per name, so its other messages go through it
too, each alone under the driver's id.  Outcomes are the driver's :class:`SendOutcome`: ``ok`` with the entry's
id (each message of a batch at its batch index; ``-1:-1`` for a duplicate), ``fail`` on the broker's SEND_ERROR,
``info`` when no receipt came within the send timeout or the connection broke (the write may have happened).
"""

from __future__ import annotations

from collections.abc import Callable

from pytest_keyshared.driver import wire
from pytest_keyshared.driver.handles import OutgoingMessage, SendCallback, SendOutcome, format_msg_id
from pytest_keyshared.driver.raw_producer import RawProducer, RawReceipt

__all__ = ["RawProducerHandle"]


def _single(message: OutgoingMessage) -> wire.OutgoingSingle:
    return wire.OutgoingSingle(message.payload, message.seq, message.partition_key, dict(message.properties))


class RawProducerHandle:
    """A :class:`~pytest_keyshared.driver.handles.ProducerHandle` that can also send a batch with its ids."""

    def __init__(
        self,
        service_url: str,
        topic: str,
        name: str,
        *,
        send_timeout_ms: int,
        clock: Callable[[], int],
        open_timeout_s: float,
    ) -> None:
        self.name = name
        self._clock = clock
        self._timeout_s = (send_timeout_ms or 30_000) / 1000
        self.created_t0 = clock()
        self._producer = RawProducer.open(service_url, topic, name, timeout_s=open_timeout_s)
        self.answered_sequence_id = self._producer.last_sequence_id

    @staticmethod
    def _outcome(receipt: RawReceipt, batch_index: int, t0: int) -> SendOutcome:
        if receipt.result == "ok":
            return SendOutcome("ok", format_msg_id(receipt.ledger, receipt.entry, -1, batch_index), t0=t0)
        return SendOutcome(receipt.result, error=receipt.error, t0=t0)

    def send(self, message: OutgoingMessage) -> SendOutcome:
        t0 = self._clock()
        single = [_single(message)]
        receipt = self._producer.send(
            single, sequence_id=message.seq, highest_sequence_id=None, batch=False, timeout_s=self._timeout_s
        )
        return self._outcome(receipt, -1, t0)

    def send_ids(
        self, messages: list[OutgoingMessage], *, sequence_id: int, highest_sequence_id: int, timeout_s: float
    ) -> list[SendOutcome]:
        """``messages`` as one batch with these ids; one receipt answers them all."""
        t0 = self._clock()
        receipt = self._producer.send(
            [_single(m) for m in messages],
            sequence_id=sequence_id,
            highest_sequence_id=highest_sequence_id,
            batch=True,
            timeout_s=min(timeout_s, self._timeout_s),
        )
        return [self._outcome(receipt, index, t0) for index in range(len(messages))]

    def send_batch(
        self,
        messages: list[OutgoingMessage],
        on_done: SendCallback,
        timeout_s: float,
        between: Callable[[], None] | None = None,
    ) -> bool:
        """Not batched by a client here: each message alone, in order (the loader keeps raw producers unbatched)."""
        done = True
        for index, message in enumerate(messages):
            if index and between is not None:
                between()
            outcome = self.send(message)
            on_done(message, outcome)
            done = done and outcome.result != "info"
        return done

    def is_connected(self) -> bool:
        return self._producer.connected

    def close(self) -> None:
        self._producer.close()
