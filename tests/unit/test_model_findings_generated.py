"""Model fixes found by generated programs with the workload dimensions of issue 24 (batching, broker settings).

Each test fails on the model as it was before the fix.
"""

from __future__ import annotations

from pathlib import Path

from conformance.scenarios import loads_scenario
from pytest_keyshared.driver import run_scenario
from pytest_keyshared.targets import open_target
from reference_model.broker import ModelBroker


def test_nacks_of_one_batch_at_one_instant_redeliver_the_entry_once() -> None:
    """The C++/Python client keys its negative-ack tracker by entry (batch index erased): nacking both messages
    of a batch asks for the entry once.  The model asked twice, so the second request took back the copy the first
    delivered, with the acks sent for it (a generated program judged ``redelivered_after_ack``)."""
    broker = ModelBroker()
    producer = broker.create_producer("t", batching_enabled=True)
    consumer = broker.subscribe("t", "s", negative_ack_redelivery_delay_ms=100)
    for i in range(2):
        producer.send_async(f"{i}".encode(), lambda r, m: None, partition_key="k")
    producer.flush()
    first = [consumer.receive(0) for _ in range(2)]
    for msg in first:
        assert msg is not None
        consumer.negative_acknowledge(msg)
    again = [consumer.receive(200) for _ in range(2)]
    assert [(m.data(), m.redelivery_count()) for m in again if m] == [(b"0", 1), (b"1", 1)]
    for msg in again:
        assert msg is not None
        consumer.acknowledge(msg)
    assert consumer.receive(1_000) is None  # acknowledged once, never delivered again
    assert broker.topic_stats("t")["subscriptions"]["s"]["msgBacklog"] == 0


def test_nacks_of_one_entry_due_at_different_instants_each_ask() -> None:
    """Nacks whose delays run out at different instants are separate requests, as the client's timer sends them."""
    broker = ModelBroker()
    producer = broker.create_producer("t", batching_enabled=True)
    consumer = broker.subscribe("t", "s", negative_ack_redelivery_delay_ms=100)
    for i in range(2):
        producer.send_async(f"{i}".encode(), lambda r, m: None, partition_key="k")
    producer.flush()
    a, b = consumer.receive(0), consumer.receive(0)
    assert a is not None and b is not None
    consumer.negative_acknowledge(a)
    broker.clock.advance_until(lambda: False, 50)
    consumer.negative_acknowledge(b)
    counts = []
    while (m := consumer.receive(400)) is not None:
        counts.append(m.redelivery_count())
    assert counts == [1, 1, 2, 2]


NACK_OVER_THE_LIMIT = """
name = "nack-two-batches-over-the-consumer-limit"
description = "Found by a generated program: c1 (limit 3, queue 5) receives two 5-message batches, nacks them all."
[settings]
receiver_queue = 20
nack_delay_ms = 100
drain_timeout_ms = 4000
quiet_ms = 250
drain_quiet_ms = 1500
[broker]
maxUnackedMessagesPerConsumer = 3
[[steps]]
do = "open"
consumer = "c1"
behaviour = "hold"
[[steps]]
do = "publish"
count = 3
keys = ["tail-867443", "tail-1191082", "tail-1529262", "tail-1695233", "tail-1705128"]
[[steps]]
do = "close"
consumer = "c1"
[[steps]]
do = "publish"
count = 5
keys = ["tail-867443", "tail-1191082", "tail-1529262", "tail-1695233", "tail-1705128"]
batching = "default"
[[steps]]
do = "publish"
count = 5
keys = ["tail-867443", "tail-1191082", "tail-1529262", "tail-1695233", "tail-1705128"]
batching = "default"
[[steps]]
do = "open"
consumer = "c2"
name = "c3"
[[steps]]
do = "open"
consumer = "c1"
behaviour = "hold"
receiver_queue = 5
[[steps]]
do = "set_behaviour"
consumer = "c1"
behaviour = "nack"
[[steps]]
do = "wait_quiet"
"""


def test_a_redelivery_request_hands_back_the_permits_parked_while_blocked(tmp_path: Path) -> None:
    """``Consumer.redeliverUnacknowledgedMessages`` unblocks the consumer and flows the permits it received while
    blocked.  The model unblocked it but kept those permits parked when more than half of its limit was still
    unacknowledged after the first of two entries came back, so c1 never received the redeliveries."""
    scenario = loads_scenario(NACK_OVER_THE_LIMIT, "toml")
    with open_target("model", artifacts_dir=tmp_path / "target") as target:
        result = run_scenario(target, scenario, seed=239, out_dir=tmp_path / "run", live_check=False)
    assert result.valid, sorted({str(v.kind) for v in result.verdict.violations})


REDELIVER_WITH_UNBLOCKING_AT_ZERO = """
name = "redeliver-with-unblocking-interval-zero"
description = "Found by a generated program: c1 (named c2) gives back what it was sent while c3 drains its keys."
[settings]
receiver_queue = 20
drain_timeout_ms = 4000
quiet_ms = 250
drain_quiet_ms = 1500
[broker]
keySharedUnblockingIntervalMs = 0
[[steps]]
do = "open"
consumer = "c1"
behaviour = "hold"
[[steps]]
do = "crash"
consumer = "c1"
[[steps]]
do = "restart_broker"
[[steps]]
do = "publish"
count = 3
keys = 6
batching = "key_based"
[[steps]]
do = "open"
consumer = "c1"
name = "c2"
[[steps]]
do = "open"
consumer = "c3"
[[steps]]
do = "publish"
count = 8
keys = 6
batching = "key_based"
[[steps]]
do = "redeliver"
consumer = "c1"
"""


def test_a_read_a_redelivery_unblocks_runs_after_the_redelivery(tmp_path: Path) -> None:
    """``reScheduleReadInMs(0)`` runs the read on the broker's executor, after the redelivery request put every
    given-back entry in the replay queue.  The model read at once, inside the request, so a later message of a
    drained key overtook an earlier one not yet back in the queue (``out_of_order``)."""
    scenario = loads_scenario(REDELIVER_WITH_UNBLOCKING_AT_ZERO, "toml")
    with open_target("model", artifacts_dir=tmp_path / "target") as target:
        result = run_scenario(target, scenario, seed=5497, out_dir=tmp_path / "run", live_check=False)
    assert result.valid, sorted({str(v.kind) for v in result.verdict.violations})
