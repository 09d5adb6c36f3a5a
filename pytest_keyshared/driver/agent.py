"""A consumer's application logic: what it does with each message, decided without I/O or a clock.

The same :class:`ConsumerAgent` runs in a thread against a real broker and is stepped on the simulated clock
against the model; only the scheduling differs.  The agent returns :class:`Action` values; the caller records
each one in the trace and *then* makes the client call (the recording discipline of ``docs/architecture.md``
§4), so the agent never touches the trace or the client itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from conformance.scenarios import Behaviour
from pytest_keyshared.driver.handles import Delivery

__all__ = ["Action", "ConsumerAgent"]


@dataclass(frozen=True, slots=True)
class Action:
    """``ack`` or ``nack`` one delivery."""

    op: str
    delivery: Delivery


class ConsumerAgent:
    """Held messages, scheduled acks, the behaviour, and whether the application is paused or draining."""

    def __init__(self, name: str, behaviour: Behaviour, *, paused: bool = False) -> None:
        self.name = name
        self.behaviour = behaviour
        self.paused = paused
        self.draining = False
        self.received = 0
        self._held: list[Delivery] = []  # in receive order
        self._due: list[tuple[int, Delivery]] = []  # (due_ns, delivery) for ack_after, in receive order

    @property
    def held(self) -> tuple[Delivery, ...]:
        return tuple(self._held)

    def on_receive(self, delivery: Delivery, now_ns: int) -> list[Action]:
        self.received += 1
        if self.draining:
            return [Action("ack", delivery)]
        kind = self.behaviour.kind
        if kind == "ack":
            return [Action("ack", delivery)]
        if kind == "nack":
            op = "nack" if delivery.redelivery_count < self.behaviour.nack_times else "ack"
            return [Action(op, delivery)]
        self._held.append(delivery)
        if kind == "ack_after":
            self._due.append((now_ns + self.behaviour.delay_ms * 1_000_000, delivery))
        return []

    def next_due_ns(self) -> int | None:
        return self._due[0][0] if self._due else None

    def due(self, now_ns: int) -> list[Action]:
        """Acks whose delay has passed (``ack_after``)."""
        actions: list[Action] = []
        while self._due and self._due[0][0] <= now_ns:
            _, delivery = self._due.pop(0)
            self._forget(delivery)
            actions.append(Action("ack", delivery))
        return actions

    def take_held(self, op: str, count: int | None = None) -> list[Action]:
        """``op`` (ack or nack) for the oldest ``count`` held messages, or all; they are no longer held."""
        chosen = self._held[: len(self._held) if count is None else count]
        for delivery in chosen:
            self._forget(delivery)
        return [Action(op, d) for d in chosen]

    def drop_held(self) -> list[Delivery]:
        """Forget every held message without acting (after ``redeliver``: the broker takes them back)."""
        dropped = list(self._held)
        self._held.clear()
        self._due.clear()
        return dropped

    def set_behaviour(self, behaviour: Behaviour) -> None:
        """Applies to messages received from now on; held messages stay held (see :meth:`take_held`)."""
        self.behaviour = behaviour

    def start_drain(self) -> list[Action]:
        """The drain phase: resume, acknowledge everything held, and acknowledge every later message at once."""
        self.draining = True
        self.paused = False
        return self.take_held("ack")

    def _forget(self, delivery: Delivery) -> None:
        for i, held in enumerate(self._held):
            if held is delivery:
                del self._held[i]
                break
        for i, (_, due) in enumerate(self._due):
            if due is delivery:
                del self._due[i]
                break
