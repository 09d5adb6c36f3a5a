"""Helpers for the model's scenario tests: an application that receives and acks, and what it observed.

``App`` wraps a broker's consumers the way a test application would use them, and records what it saw so a test
can assert on the two Key_Shared promises:

* **ordering**: per key, a message never arrives after a *later* message of the same key arrived, unless it is a
  copy of one already seen (redelivery duplicates are allowed, as in Pulsar's ``OrderingAfterReconnects``);
* **exclusivity**: a consumer never receives a key while another consumer holds an unacknowledged message of it.

``regressions`` also records copies: a message that arrives after a later message of its key arrived, although it
was never acknowledged (a consumer processes the key's messages out of order even though it is a redelivery).
Consumers are told apart by name and id (``name#id``), so same-name consumers are distinct holders.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from reference_model.broker import ModelBroker, ModelConsumer, ModelMessage
from reference_model.selectors import ConsumerRef


@dataclass
class App:
    broker: ModelBroker
    order_violations: list[str] = field(default_factory=list)
    overlap_violations: list[str] = field(default_factory=list)
    received: dict[str, list[tuple[str, int]]] = field(default_factory=dict)  # consumer -> [(key, index)]
    regressions: list[str] = field(default_factory=list)
    _max_index: dict[str, int] = field(default_factory=dict)
    _seen: set[tuple[str, int]] = field(default_factory=set)
    _acked: set[tuple[str, int]] = field(default_factory=set)
    _held: dict[str, dict[str, int]] = field(default_factory=dict)  # key -> consumer -> unacked count

    def take(self, consumer: ModelConsumer, timeout_ms: int = 0) -> ModelMessage | None:
        """Receive one message and check it against what was seen before."""
        msg = consumer.receive(timeout_ms)
        if msg is None:
            return None
        key = msg.partition_key() or msg.ordering_key()
        index = int(msg.data())
        name = consumer.consumer_name()
        holder = f"{name}#{consumer.consumer_id}"
        self.received.setdefault(name, []).append((key, index))
        latest = self._max_index.get(key, -1)
        if (key, index) not in self._seen:
            if index < latest:
                self.order_violations.append(f"{holder} got {key}#{index} after #{latest}")
            self._seen.add((key, index))
        elif index < latest and (key, index) not in self._acked:
            self.regressions.append(f"{holder} got {key}#{index} again after #{latest}, never acknowledged")
        self._max_index[key] = max(index, latest)
        name = holder
        holders = self._held.setdefault(key, {})
        others = [c for c, n in holders.items() if n > 0 and c != name]
        if others:
            self.overlap_violations.append(f"{name} got {key}#{index} while {others} held {key}")
        holders[name] = holders.get(name, 0) + 1
        return msg

    def ack(self, consumer: ModelConsumer, msg: ModelMessage) -> None:
        consumer.acknowledge(msg)
        key = msg.partition_key() or msg.ordering_key()
        self._acked.add((key, int(msg.data())))
        holders = self._held.get(key, {})
        name = f"{consumer.consumer_name()}#{consumer.consumer_id}"
        if holders.get(name, 0) > 0:
            holders[name] -= 1

    def forget(self, consumer: ModelConsumer) -> None:
        """The consumer closed or crashed: it holds nothing any more."""
        name = f"{consumer.consumer_name()}#{consumer.consumer_id}"
        for holders in self._held.values():
            holders.pop(name, None)

    def consume(self, consumer: ModelConsumer, n: int | None = None, timeout_ms: int = 0, ack: bool = True) -> int:
        """Receive (and ack) up to ``n`` messages; return how many were received."""
        count = 0
        while n is None or count < n:
            msg = self.take(consumer, timeout_ms)
            if msg is None:
                break
            count += 1
            if ack:
                self.ack(consumer, msg)
        return count

    def drain(self, consumers: Iterable[ModelConsumer], rounds: int = 10_000, timeout_ms: int = 20) -> None:
        """Receive and ack round-robin until a full round brings nothing."""
        live = [c for c in consumers if c.is_connected()]
        for _ in range(rounds):
            got = sum(self.consume(c, n=50, timeout_ms=0) for c in live)
            if got == 0:
                self.broker.advance(timeout_ms)
                if sum(self.consume(c, n=50, timeout_ms=0) for c in live) == 0:
                    return

    def distinct(self) -> set[tuple[str, int]]:
        return set(self._seen)

    def keys_of(self, name: str) -> set[str]:
        return {k for k, _ in self.received.get(name, [])}


def keys_of_consumer(
    broker: ModelBroker, topic: str, subscription: str, consumer: ModelConsumer, n: int, prefix: str = "key-"
) -> list[str]:
    """The first ``n`` keys ``prefix0, prefix1, ...`` the subscription's selector gives ``consumer`` now."""
    sub = broker.subscription(topic, subscription)
    assert sub is not None and sub.dispatcher is not None
    ref = ConsumerRef(consumer.consumer_name(), consumer.consumer_id)
    out: list[str] = []
    i = 0
    while len(out) < n:
        key = f"{prefix}{i}"
        if sub.dispatcher.selector.select_key(key.encode()) == ref:
            out.append(key)
        i += 1
        assert i < 1_000_000, "no key found"
    return out


def keys_moving_to(
    broker: ModelBroker,
    topic: str,
    subscription: str,
    name: str,
    n: int,
    owner: ModelConsumer | None = None,
    prefix: str = "key-",
) -> list[str]:
    """Keys the *next* consumer to join (named ``name``) will own, optionally only ones ``owner`` owns now."""
    sub = broker.subscription(topic, subscription)
    assert sub is not None and sub.dispatcher is not None
    probe = sub.dispatcher.selector.copy()
    ref = ConsumerRef(name, broker._next_consumer_id)
    probe.add(ref)
    owner_ref = None if owner is None else ConsumerRef(owner.consumer_name(), owner.consumer_id)
    out: list[str] = []
    i = 0
    while len(out) < n:
        key = f"{prefix}{i}".encode()
        if probe.select_key(key) == ref and (owner_ref is None or sub.dispatcher.selector.select_key(key) == owner_ref):
            out.append(key.decode())
        i += 1
        assert i < 1_000_000, "no key found"
    return out
