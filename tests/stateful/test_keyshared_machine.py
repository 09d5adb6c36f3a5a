"""Stateful property tests of the PIP-379 model (Hypothesis ``RuleBasedStateMachine``).

For any sequence of publishes, joins, leaves, crashes, receives, acks, negative acks and time passing:

* **exclusivity** (after every step): no key is pending at two consumers of the subscription;
* **ordering** (after every step): per key, messages reach the application in publish order, for every key no
  negative ack touched (PIP-379 gives no ordering guarantee for negatively acknowledged keys);
* **delivery** (at the end): once the consumers receive and acknowledge everything, every published message has
  been delivered.

The default run is small and fast; ``-m slow`` runs a longer variant.
"""

from __future__ import annotations

from collections import deque

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from reference_model.broker import BrokerConfig, ModelBroker, ModelConsumer, ModelMessage
from reference_model.keyshared import DispatcherSettings

TOPIC, SUB = "persistent://public/default/machine", "sub"
KEYS = [f"k{i}" for i in range(6)]


class KeySharedMachine(RuleBasedStateMachine):
    """One topic, one Key_Shared subscription, a changing set of consumers, an application per consumer."""

    version = "4.0"
    #: whether the drain at the end must deliver everything (see :class:`KeySharedMachine402`)
    check_delivery = True

    def __init__(self) -> None:
        super().__init__()
        self.broker = ModelBroker(
            pulsar_version=self.version,
            implementation="pip379",
            config=BrokerConfig(
                crash_detection_delay_ms=50,
                key_shared=DispatcherSettings(lookahead_per_subscription=40),
            ),
        )
        self.producer = self.broker.create_producer(TOPIC, producer_name="p")
        self.consumers: list[ModelConsumer] = []
        self.held: dict[int, deque[ModelMessage]] = {}
        self.published = 0
        self.nacked_keys: set[str] = set()
        self.last_first_delivery: dict[str, int] = {}
        self.seen: set[int] = set()
        self.names = 0

    # -- membership ----------------------------------------------------------------------------------------
    @precondition(lambda self: len(self.consumers) < 4)
    @rule(queue=st.sampled_from([1, 3, 10]))
    def join(self, queue: int) -> None:
        self.names += 1
        c = self.broker.subscribe(
            TOPIC,
            SUB,
            consumer_name=f"c{self.names}",
            receiver_queue_size=queue,
            negative_ack_redelivery_delay_ms=20,
            initial_position="Earliest",
        )
        self.consumers.append(c)
        self.held[c.consumer_id] = deque()

    @precondition(lambda self: bool(self.consumers))
    @rule(data=st.data(), crash=st.booleans())
    def leave(self, data: st.DataObject, crash: bool) -> None:
        c = data.draw(st.sampled_from(self.consumers))
        self.consumers.remove(c)
        del self.held[c.consumer_id]
        c.crash() if crash else c.close()

    # -- producing and consuming ---------------------------------------------------------------------------
    @rule(key=st.sampled_from(KEYS), n=st.integers(1, 3))
    def publish(self, key: str, n: int) -> None:
        for _ in range(n):
            self.producer.send(str(self.published).encode(), partition_key=key)
            self.published += 1

    @precondition(lambda self: bool(self.consumers))
    @rule(data=st.data())
    def receive(self, data: st.DataObject) -> None:
        c = data.draw(st.sampled_from(self.consumers))
        msg = c.receive(0)
        if msg is not None:
            self._observe(msg)
            self.held[c.consumer_id].append(msg)

    @precondition(lambda self: any(self.held.values()))
    @rule(data=st.data(), nack=st.booleans())
    def settle(self, data: st.DataObject, nack: bool) -> None:
        c = data.draw(st.sampled_from([c for c in self.consumers if self.held[c.consumer_id]]))
        msg = self.held[c.consumer_id].popleft()
        if nack:
            self.nacked_keys.add(msg.partition_key())
            c.negative_acknowledge(msg)
        else:
            c.acknowledge(msg)

    @rule(ms=st.sampled_from([1, 10, 60]))
    def wait(self, ms: int) -> None:
        self.broker.advance(ms)

    def _observe(self, msg: ModelMessage) -> None:
        index = int(msg.data())
        key = msg.partition_key()
        if index in self.seen:
            return
        self.seen.add(index)
        if key not in self.nacked_keys:
            last = self.last_first_delivery.get(key, -1)
            assert index > last, f"ordering: {key}#{index} reached the application after {key}#{last}"
        self.last_first_delivery[key] = max(index, self.last_first_delivery.get(key, -1))

    # -- properties ----------------------------------------------------------------------------------------
    @invariant()
    def a_key_is_pending_at_one_consumer_at_most(self) -> None:
        sub = self.broker.subscription(TOPIC, SUB)
        if sub is None or sub.dispatcher is None:
            return
        log = self.broker.topic_log(TOPIC)
        holder: dict[bytes, str] = {}
        for consumer in sub.dispatcher.consumers.values():
            for position, _batch, _slot in consumer.pending:
                key = log.get(position).sticky_key
                other = holder.setdefault(key, consumer.name)
                assert other == consumer.name, f"exclusivity: {key!r} pending at {other} and {consumer.name}"

    def teardown(self) -> None:
        """The drain phase: every consumer acknowledges what it holds and receives until nothing moves."""
        if not self.consumers:
            self.join(10)
        quiet = 0
        while quiet < 2:
            progressed = False
            for c in self.consumers:
                for msg in self.held[c.consumer_id]:
                    c.acknowledge(msg)
                    progressed = True
                self.held[c.consumer_id].clear()
                while (got := c.receive(0)) is not None:
                    self._observe(got)
                    c.acknowledge(got)
                    progressed = True
            self.broker.run_until_idle()  # crash detection, negative-ack redeliveries, re-reads
            quiet = 0 if progressed else quiet + 1
        missing = sorted(set(range(self.published)) - self.seen)
        if self.check_delivery:
            assert not missing, f"delivery: messages {missing[:10]} never delivered"


_FAST = settings(max_examples=30, stateful_step_count=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_LONG = settings(max_examples=250, stateful_step_count=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class KeySharedMachine402(KeySharedMachine):
    """Exclusivity and ordering on 4.0.2. Delivery is *not* checked: this machine finds apache/pulsar#23845
    (fixed by #24736, from 4.0.7): a hash that returns to the consumer it drains at, and then moves again, is
    counted twice; when that consumer goes away one reference is left and the hash stays blocked for good.
    A shrunk example: c2 holds k0 (queue of 1) and crashes; c3, which had taken k0, leaves (k0 returns to c2);
    c5 joins and takes k0 (c2's pending entry is counted again); c2's crash is detected: k0 never moves."""

    version = "4.0.2"
    check_delivery = False


class KeySharedMachineLong(KeySharedMachine):
    """The default machine, many more and longer programs."""


class KeySharedMachine402Long(KeySharedMachine402):
    """The 4.0.2 machine, many more and longer programs."""


TestKeySharedMachine = KeySharedMachine.TestCase
TestKeySharedMachine.settings = _FAST
TestKeySharedMachineLong = pytest.mark.slow(KeySharedMachineLong.TestCase)
TestKeySharedMachineLong.settings = _LONG
TestKeySharedMachine402Long = pytest.mark.slow(KeySharedMachine402Long.TestCase)
TestKeySharedMachine402Long.settings = _LONG
