"""Partitioned topics in the model (``reference_model.broker.partitioned``) and in failover scenarios.

The model holds a partitioned topic as N ordinary topics ``<name>-partition-<i>``; a producer routes each message
(a key by its hash, else ``single`` / ``round_robin``), a consumer on the partitioned name consumes every
partition, and the replicated-subscription status switched through the partitioned name reaches every partition
(``ReplicatedSubscriptionTest.testReplicatedSubscriptionRestApi2``).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.scenarios import InvalidScenario, loads_scenario
from pytest_keyshared.driver.model_sites import ModelSites
from reference_model.broker import ModelBroker
from reference_model.broker.partitioned import (
    PartitionedConsumer,
    PartitionedProducer,
    Router,
    key_partition,
    partition_index,
    partition_name,
)
from reference_model.errors import InvalidArgument
from reference_model.hashing import make_hash

TOPIC = "persistent://public/default/pt"


def test_names_follow_pulsar() -> None:
    assert partition_name(TOPIC, 3) == f"{TOPIC}-partition-3"
    assert partition_index(f"{TOPIC}-partition-12") == 12
    assert partition_index(TOPIC) == -1


def test_a_key_goes_by_its_murmur3_hash_whatever_the_mode() -> None:
    for mode in ("single", "round_robin"):
        router = Router(4, mode, random.Random(1))
        for key in ("key-00", "k7", "ordering"):
            assert router.choose(key) == make_hash(key.encode()) % 4 == key_partition(key, 4)


def test_keyless_single_stays_and_round_robin_cycles() -> None:
    single = Router(3, "single", random.Random(5))
    assert len({single.choose(None) for _ in range(10)}) == 1
    robin = Router(3, "round_robin", random.Random(5))
    picks = [robin.choose(None) for _ in range(6)]
    assert sorted(picks[:3]) == [0, 1, 2] and picks[:3] == picks[3:]
    with pytest.raises(InvalidArgument):
        Router(0)
    with pytest.raises(InvalidArgument):
        Router(2, "sticky")


def _broker_with_partitions(n: int = 2) -> ModelBroker:
    broker = ModelBroker(pulsar_version="4.0")
    assert broker.create_partitioned_topic(TOPIC, n) == [partition_name(TOPIC, i) for i in range(n)]
    return broker


def test_partitioned_metadata_and_refusals() -> None:
    broker = _broker_with_partitions(3)
    assert broker.partitions_of(TOPIC) == 3 and broker.partitions_of("other") == 0
    assert broker.create_partitioned_topic(TOPIC, 3)  # the same count again is kept
    with pytest.raises(InvalidArgument, match="already has 3 partitions"):
        broker.create_partitioned_topic(TOPIC, 2)
    with pytest.raises(InvalidArgument, match="non-partitioned"):
        broker.create_partitioned_topic(partition_name(TOPIC, 0), 2)
    with pytest.raises(InvalidArgument, match="is a partitioned topic of 3 partitions"):
        broker.create_producer(TOPIC)  # the name itself is no topic: the client routes to a partition


def test_a_consumer_on_the_partitioned_name_gets_every_partition_with_its_index() -> None:
    broker = _broker_with_partitions(2)
    consumers = [broker.subscribe(partition_name(TOPIC, i), "s", initial_position="Earliest") for i in range(2)]
    consumer = PartitionedConsumer(broker, consumers)
    producer = PartitionedProducer(broker, TOPIC, 2, Router(2, "single", random.Random(0)), producer_name="p")
    sent = {}
    for i in range(20):
        mid = producer.send(f"m{i}".encode(), partition_key=f"key-{i % 10:02d}")
        assert mid.partition() == key_partition(f"key-{i % 10:02d}", 2)
        sent[f"m{i}"] = mid.partition()
    got = {}
    while (message := consumer.receive(100)) is not None:
        got[message.data().decode()] = message.message_id().partition()
        consumer.acknowledge(message)
    assert got == sent and set(sent.values()) == {0, 1}


def test_the_replicated_status_through_the_partitioned_name_reaches_every_partition() -> None:
    broker = _broker_with_partitions(3)
    for i in range(3):
        broker.subscribe(partition_name(TOPIC, i), "s", replicate_subscription_state=True).close()
    assert broker.set_replicated_subscription_status(TOPIC, "s", False)
    assert [broker.subscription(partition_name(TOPIC, i), "s").replicated for i in range(3)] == [False] * 3
    assert broker.set_replicated_subscription_status(TOPIC, "s", True)
    assert all(broker.subscription(partition_name(TOPIC, i), "s").replicated for i in range(3))
    assert not broker.set_replicated_subscription_status(TOPIC, "absent", True)


def test_model_sites_sum_the_backlog_and_record_partitioned_ids() -> None:
    sites = ModelSites(partitions=2, seed=3)
    consumer = sites.subscribe("r1")
    producer = sites.producer("r1")
    ids = [producer.send(f"m{i}", f"key-{i:02d}") for i in range(10)]
    assert {mid.split(":")[2] for mid in ids} == {"0", "1"}
    assert sites.backlog("r1") == 10
    received = [consumer.receive(0) for _ in range(10)]
    assert sorted(d.msg_id for d in received if d is not None) == sorted(ids)


def test_the_loader_takes_partitions_for_failovers_and_key_shared_runs() -> None:
    base = 'name = "p"\n[settings]\nclusters = ["r1", "r2"]\npartitions = 2\n[[steps]]\ndo = "failover"\nto = "r2"\n'
    scenario = loads_scenario(base, "toml")
    assert scenario.settings.partitions == 2
    assert "partitioned_topics" not in scenario.required_capabilities()  # a failover's sites create it
    key_shared = loads_scenario('name = "p"\n[settings]\npartitions = 2\n[[steps]]\ndo = "sleep"\nms = 1\n', "toml")
    assert key_shared.required_capabilities() == {"partitioned_topics": "[settings] partitions = 2"}
    with pytest.raises(InvalidScenario, match="partitions"):
        loads_scenario(base.replace("partitions = 2", "partitions = -1"), "toml")


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        ('[[steps]]\ndo = "open"\nconsumer = "c1"\n[[steps]]\ndo = "crash"\nconsumer = "c1"\n', r"step 2 \(crash\)"),
        ('[[steps]]\ndo = "restart_broker"\n', "restart_broker"),
        ('[[steps]]\ndo = "storage_down"\n', "storage_down"),
        ('[[steps]]\ndo = "expire_messages"\nseconds = 1\n', "expire_messages"),
    ],
)
def test_the_loader_refuses_what_a_partitioned_key_shared_run_cannot_do(extra: str, problem: str) -> None:
    with pytest.raises(InvalidScenario, match=f"{problem}.*not on a partitioned topic"):
        loads_scenario(f'name = "p"\n[settings]\npartitions = 2\n{extra}', "toml")


@pytest.mark.parametrize(
    "setting", ['topic = "non-persistent"', "deduplication = true"], ids=["non-persistent", "deduplication"]
)
def test_the_loader_refuses_partitions_with_settings_of_one_topic(setting: str) -> None:
    text = f'name = "p"\n[settings]\npartitions = 2\n{setting}\n[[steps]]\ndo = "sleep"\nms = 1\n'
    with pytest.raises(InvalidScenario, match="partitions = 2"):
        loads_scenario(text, "toml")


def test_a_target_without_partitioned_topics_skips_naming_it(tmp_path: Path) -> None:
    from conformance.scenarios import load_scenario
    from pytest_keyshared.driver.run import run_scenario
    from pytest_keyshared.targets.base import Capabilities, UnsupportedByTarget
    from pytest_keyshared.targets.model import ModelTarget

    target = ModelTarget("model", tmp_path)
    target.capabilities = Capabilities(reasons={"partitioned_topics": "no admin API"})
    with pytest.raises(UnsupportedByTarget, match=r"partitions = 2 needs partitioned_topics \(no admin API\)"):
        run_scenario(target, load_scenario(_CASE), seed=1, out_dir=tmp_path / "run")
    assert not (tmp_path / "run" / "trace.jsonl").exists()


_CASE = Path(__file__).parents[2] / "conformance/cases/scenarios/catalogue/dead-letter-key-shared-partitioned.toml"


@pytest.mark.parametrize(
    "case", [_CASE, _CASE.with_name(f"{_CASE.stem}-ack-timeout.toml")], ids=["nack", "ack-timeout"]
)
def test_a_key_shared_run_on_a_partitioned_topic_dead_letters_per_partition(tmp_path: Path, case: Path) -> None:
    """The cases on the model: each partition's messages are dead-lettered to its own dead-letter topic, once,
    every message is acknowledged or dead-lettered and never both, and the trace is the same byte for byte."""
    import json

    from conformance.scenarios import load_scenario
    from pytest_keyshared.driver.run import run_scenario
    from pytest_keyshared.targets.model import ModelTarget

    scenario = load_scenario(case)
    traces = []
    for run in ("a", "b"):
        result = run_scenario(ModelTarget("model", tmp_path), scenario, seed=5, out_dir=tmp_path / run)
        assert result.verdict.valid, result.verdict
        traces.append((tmp_path / run / "trace.jsonl").read_bytes())
    assert traces[0] == traces[1]
    lines = traces[0].decode().splitlines()
    head, events = json.loads(lines[0]), [json.loads(line) for line in lines[1:]]
    topic = head["topic"]
    assert head["partitions"] == 2 and head["dead_letter"]["topics"] == [
        f"{partition_name(topic, i)}-ks-sub-DLQ" for i in range(2)
    ]
    published = {e["uid"]: int(e["msg_id"].split(":")[2]) for e in events if e["op"] == "publish"}
    assert set(published.values()) == {0, 1}
    dead = [e for e in events if e["op"] == "dead_letter"]
    assert {partition_index(e["topic"]) for e in dead} == {0, 1}  # both partitions dead-lettered some
    for e in dead:  # to the dead-letter topic of the original's own partition
        assert (
            e["dead_letter_topic"] == f"{e['topic']}-ks-sub-DLQ" and partition_index(e["topic"]) == published[e["uid"]]
        )
    dead_uids = [e["uid"] for e in dead]
    acked = {e["uid"] for e in events if e["op"] == "ack" and e.get("uid")}
    assert len(dead_uids) == len(set(dead_uids)) and not acked & set(dead_uids)
    assert acked | set(dead_uids) == set(published)


def test_the_partitioned_consumer_sends_back_through_each_partitions_consumer() -> None:
    broker = _broker_with_partitions(2)
    consumers = [
        broker.subscribe(
            partition_name(TOPIC, i), "s", initial_position="Earliest", negative_ack_redelivery_delay_ms=10
        )
        for i in range(2)
    ]
    consumer = PartitionedConsumer(broker, consumers)
    producer = PartitionedProducer(broker, TOPIC, 2, Router(2, "round_robin", random.Random(0)), producer_name="p")
    keys = [next(f"key-{n:02d}" for n in range(50) if key_partition(f"key-{n:02d}", 2) == i) for i in range(2)]
    producer.send(b"a", partition_key=keys[0])
    producer.send(b"b", partition_key=keys[1])
    assert consumer.num_prefetched() == 2
    first = consumer.receive(100)
    assert first is not None and first.redelivery_count() == 0 and first.producer_name() == "p"
    consumer.negative_acknowledge(first)
    second = consumer.receive(100)
    assert second is not None and second.message_id().partition() != first.message_id().partition()
    again = consumer.receive(1000)
    assert again is not None and again.data() == first.data() and again.redelivery_count() == 1
    assert again.message_id() == first.message_id()


def test_the_partitioned_cases_run_deterministically(tmp_path: Path) -> None:
    from conformance.scenarios import load_scenario
    from pytest_keyshared.driver.failover_run import run_failover_scenario
    from pytest_keyshared.targets.model import ModelTarget

    path = Path(__file__).parents[2] / "conformance/cases/scenarios/replication/partitioned-status-off-failover.toml"
    scenario = load_scenario(path)
    traces = []
    for run in ("a", "b"):
        result = run_failover_scenario(ModelTarget("model", tmp_path), scenario, seed=7, out_dir=tmp_path / run)
        assert result.verdict.valid, result.verdict
        traces.append((tmp_path / run / "trace.jsonl").read_bytes())
    assert traces[0] == traces[1]
    assert b'"partitions":2' in traces[0]


@settings(max_examples=8, deadline=None, derandomize=True)
@given(
    partitions=st.integers(min_value=1, max_value=4),
    seed=st.integers(min_value=0, max_value=2**16),
    case=st.sampled_from(["partitioned-status-off-failover", "partitioned-status-off-and-on"]),
    version=st.sampled_from(["3.0", "4.0", "4.2"]),
)
def test_the_rest_api2_cases_hold_for_any_partition_count(partitions: int, seed: int, case: str, version: str) -> None:
    """The generators draw no failover scenarios; the partition count, seed and release are drawn here."""
    import dataclasses
    import tempfile

    from conformance.scenarios import load_scenario
    from pytest_keyshared.driver.failover_run import run_failover_scenario
    from pytest_keyshared.targets.model import ModelTarget

    scenario = load_scenario(Path(__file__).parents[2] / f"conformance/cases/scenarios/replication/{case}.toml")
    scenario = dataclasses.replace(scenario, settings=dataclasses.replace(scenario.settings, partitions=partitions))
    with tempfile.TemporaryDirectory() as tmp:
        target = ModelTarget(f"model:{version}", Path(tmp))
        result = run_failover_scenario(target, scenario, seed=seed, out_dir=Path(tmp) / "run")
        assert result.verdict.valid, result.verdict


def test_a_status_switch_that_reaches_only_partition_0_fails_the_case(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The planted bug (``partitioned-status-first-partition-only`` in benchmarks/mutants.py): partition 1 keeps
    replicating while the status is off, so r2 skips its acknowledged messages, and only those."""
    import json

    from conformance.scenarios import load_scenario
    from pytest_keyshared.driver.failover_run import run_failover_scenario
    from pytest_keyshared.targets.model import ModelTarget
    from reference_model.broker.model_broker import normalise_topic

    original = ModelBroker.set_replicated_subscription_status

    def first_only(self: ModelBroker, topic: str, subscription: str, enabled: bool) -> bool:
        if self.partitions_of(topic):
            topic = partition_name(normalise_topic(topic), 0)
        return original(self, topic, subscription, enabled)

    monkeypatch.setattr(ModelBroker, "set_replicated_subscription_status", first_only)
    path = Path(__file__).parents[2] / "conformance/cases/scenarios/replication/partitioned-status-off-failover.toml"
    result = run_failover_scenario(ModelTarget("model", tmp_path), load_scenario(path), seed=0, out_dir=tmp_path / "r")
    events = [json.loads(line) for line in (tmp_path / "r" / "trace.jsonl").read_text().splitlines()[1:]]
    on_partition_1 = sum(1 for e in events if e["op"] == "publish" and e["msg_id"].split(":")[2] == "1")
    assert on_partition_1 > 0
    assert not result.verdict.valid
    assert {k: c for k, c in result.verdict.counts.items() if c} == {"skipped_after_failover": on_partition_1}
