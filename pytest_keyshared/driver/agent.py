"""A consumer's application logic: what it does with each message, decided without I/O or a clock.

The same :class:`ConsumerAgent` runs in a thread against a real broker and is stepped on the simulated clock
against the model; only the scheduling differs.  The agent returns :class:`Action` values; the caller records
each one in the trace and *then* makes the client call (the recording discipline of ``docs/architecture.md``
§4), so the agent never touches the trace or the client itself.
"""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass

from conformance.scenarios import Behaviour
from pytest_keyshared.driver.handles import Delivery

__all__ = ["ACK_TIMEOUT_MARGIN_MS", "Action", "ConsumerAgent"]

#: how long before the client's ack timeout can fire the driver records it (``ConsumerAgent.expired``): the
#: client starts timing a message inside ``receive``, a little before the driver logs the receive, and the
#: consumer's thread looks at due work only between receives (each bounded by the poll interval)
ACK_TIMEOUT_MARGIN_MS = 1_000


@dataclass(frozen=True, slots=True)
class Action:
    """``ack`` or ``nack`` one delivery."""

    op: str
    delivery: Delivery


class ConsumerAgent:
    """Held messages, scheduled acks, the behaviour, and whether the application is paused or draining."""

    def __init__(self, name: str, behaviour: Behaviour, *, paused: bool = False, ack_timeout_ms: int = 0) -> None:
        self.name = name
        self.ack_timeout_ms = ack_timeout_ms
        self.behaviour = behaviour
        self.paused = paused
        self.draining = False
        self.received = 0
        #: id(delivery) -> delivery, in receive order (a dict: a slow consumer holds thousands, forgets any one)
        self._held: dict[int, Delivery] = {}
        #: (due_ns, delivery) for ack_after, in receive order; an entry whose delivery is no longer held is stale
        #: and skipped when it comes first (each delivery is its own object, held by this entry while here)
        self._due: deque[tuple[int, Delivery]] = deque()
        #: (release_ns, delivery) for the client's ack timeout, in receive order; stale entries as in ``_due``
        self._expiry: deque[tuple[int, Delivery]] = deque()
        #: ``alternate``: uids received so far (a uid seen again is acknowledged) and first receipts counted
        self._seen: set[str] = set()
        self._firsts = 0

    @property
    def held(self) -> tuple[Delivery, ...]:
        return tuple(self._held.values())

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
        if kind == "alternate":
            uid = delivery.uid or delivery.msg_id
            if uid in self._seen:
                return [Action("ack", delivery)]
            self._seen.add(uid)
            self._firsts += 1
            if self._firsts % 2 == 1:
                return [Action("ack", delivery)]
        self._held[id(delivery)] = delivery
        if kind == "ack_after":
            self._due.append((now_ns + self.behaviour.delay_ms * 1_000_000, delivery))
        if self.ack_timeout_ms:
            margin = min(ACK_TIMEOUT_MARGIN_MS, self.ack_timeout_ms // 10)
            self._expiry.append((now_ns + (self.ack_timeout_ms - margin) * 1_000_000, delivery))
        return []

    def expired(self, now_ns: int) -> list[Delivery]:
        """Held messages the client's ack timeout may send back from now on; they are no longer held.

        The client redelivers a message no sooner than ``ack_timeout_ms`` after the application received it;
        this answers it ``ACK_TIMEOUT_MARGIN_MS`` (a tenth of the timeout at most) earlier, so the release is
        in the trace before any copy it brings back.
        """
        expiry, held = self._expiry, self._held
        out: list[Delivery] = []
        while expiry:
            due, delivery = expiry[0]
            if held.get(id(delivery)) is not delivery:
                expiry.popleft()  # acknowledged, nacked or dropped meanwhile
                continue
            if due > now_ns:
                break
            expiry.popleft()
            del held[id(delivery)]
            out.append(delivery)
        return out

    def _skip_stale(self) -> None:
        due, held = self._due, self._held
        while due and held.get(id(due[0][1])) is not due[0][1]:
            due.popleft()

    def next_due_ns(self) -> int | None:
        self._skip_stale()
        return self._due[0][0] if self._due else None

    def due(self, now_ns: int) -> list[Action]:
        """Acks whose delay has passed (``ack_after``)."""
        actions: list[Action] = []
        self._skip_stale()
        while self._due and self._due[0][0] <= now_ns:
            _, delivery = self._due.popleft()
            del self._held[id(delivery)]
            actions.append(Action("ack", delivery))
            self._skip_stale()
        return actions

    def take_held(self, op: str, count: int | None = None) -> list[Action]:
        """``op`` (ack or nack) for the oldest ``count`` held messages, or all; they are no longer held."""
        held = self._held
        if count is None or count < 0:
            chosen = list(held.values())[:count]
        else:
            chosen = list(itertools.islice(held.values(), count))
        for delivery in chosen:
            del held[id(delivery)]  # its due entry, if any, is stale from now on
        return [Action(op, d) for d in chosen]

    def drop_held(self) -> list[Delivery]:
        """Forget every held message without acting (after ``redeliver``: the broker takes them back)."""
        dropped = list(self._held.values())
        self._held.clear()
        self._due.clear()
        self._expiry.clear()
        return dropped

    def set_behaviour(self, behaviour: Behaviour) -> None:
        """Applies to messages received from now on; held messages stay held (see :meth:`take_held`)."""
        self.behaviour = behaviour

    def start_drain(self) -> list[Action]:
        """The drain phase: resume, acknowledge everything held, and acknowledge every later message at once."""
        self.draining = True
        self.paused = False
        return self.take_held("ack")
