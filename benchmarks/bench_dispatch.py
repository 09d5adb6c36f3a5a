"""How fast the Key_Shared model dispatches, and how much memory the draining-hashes tracker takes.

Prints figures, asserts nothing (speed is measured here, never in unit tests). Rates are per CPU second of this
process (``time.process_time``), so that other work on a shared machine skews them less; each rate is the best of
``--repeat`` runs (default 3) for the same reason::

    .venv/bin/python benchmarks/bench_dispatch.py            # all figures
    .venv/bin/python benchmarks/bench_dispatch.py --messages 20000 --repeat 1

1. **dispatcher**: 100k messages over 1,000 keys to 10 consumers with churn (a consumer leaves and another
   joins every 5,000 messages), PIP-379 and classic, driven at the dispatcher (the model's core: read rounds,
   selection, draining, replay, pending acks, acknowledgements and the cursor). Each consumer acknowledges what
   it was sent in batches, as a client application with a receiver queue would. Publishing is not timed.
2. **client surface**: the same workload through ``ModelBroker`` (producer ``send_async`` one message at a time,
   receiver queues, flow permits, ``receive``/``acknowledge``), which is what the conformance suite, the driver's
   model target and Hypothesis drive. Publishing is timed, and every entry is dispatched as it is published.
   Printed beside the dispatcher figure.
3. **draining tracker memory** at 64k draining hashes (PIP-379 estimates about 5 MB for the Java tracker).
"""

from __future__ import annotations

import argparse
import functools
import gc
import time
import tracemalloc
from collections.abc import Callable

from reference_model.broker import ModelBroker
from reference_model.keyshared import (
    DispatchConsumer,
    DispatcherSettings,
    DrainingHashesTracker,
    KeySharedPolicy,
    make_dispatcher,
)
from reference_model.selectors import ConsumerRef
from reference_model.storage import Entry, ManagedCursor, MessageMetadata, SingleMessage, TopicLog


def dispatcher_run(
    implementation: str, messages: int, keys: int, consumers: int, churn_every: int
) -> tuple[int, float]:
    """Deliveries and wall seconds for the dispatcher-level workload."""
    log = TopicLog("bench", 1)
    cursor = ManagedCursor(log, "s", log.earliest)
    dispatcher = make_dispatcher(
        cursor=cursor,
        policy=KeySharedPolicy(),
        settings=DispatcherSettings(unblocking_interval_ms=0),
        version="4.0",
        implementation=implementation,
    )
    inboxes: dict[int, list[Entry]] = {}
    delivered = 0
    next_id = 0

    def join() -> DispatchConsumer:
        nonlocal next_id
        next_id += 1
        inbox: list[Entry] = []
        inboxes[next_id] = inbox

        def sink(entry: Entry, redeliveries: int, inbox: list[Entry] = inbox) -> None:
            inbox.append(entry)

        consumer = DispatchConsumer(ConsumerRef(f"c{next_id}", next_id), sink)
        dispatcher.add_consumer(consumer)
        dispatcher.consumer_flow(consumer, 1000)
        return consumer

    members = [join() for _ in range(consumers)]
    payload = b"x" * 16
    key_bytes = [f"key-{i}".encode() for i in range(keys)]
    publishing = 0.0  # time spent appending to the log (the producers' side) is not dispatch: left out
    started = time.process_time()
    batch = 100
    for start in range(0, messages, batch):
        t0 = time.process_time()
        for i in range(start, min(start + batch, messages)):
            key = key_bytes[i % keys]
            log.append(MessageMetadata("p", i), (SingleMessage(payload, i),), key)
        publishing += time.process_time() - t0
        dispatcher.read_more_entries()
        # every consumer's application takes and acknowledges what arrived, then flows the permits back
        for consumer in list(members):
            inbox = inboxes[consumer.consumer_id]
            if not inbox:
                continue
            taken, inbox[:] = list(inbox), []
            moved = False
            for entry in taken:
                dispatcher.acknowledge(consumer, entry.position)
                moved = cursor.delete(entry.position) or moved
            delivered += len(taken)
            dispatcher.after_acknowledgements(moved)
            dispatcher.consumer_flow(consumer, len(taken))
        if churn_every and (start + batch) % churn_every == 0:
            leaving = members.pop(0)
            dispatcher.remove_consumer(leaving)
            inboxes.pop(leaving.consumer_id).clear()
            members.append(join())
    # drain what is left
    for _ in range(10_000):
        dispatcher.read_more_entries()
        moved_any = False
        for consumer in members:
            inbox = inboxes[consumer.consumer_id]
            taken, inbox[:] = list(inbox), []
            for entry in taken:
                dispatcher.acknowledge(consumer, entry.position)
                moved_any = cursor.delete(entry.position) or moved_any
            delivered += len(taken)
            if taken:
                dispatcher.consumer_flow(consumer, len(taken))
        if cursor.backlog() == 0:
            break
    elapsed = time.process_time() - started - publishing
    assert cursor.backlog() == 0, "the benchmark workload must drain completely"
    return delivered, elapsed


