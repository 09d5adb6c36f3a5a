"""The raw protocol producer against a real pulsar-lite broker: a batch sent with its highest sequence id and an
unbatched send are stored and read back by ``pulsar-client``; failures are one bounded line."""

from __future__ import annotations

import json
import socket
import time
import uuid
from pathlib import Path

import pulsar
import pytest

from conformance.scenarios import parse_scenario
from conformance.trace.reader import read_trace
from pytest_keyshared.driver import run_scenario, wire
from pytest_keyshared.driver.raw_producer import RawProducer, RawProtocolError
from pytest_keyshared.targets.pulsar_lite import PulsarLiteTarget

pytestmark = pytest.mark.broker


def test_batch_with_highest_id_is_stored_and_read(lite: PulsarLiteTarget) -> None:
    topic = f"persistent://public/default/raw-{uuid.uuid4().hex[:8]}"
    client = pulsar.Client(lite.service_url, operation_timeout_seconds=10)
    try:
        consumer = client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Exclusive)
        producer = RawProducer.open(lite.service_url, topic, "raw-p1", timeout_s=5)
        assert producer.last_sequence_id == -1  # pulsar-lite has no deduplication: it knows no last id
        batch = [wire.OutgoingSingle(f"m{i}".encode(), i, "A", {"uid": f"raw-p1:{i}"}) for i in range(1, 6)]
        first = producer.send(batch, sequence_id=1, highest_sequence_id=5, batch=True, timeout_s=5)
        single = [wire.OutgoingSingle(b"m7", 7, "B", {"uid": "raw-p1:7"})]
        second = producer.send(single, sequence_id=7, highest_sequence_id=None, batch=False, timeout_s=5)
        assert first.result == "ok" and first.ledger >= 0 and first.entry >= 0
        assert second.result == "ok" and (second.ledger, second.entry) > (first.ledger, first.entry)
        got = []
        for _ in range(6):
            message = consumer.receive(5000)
            got.append((message.data(), message.partition_key(), message.properties()["uid"]))
            consumer.acknowledge(message)
        assert got == [(f"m{i}".encode(), "A", f"raw-p1:{i}") for i in range(1, 6)] + [(b"m7", "B", "raw-p1:7")]
        producer.close()
        assert not producer.connected
    finally:
        client.close()


def test_unreachable_broker_is_one_line() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(RawProtocolError, match=r"cannot connect to 127\.0\.0\.1:\d+") as caught:
        RawProducer.open(f"pulsar://127.0.0.1:{port}", "persistent://public/default/t", "p", timeout_s=2)
    assert "\n" not in str(caught.value)


def test_silent_broker_times_out_bounded() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        url = f"pulsar://127.0.0.1:{server.getsockname()[1]}"
        started = time.monotonic()
        with pytest.raises(RawProtocolError, match="no CONNECTED from"):
            RawProducer.open(url, "persistent://public/default/t", "p", timeout_s=0.5)
        assert time.monotonic() - started < 3


def test_tls_url_is_refused() -> None:
    with pytest.raises(RawProtocolError, match="only pulsar://HOST:PORT"):
        RawProducer.open("pulsar+ssl://h:6651", "t", "p", timeout_s=1)


def test_a_scenario_batch_with_its_highest_id_runs_through_the_driver(lite: PulsarLiteTarget, tmp_path: Path) -> None:
    """The driver's raw path on a real broker: ``publish`` with ``highest_sequence_id`` goes out as one batch, each
    message recorded with the send's ids and its batch index, received by ``pulsar-client``; the producer's other
    sends go alone through the same connection (pulsar-lite has no deduplication: nothing is judged a duplicate)."""
    scenario = parse_scenario(
        {
            "name": "raw-batch",
            "settings": {"drain_timeout_ms": 5000, "quiet_ms": 200, "drain_quiet_ms": 500},
            "steps": [
                {"do": "open", "consumer": "c1"},
                {"do": "publish", "count": 3, "keys": ["A"], "sequence_ids": [1, 2, 3], "highest_sequence_id": 3},
                {"do": "publish", "count": 1, "keys": ["B"], "sequence_ids": [4]},
                {"do": "wait_received", "count": 4},
            ],
        }
    )
    result = run_scenario(lite, scenario, seed=0, out_dir=tmp_path)
    read_trace(result.trace_path)  # the reader accepts the new fields
    events = [json.loads(line) for line in result.trace_path.read_text().splitlines()[1:]]
    publishes = [e for e in events if e["op"] == "publish"]
    assert [(e["seq"], e.get("send_seq"), e.get("highest_seq"), e["msg_id"].split(":")[3]) for e in publishes] == [
        (1, 1, 3, "0"),
        (2, 1, 3, "1"),
        (3, 1, 3, "2"),
        (4, None, None, "-1"),
    ]
    assert {e["uid"] for e in events if e["op"] == "receive"} == {"p1:1", "p1:2", "p1:3", "p1:4"}
    assert result.verdict is not None and result.verdict.valid, result.verdict.render()
