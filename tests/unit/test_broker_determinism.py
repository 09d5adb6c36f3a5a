"""Same inputs, same deliveries, byte for byte: within a process and across hash seeds."""

from __future__ import annotations

import hashlib
import os
import random
import subprocess
import sys

import pytest

from reference_model.broker import BrokerConfig, KeySharedPolicy, ModelBroker
from reference_model.keyshared import DispatcherSettings


def run_workload(seed: int, implementation: str = "pip379", version: str = "4.0") -> str:
    """A mixed workload (publishes, joins, leaves, crashes, acks, nacks, redeliveries) -> a digest of every
    delivery the application saw, with the simulated time it saw it."""
    rnd = random.Random(seed)
    broker = ModelBroker(
        pulsar_version=version,
        implementation=implementation,
        seed=seed,
        config=BrokerConfig(crash_detection_delay_ms=200, key_shared=DispatcherSettings(lookahead_per_subscription=50)),
    )
    producer = broker.create_producer("t", producer_name="p")
    consumers = [
        broker.subscribe(
            "t",
            "s",
            consumer_name=f"c{i}",
            receiver_queue_size=rnd.choice([1, 5, 20]),
            negative_ack_redelivery_delay_ms=30,
        )
        for i in range(3)
    ]
    log: list[str] = []
    for step in range(400):
        op = rnd.random()
        live = [c for c in consumers if c.is_connected()]
        if op < 0.4:
            producer.send(f"m{step}".encode(), partition_key=f"k{rnd.randrange(12)}")
        elif op < 0.75 and live:
            c = rnd.choice(live)
            m = c.receive(rnd.choice([0, 5]))
            if m is not None:
                log.append(
                    f"{broker.clock.now_ns()} {c.consumer_name()} {m.message_id()} {m.data()!r} {m.redelivery_count()}"
                )
                r = rnd.random()
                if r < 0.8:
                    c.acknowledge(m)
                elif r < 0.9:
                    c.negative_acknowledge(m)
        elif op < 0.8 and live:
            rnd.choice(live).redeliver_unacknowledged_messages()
        elif op < 0.87 and live:
            c = rnd.choice(live)
            c.crash() if rnd.random() < 0.5 else c.close()
        elif op < 0.95:
            consumers.append(
                broker.subscribe(
                    "t",
                    "s",
                    receiver_queue_size=rnd.choice([1, 5, 20]),
                    key_shared_policy=KeySharedPolicy(),
                    negative_ack_redelivery_delay_ms=30,
                )
            )
        else:
            broker.advance(rnd.choice([1, 10, 100]))
    log.append(str(broker.topic_stats("t")))
    return hashlib.sha256("\n".join(log).encode()).hexdigest()


@pytest.mark.parametrize(("implementation", "version"), [("pip379", "4.0"), ("classic", "4.0"), ("classic", "3.0.5")])
def test_the_same_seed_gives_the_same_deliveries(implementation: str, version: str) -> None:
    assert run_workload(3, implementation, version) == run_workload(3, implementation, version)
    assert run_workload(3, implementation, version) != run_workload(4, implementation, version)


def test_deliveries_do_not_depend_on_the_hash_seed() -> None:
    code = "from tests.unit.test_broker_determinism import run_workload; print(run_workload(11))"
    digests = set()
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=True,
            cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
        )
        digests.add(out.stdout.strip())
    assert len(digests) == 1
    assert digests == {run_workload(11)}
