"""Faults on a real broker: a crashed consumer stays dead, a stalled broker ends in a saved trace and an
``undelivered`` verdict within the run's bounds, an interrupted run leaves nothing running."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from conformance.scenarios import Behaviour, KeySet, Open, Publish, Resume, Scenario, Settings, WaitQuiet, load_scenario
from pytest_keyshared.driver import Progress, run_scenario
from pytest_keyshared.targets import open_target
from pytest_keyshared.targets.pulsar_lite import PulsarLiteTarget

pytestmark = pytest.mark.broker


def consumer_processes() -> list[int]:
    """Our children running the crashable-consumer program."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmdline = fh.read()
            with open(f"/proc/{entry}/stat") as fh:
                stat = fh.read().split()
        except OSError:
            continue
        if b"pytest_keyshared.driver.consumer_process" in cmdline and int(stat[3]) == os.getpid() and stat[2] != "Z":
            found.append(int(entry))
    return found


def test_a_crashed_consumer_process_is_gone_and_its_messages_move(lite: PulsarLiteTarget, tmp_path: Path) -> None:
    scenario = Scenario(
        name="crash-small",
        steps=(
            Open(consumer="c1", behaviour=Behaviour("hold")),
            Publish(count=5, keys=KeySet(count=5)),
            WaitQuiet(),
            Open(consumer="c2"),
            load_scenario("crash-while-pending").steps[4],  # crash c1
            WaitQuiet(),
        ),
    )
    result = run_scenario(lite, scenario, seed=0, out_dir=tmp_path)
    assert consumer_processes() == []
    trace = [json.loads(line) for line in result.trace_path.read_text().splitlines()[1:]]
    redelivered = [e for e in trace if e["op"] == "receive" and e["consumer"] == "c2" and e["redelivery_count"] > 0]
    assert redelivered  # the broker noticed the dead connection at once and moved c1's messages
    assert "key_overlap" not in result.violation_kinds()


def test_a_stalled_broker_ends_in_a_saved_trace_and_an_undelivered_verdict(tmp_path: Path) -> None:
    """SIGSTOP freezes the broker mid-run; every wait is bounded, so the run ends and says what is missing."""
    scenario = Scenario(
        name="stall",
        steps=(
            Open(consumer="c1", receiver_queue=1, paused=True),
            Publish(count=20, keys=KeySet(count=4)),
            WaitQuiet(quiet_ms=200),
            Resume(consumer="c1"),
            WaitQuiet(quiet_ms=200),
        ),
        settings=Settings(drain_quiet_ms=800, drain_timeout_ms=5000, step_timeout_ms=3000, send_timeout_ms=1000),
    )
    with open_target("pulsar-lite", artifacts_dir=tmp_path / "target", options={"operation_timeout_s": 2}) as target:
        assert isinstance(target, PulsarLiteTarget) and target.pid is not None
        pid = target.pid

        def freeze_before_resume(progress: Progress) -> None:
            if progress.label == "resume" and not progress.final:
                os.kill(pid, signal.SIGSTOP)

        started = time.monotonic()
        try:
            result = run_scenario(target, scenario, seed=0, out_dir=tmp_path / "run", progress=freeze_before_resume)
        finally:
            os.kill(pid, signal.SIGCONT)
        took = time.monotonic() - started
    assert took < 30
    assert result.drained and result.verdict is not None
    assert "undelivered" in result.violation_kinds() and not result.verdict.valid
    end = json.loads(result.trace_path.read_text().splitlines()[-1])
    assert end["op"] == "end" and end["drained"] is True and end["acked"] < end["expected"] == 20


def test_an_interrupted_run_stops_its_consumers_and_its_broker(tmp_path: Path) -> None:
    def interrupt(progress: Progress) -> None:
        if progress.label == "crash":
            raise KeyboardInterrupt

    pid = None
    with pytest.raises(KeyboardInterrupt), open_target("pulsar-lite", artifacts_dir=tmp_path / "t") as target:
        pid = target.pid  # type: ignore[attr-defined]
        run_scenario(target, load_scenario("crash-while-pending"), seed=0, out_dir=tmp_path / "run", progress=interrupt)
    assert consumer_processes() == []
    assert pid is not None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    end = json.loads((tmp_path / "run" / "trace.jsonl").read_text().splitlines()[-1])
    assert end["op"] == "end" and end["drained"] is False and end["interrupted"] is True
    assert (tmp_path / "run" / "verdict.json").exists()


def test_a_consumer_process_acks_one_way_and_a_failed_ack_loses_no_message(
    lite: PulsarLiteTarget, tmp_path: Path
) -> None:
    """Acknowledgements to a consumer process are one-way (no round trip each); one that fails comes back
    at the next acknowledgement, and a receive in between still hands its message over."""
    import pulsar

    from pytest_keyshared.driver.consumer_process import ConsumerProcessError, ProcessConsumer
    from pytest_keyshared.driver.handles import ConsumerSpec, Delivery

    topic = "persistent://public/default/process-acks"
    spec = ConsumerSpec(topic, "ks", "c1", "AUTO_SPLIT", False, (), receiver_queue=10, nack_delay_ms=200)
    consumer = ProcessConsumer(
        spec, service_url=lite.service_url, operation_timeout_s=10, log_path=tmp_path / "c.log", burn_ids=0,
        burn_topic="non-persistent://public/default/process-acks-burn", burn_tag="t",
    )  # fmt: skip
    client = pulsar.Client(lite.service_url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        producer = client.create_producer(topic)
        for n in range(3):
            producer.send(f"m{n}".encode(), partition_key="k")
        first = consumer.receive(5_000)
        assert first is not None
        consumer.acknowledge(first)  # one-way
        bogus = Delivery(
            key="k", msg_id="0:999:-1:-1", uid=None, redelivery_count=0, producer=None, seq=None, token=999
        )
        consumer.acknowledge(bogus)  # fails in the child (no such message), reported later
        second = consumer.receive(5_000)
        assert second is not None and second.msg_id != first.msg_id  # not lost to the failure's line
        with pytest.raises(ConsumerProcessError, match="KeyError"):
            consumer.acknowledge(second)  # sent, then the earlier failure is raised
        third = consumer.receive(5_000)
        assert third is not None and third.msg_id not in (first.msg_id, second.msg_id)
        consumer.acknowledge(third)
    finally:
        consumer.close()
        client.close()