def broker_run(implementation: str, messages: int, keys: int, consumers: int, churn_every: int) -> tuple[int, float]:
    """Deliveries and wall seconds for the same workload through ``ModelBroker``'s client surface."""
    broker = ModelBroker(pulsar_version="4.0", implementation=implementation)
    producer = broker.create_producer("bench", producer_name="p")
    members = [broker.subscribe("bench", "s", consumer_name=f"c{i}") for i in range(consumers)]
    names = consumers
    delivered = 0
    key_names = [f"key-{i}" for i in range(keys)]

    def consume_all() -> int:
        n = 0
        for consumer in members:
            while (msg := consumer.receive(0)) is not None:
                consumer.acknowledge(msg)
                n += 1
        return n

    started = time.process_time()
    for i in range(messages):
        producer.send_async(b"x" * 16, _ignore, partition_key=key_names[i % keys])
        if i % 100 == 99:
            delivered += consume_all()
        if churn_every and (i + 1) % churn_every == 0:
            members.pop(0).close()
            names += 1
            members.append(broker.subscribe("bench", "s", consumer_name=f"c{names}"))
    for _ in range(10_000):
        broker.run_until_idle()
        got = consume_all()
        delivered += got
        if got == 0 and broker.topic_stats("bench")["subscriptions"]["s"]["msgBacklog"] == 0:
            break
    return delivered, time.process_time() - started


def _ignore(result: str, msg_id: object) -> None:
    return None


def tracker_memory(hashes: int) -> tuple[float, float]:
    """(MiB allocated by a tracker holding ``hashes`` draining hashes, bytes per hash)."""

    class Consumer:
        pass

    consumers = [Consumer() for _ in range(10)]
    gc.collect()
    tracemalloc.start()
    before, _ = tracemalloc.get_traced_memory()
    tracker: DrainingHashesTracker[Consumer] = DrainingHashesTracker()
    for slot in range(1, hashes + 1):
        tracker.add_entry(consumers[slot % 10], slot)
    after, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    size = after - before
    return size / 2**20, size / hashes


def _best_rate(fn: Callable[[], tuple[int, float]], repeat: int) -> tuple[int, float]:
    """(deliveries, best deliveries per CPU second) over ``repeat`` runs; every run must deliver the same."""
    rates: list[float] = []
    counts: set[int] = set()
    for _ in range(repeat):
        gc.collect()
        delivered, elapsed = fn()
        counts.add(delivered)
        rates.append(delivered / elapsed)
    assert len(counts) == 1, f"the workload is deterministic, but runs delivered {sorted(counts)}"
    return counts.pop(), max(rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--keys", type=int, default=1_000)
    parser.add_argument("--consumers", type=int, default=10)
    parser.add_argument("--churn-every", type=int, default=5_000)
    parser.add_argument("--draining-hashes", type=int, default=65_535)
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure; the best is printed")
    args = parser.parse_args()
    if args.repeat < 1 or args.messages < 1:
        parser.error(f"--repeat and --messages must be >= 1, got --repeat {args.repeat} --messages {args.messages}")
    shape = f"{args.messages} msgs, {args.keys} keys, {args.consumers} consumers, churn/{args.churn_every}"
    print(f"Key_Shared model dispatch ({shape}), deliveries per CPU second, best of {args.repeat}")
    print(f"  {'implementation':<16}{'dispatcher':>12}{'client surface':>17}{'client/dispatcher':>20}")
    workload = (args.messages, args.keys, args.consumers, args.churn_every)
    for implementation in ("pip379", "classic"):
        _, core = _best_rate(functools.partial(dispatcher_run, implementation, *workload), args.repeat)
        _, api = _best_rate(functools.partial(broker_run, implementation, *workload), args.repeat)
        print(f"  {implementation:<16}{core:>12,.0f}{api:>17,.0f}{api / core:>19.0%}")
    mib, per_hash = tracker_memory(args.draining_hashes)
    print(
        f"Draining-hashes tracker at {args.draining_hashes} hashes: {mib:.1f} MiB ({per_hash:.0f} bytes per hash);"
        " PIP-379 estimates about 5 MB for Java"
    )


if __name__ == "__main__":
    main()
