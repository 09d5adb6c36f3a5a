"""What the harness costs: the driver's publish-and-consume throughput beside raw pulsar-client, same broker.

Run: ``.venv/bin/python benchmarks/bench_driver.py [--messages N] [--keys K] [--consumers C] [--rounds R]``.

Both sides do the same work against one pulsar-lite broker started for the benchmark: C Key_Shared
consumers, each on its own client and thread, receive and acknowledge at once while one producer sends N
messages over K keys, one at a time (sync sends, as the driver does on pulsar-lite), with the same payload
and properties.  The raw side is a plain loop over ``pulsar-client``; the driver side is ``run_scenario``
with trace recording, the live checker (in a process of its own) and the recording discipline.

Throughput is counted from the first send to the last acknowledgement (from the trace's own timestamps for
the driver), so the fixed quiet periods the driver waits out at the end (``wait_quiet``, the drain's settle
time) are excluded; they are printed separately.  Rounds alternate raw and driver on fresh topics; the
median round is reported, and the median of the per-round ratios.  Figures vary with the machine and with
the load of everything else running on it (printed below); compare them on one quiet machine only.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path

import pulsar

from conformance.scenarios import KeySet, Open, Publish, Scenario, Settings, WaitReceived
from pytest_keyshared.driver import run_scenario
from pytest_keyshared.driver.handles import PROP_KEY, PROP_SEQ, PROP_UID
from pytest_keyshared.targets import open_target
from pytest_keyshared.targets.pulsar_lite import PulsarLiteTarget


def raw_round(target: PulsarLiteTarget, topic: str, messages: int, keys: int, consumers: int) -> float:
    """Seconds from the first send to the last acknowledgement, with pulsar-client alone."""
    logger = pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)
    clients = []
    subs = []
    for n in range(consumers):
        client = pulsar.Client(target.service_url, operation_timeout_seconds=10, logger=logger)
        for _ in range(n):  # distinct consumer ids across clients: pulsar-lite keys consumers by them
            client.subscribe(f"non-persistent://public/default/{topic}-burn", f"burn-{n}")
        subs.append(
            client.subscribe(
                f"persistent://public/default/{topic}",
                "ks",
                consumer_type=pulsar.ConsumerType.KeyShared,
                consumer_name=f"c{n}",
                initial_position=pulsar.InitialPosition.Earliest,
            )
        )
        clients.append(client)
    acked = [0]
    lock = threading.Lock()
    all_acked = threading.Event()
    stop = threading.Event()

    def consume(consumer: pulsar.Consumer) -> None:
        while not stop.is_set():
            try:
                msg = consumer.receive(timeout_millis=50)
            except pulsar.Timeout:
                continue
            msg.properties()
            msg.message_id()
            consumer.acknowledge(msg)
            with lock:
                acked[0] += 1
                if acked[0] >= messages:
                    all_acked.set()

    threads = [threading.Thread(target=consume, args=(c,), daemon=True) for c in subs]
    for thread in threads:
        thread.start()
    producer_client = pulsar.Client(target.service_url, operation_timeout_seconds=10, logger=logger)
    producer = producer_client.create_producer(f"persistent://public/default/{topic}", producer_name="p1")
    width = max(2, len(str(keys - 1)))
    started = time.monotonic()
    for seq in range(1, messages + 1):
        key = f"key-{(seq - 1) % keys:0{width}d}"
        uid = f"p1:{seq}"
        producer.send(
            f"{uid}|{key}|".ljust(16, ".").encode(),
            properties={PROP_UID: uid, PROP_SEQ: str(seq), PROP_KEY: key},
            partition_key=key,
            sequence_id=seq,
        )
    finished = all_acked.wait(120)
    elapsed = time.monotonic() - started
    stop.set()
    for thread in threads:
        thread.join()
    for client in [*clients, producer_client]:
        client.close()
    if not finished:
        raise SystemExit(f"raw round: only {acked[0]} of {messages} acknowledged within 120 s")
    return elapsed


def driver_round(
    target: PulsarLiteTarget, out: Path, seed: int, messages: int, keys: int, consumers: int
) -> tuple[float, float]:
    """(seconds from the first send to the last ack, per the trace; wall seconds of the whole run)."""
    scenario = Scenario(
        name="bench",
        steps=(
            *(Open(consumer=f"c{n}") for n in range(consumers)),
            Publish(count=messages, keys=KeySet(count=keys)),
            WaitReceived(count=messages, timeout_ms=120_000),
        ),
        settings=Settings(quiet_ms=200),
    )
    started = time.monotonic()
    result = run_scenario(target, scenario, seed=seed, out_dir=out)
    wall = time.monotonic() - started
    first_send = last_ack = None
    with result.trace_path.open() as fh:
        next(fh)
        for line in fh:
            event = json.loads(line)
            if event["op"] == "publish" and first_send is None:
                first_send = event["t0"]
            elif event["op"] == "ack":
                last_ack = event["t"]
    if result.counters.acked_expected != messages or first_send is None or last_ack is None:
        raise SystemExit(f"driver round: {result.counters.acked_expected} of {messages} acknowledged; {result.steps}")
    return (last_ack - first_send) / 1e9, wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=3000)
    parser.add_argument("--keys", type=int, default=50)
    parser.add_argument("--consumers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    load_before = os.getloadavg()[0]
    raw_s: list[float] = []
    driver_s: list[float] = []
    walls: list[float] = []
    with (
        tempfile.TemporaryDirectory(prefix="bench-driver-") as tmp,
        open_target("pulsar-lite", artifacts_dir=Path(tmp) / "target") as target,
    ):
        assert isinstance(target, PulsarLiteTarget)
        # one warm-up of each, not counted
        raw_round(target, "bench-warm", 200, args.keys, args.consumers)
        driver_round(target, Path(tmp) / "warm", 10_000, 200, args.keys, args.consumers)
        for r in range(args.rounds):
            raw_s.append(raw_round(target, f"bench-raw-{r}", args.messages, args.keys, args.consumers))
            span, wall = driver_round(target, Path(tmp) / f"run{r}", r, args.messages, args.keys, args.consumers)
            driver_s.append(span)
            walls.append(wall)
    load_after = os.getloadavg()[0]
    raw = statistics.median(raw_s)
    drv = statistics.median(driver_s)
    n = args.messages
    print(f"pulsar-lite, {n} messages over {args.keys} keys, {args.consumers} Key_Shared consumers, sync sends")
    print(f"  raw pulsar-client : {n / raw:8,.0f} msg/s  (median of {args.rounds}: {raw:.2f}s; rounds {_fmt(raw_s)})")
    print(
        f"  driver            : {n / drv:8,.0f} msg/s  (median of {args.rounds}: {drv:.2f}s; rounds {_fmt(driver_s)})"
    )
    paired = statistics.median(d / r for d, r in zip(driver_s, raw_s, strict=True))
    print(f"  harness cost      : {100 * (drv / raw - 1):+.1f}% time per message (target: under 20%)")
    print(f"  paired rounds     : {100 * (paired - 1):+.1f}% (median of per-round driver/raw ratios)")
    print(
        f"  machine load      : {load_before:.1f} before, {load_after:.1f} after"
        f" (1-min load average, {os.cpu_count()} CPUs)"
    )
    print(f"  driver run, wall  : {statistics.median(walls):.2f}s incl. open, quiet waits and the drain")
    return 0


def _fmt(values: list[float]) -> str:
    return ", ".join(f"{v:.2f}s" for v in values)


if __name__ == "__main__":
    raise SystemExit(main())
