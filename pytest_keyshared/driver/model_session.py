"""A run against the reference model: its consumers and producers, stepped on its simulated clock."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from pytest_keyshared.driver.handles import (
    BATCHING_MAX_BYTES,
    BATCHING_MAX_MESSAGES,
    BATCHING_MAX_PUBLISH_DELAY_MS,
    ConsumerHandle,
    ConsumerSpec,
    Delivery,
    OutgoingMessage,
    ProducerHandle,
    SendCallback,
    SendOutcome,
    delivery_from_message,
    format_msg_id,
)
from pytest_keyshared.driver.removals import stats_consumer_names
from pytest_keyshared.driver.session import (
    Session,
    internal_stats_dedup_cursor,
    stats_key_hash_ranges,
    stats_subscription_figures,
)
from pytest_keyshared.driver.workers import SteppedScheduler
from pytest_keyshared.targets.base import Target
from reference_model.errors import InvalidArgument

__all__ = ["ModelSession"]


def _msg_id(mid: Any) -> str:
    return format_msg_id(mid.ledger_id(), mid.entry_id(), mid.partition(), mid.batch_index())


class ModelConsumerHandle:
    def __init__(self, consumer: Any) -> None:
        self._consumer = consumer

    def receive(self, timeout_ms: int) -> Delivery | None:
        msg = self._consumer.receive(timeout_millis=0)  # the scheduler moves time, not the consumer
        if msg is None:
            return None
        return delivery_from_message(msg)

    def acknowledge(self, delivery: Delivery) -> None:
        self._consumer.acknowledge(delivery.token)

    def negative_acknowledge(self, delivery: Delivery) -> None:
        self._consumer.negative_acknowledge(delivery.token)

    def redeliver_unacknowledged(self) -> None:
        self._consumer.redeliver_unacknowledged_messages()

    def close(self) -> None:
        self._consumer.close()

    def crash(self) -> None:
        self._consumer.crash()

    def is_connected(self) -> bool:
        return True  # the model has no connections to lose

    def stall_connection(self) -> None:
        self._consumer.stall_connection()

    def resume_connection(self) -> None:
        self._consumer.resume_connection()


class ModelProducerHandle:
    def __init__(self, producer: Any, clock: Any, created_t0: int) -> None:
        self._producer = producer
        self._clock = clock
        self.name: str = producer.producer_name()
        self.created_t0 = created_t0
        self.answered_sequence_id = int(producer.last_sequence_id())

    @staticmethod
    def _kwargs(message: OutgoingMessage) -> dict[str, Any]:
        return {
            "properties": dict(message.properties),
            "partition_key": message.partition_key,
            "ordering_key": message.ordering_key,
            "sequence_id": None if message.auto_sequence else message.seq,
            **({"deliver_after": timedelta(milliseconds=message.deliver_after_ms)} if message.deliver_after_ms else {}),
        }

    def send(self, message: OutgoingMessage) -> SendOutcome:
        t0 = self._clock()
        try:
            mid = self._producer.send(message.payload, **self._kwargs(message))
        except Exception as exc:
            # a timed-out send may still be stored (its write is in flight): outcome unknown
            result = "info" if getattr(exc, "pulsar_name", "") == "Timeout" else "fail"
            return SendOutcome(result, error=f"{type(exc).__name__}: {exc}", t0=t0)
        return SendOutcome("ok", _msg_id(mid), t0=t0, last_seq=int(self._producer.last_sequence_id()))

    def send_batch(
        self,
        messages: list[OutgoingMessage],
        on_done: SendCallback,
        timeout_s: float,
        between: Callable[[], None] | None = None,
    ) -> bool:
        for index, message in enumerate(messages):
            if index and between is not None:
                between()  # the scheduler moves the model's time: the batch timer may fire meanwhile
            t0 = self._clock()

            def callback(result: str, mid: Any, message: OutgoingMessage = message, t0: int = t0) -> None:
                if result == "Ok" and mid is not None:
                    last = int(self._producer.last_sequence_id())
                    on_done(message, SendOutcome("ok", _msg_id(mid), t0=t0, last_seq=last))
                else:
                    on_done(message, SendOutcome("fail", error=str(result), t0=t0))

            self._producer.send_async(message.payload, callback, **self._kwargs(message))
        self._producer.flush()
        return True

    def send_ids(
        self, messages: list[OutgoingMessage], *, sequence_id: int, highest_sequence_id: int, timeout_s: float
    ) -> list[SendOutcome]:
        """``messages`` as one batch sent with these ids (the model's side of the raw protocol producer); the wait
        is the producer's send timeout on the simulated clock, so ``timeout_s`` is not used."""
        t0 = self._clock()
        sent = [(m.payload, dict(m.properties), m.partition_key, m.seq) for m in messages]
        results = self._producer.send_batch_with_ids(
            sent, sequence_id=sequence_id, highest_sequence_id=highest_sequence_id
        )
        outcomes = []
        for result, mid in results:
            if result == "Ok" and mid is not None:
                outcomes.append(SendOutcome("ok", _msg_id(mid), t0=t0))
            else:
                outcomes.append(SendOutcome("info" if result == "Timeout" else "fail", error=str(result), t0=t0))
        return outcomes

    def is_connected(self) -> bool:
        return True  # the model has no connections to lose

    def close(self) -> None:
        self._producer.close()


class ModelSession(Session):
    def __init__(self, target: Target, topic: str, run_dir: Path, nonce: str, *, seed: int) -> None:
        super().__init__(target, topic, run_dir, nonce)
        self.broker = target.new_broker(seed)  # type: ignore[attr-defined]
        self.seed = seed
        self.scheduler = SteppedScheduler(self.broker.clock.now_ns, self.broker.advance, tick_ms=1)
        self._left_ns: int | None = None

    def consumer_gone(self, handle_name: str) -> None:
        self._left_ns = self.clock()

    def before_subscribe(self) -> None:
        """A subscribe right after a close or crash at the same simulated instant is sent 1 ns later, as any
        client's would be: the trace then shows the close completed (``closed``) strictly before the subscribe
        was sent (``t0``), which ``refused_open`` needs (equal timestamps are not judged)."""
        now = self.clock()
        if self._left_ns == now:
            self.broker.clock.advance_to(now + 1)

    def keep_memory_bounded(self) -> None:
        """Trim the entries every cursor is done with (``BrokerConfig.trim_consumed_entries``).

        Not observable by the run's clients: they share one subscription, created at ``Earliest`` before the
        first publish, and never read below its mark-delete position again.
        """
        self.broker.set_trim_consumed_entries(True)

    def create_partitioned_topic(self, partitions: int) -> None:
        self.broker.create_partitioned_topic(self.topic, partitions)
        self.partitions = partitions

    def open_consumer(self, handle_name: str, spec: ConsumerSpec, *, crashable: bool) -> ConsumerHandle:
        """A Key_Shared consumer of ``spec.topic``; of a partitioned topic, one per partition (each partition its
        own subscription and dispatcher, as in Pulsar), received from as the client's multi-partition consumer
        (:class:`~reference_model.broker.partitioned.PartitionedConsumer`)."""
        from reference_model.broker.partitioned import PartitionedConsumer, partition_name

        if not spec.partitions:
            return ModelConsumerHandle(self._subscribe(spec, spec.topic))
        consumers = [self._subscribe(spec, partition_name(spec.topic, i)) for i in range(spec.partitions)]
        return ModelConsumerHandle(PartitionedConsumer(self.broker, consumers))

    def _subscribe(self, spec: ConsumerSpec, topic: str) -> Any:
        from reference_model.broker import KeySharedPolicy
        from reference_model.broker.partitioned import dead_letter_topic

        policy = KeySharedPolicy(
            mode=spec.mode,
            allow_out_of_order_delivery=spec.allow_out_of_order_delivery,
            sticky_ranges=spec.ranges or None,
        )
        dead_letter = spec.dead_letter
        if dead_letter is not None and dead_letter[1] is None:  # the client's default name, from this topic
            dead_letter = (dead_letter[0], dead_letter_topic(topic, spec.subscription))
        return self.broker.subscribe(
            topic,
            spec.subscription,
            consumer_type="Key_Shared",
            consumer_name=spec.name,
            key_shared_policy=policy,
            receiver_queue_size=spec.receiver_queue,
            initial_position="Earliest",
            negative_ack_redelivery_delay_ms=spec.nack_delay_ms,
            unacked_messages_timeout_ms=spec.ack_timeout_ms or None,
            dead_letter=dead_letter,
        )

    def open_dead_letter_reader(self, topic: str) -> Any:
        return self.broker.subscribe(
            topic, f"ks-dlq-{self.nonce}", consumer_type="Key_Shared", consumer_name="dlq-reader",
            initial_position="Earliest",
        )  # fmt: skip

    def _create_producer(self, name: str, batching: str, send_timeout_ms: int) -> ProducerHandle:
        kwargs: dict[str, Any] = {}
        if batching not in ("none", "raw"):  # raw: the model producer sends batches with ids through send_ids
            kwargs = {
                "batching_enabled": True,
                "batching_type": "KeyBased" if batching == "key_based" else "Default",
                "batching_max_messages": BATCHING_MAX_MESSAGES,
                "batching_max_allowed_size_in_bytes": BATCHING_MAX_BYTES,
                "batching_max_publish_delay_ms": BATCHING_MAX_PUBLISH_DELAY_MS,
            }
        created_t0 = self.clock()
        if self.partitions:  # the Python client's default routing of keyless messages: round robin
            import random

            from reference_model.broker.partitioned import PartitionedProducer, Router

            router = Router(self.partitions, "round_robin", random.Random(f"{self.seed}:{name}"))
            producer: Any = PartitionedProducer(
                self.broker, self.topic, self.partitions, router,
                producer_name=name, send_timeout_millis=send_timeout_ms, **kwargs,
            )  # fmt: skip
        else:
            named = None if name in self.unnamed_producers else name  # None: the broker generates one
            producer = self.broker.create_producer(
                self.topic, producer_name=named, send_timeout_millis=send_timeout_ms, **kwargs
            )
        return ModelProducerHandle(producer, self.clock, created_t0)

    def stall_connection(self, handle_name: str, handle: ConsumerHandle) -> None:
        """The model's consumer stops taking what the broker writes (its dispatcher learns it per release)."""
        if not isinstance(handle, ModelConsumerHandle):
            raise TypeError(f"consumer {handle_name!r} is not a model consumer: {handle!r}")
        handle.stall_connection()

    def resume_connection(self, handle_name: str, handle: ConsumerHandle) -> None:
        if not isinstance(handle, ModelConsumerHandle):
            raise TypeError(f"consumer {handle_name!r} is not a model consumer: {handle!r}")
        handle.resume_connection()

    def restart_broker(self, *, kill: bool) -> None:
        self.broker.restart()

    def storage_down(self, fail_after_ms: int) -> None:
        self.broker.storage_down(fail_after_ms)

    def storage_up(self) -> None:
        self.broker.storage_up()

    def set_deduplication(self, enabled: bool) -> None:
        self.broker.set_topic_deduplication(self.topic, enabled)

    def expire_messages(self, subscription: str, expire_time_s: int) -> None:
        self.broker.expire_messages(self.topic, subscription, expire_time_s)

    def key_hash_ranges(self, subscription: str) -> dict[str, list[list[int]]] | None:
        return stats_key_hash_ranges(self.broker.topic_stats(self.topic), subscription)

    def consumer_names(self, subscription: str) -> Counter[str] | None:
        return stats_consumer_names(self.broker.topic_stats(self.topic), subscription)

    def subscription_stats(self, subscription: str) -> dict[str, Any] | None:
        if self.partitions:  # a partitioned topic has stats per partition only, as Pulsar's admin API: not judged
            return None
        return stats_subscription_figures(self.broker.topic_stats(self.topic), subscription)

    def topic_stats_answered(self) -> bool | None:
        try:
            self.broker.topic_stats(self.topic)
        except InvalidArgument:  # no such topic (nor a partitioned topic of that name)
            return False
        return True

    def dedup_cursor(self) -> str | None:
        if self.partitions:  # internal stats are per partition: not judged
            return None
        return internal_stats_dedup_cursor(self.broker.topic_internal_stats(self.topic))
