"""Soak figures: sustained msg/s on pulsar-lite beside raw pulsar-client, and events/s recorded on the model.

Run: ``.venv/bin/python benchmarks/bench_soak.py [lite|model|both] [options]`` (default ``both``, short).

``lite``: the same load twice per round on one pulsar-lite broker started for the benchmark: the soak
generator's steps for one plan (no churn, no faults, sync sends as the soak does on pulsar-lite, ``--producers``
producers, ``--consumers`` Key_Shared consumers acknowledging at once, ``--messages`` messages over ``--keys``
keys in partition keys, ordering keys, both or none), once by ``keyshared soak`` (trace chunks and live check
in the sink process, client-log watch, recorder) and once replayed by a plain pulsar-client program
(:func:`raw_round`: the same consumers, producers and messages, nothing recorded).  Throughput is counted from
the first send to the last acknowledgement (from the trace's timestamps for the soak), so the soak's drain and
final check are not in it.  Each round prints both figures and their ratio (the harness cost); the order of
the two sides alternates from round to round.  Beside them, CPU time (user + system) per message in the same
window, read from ``/proc`` every 20 ms (:mod:`cpu_meter`): the raw client's process, and the soak's processes
(the clients' process, the trace sink, consumer processes if any), with the broker's apart; and the sink's CPU
over its whole life (start-up and the live check's catching up included).  On a machine shared with other
jobs throughput moves with the load, CPU-seconds per message much less: compare those across machines.

``model``: a soak of the reference model with churn and broker restarts, ``--model-duration`` of simulated
time at ``--model-rate`` messages per (simulated) second; prints events recorded per wall second and the
process's resident memory (RSS) each minute of wall time, with its peak so far: it must stay flat, since the
trace goes to disk in chunks and the live check keeps only what is outstanding.  The must-show run (at least
5M events in 10 minutes, RSS at 1, 5 and 10 minutes) is for a quiet machine:

    .venv/bin/python benchmarks/bench_soak.py model --model-duration 30m --model-rate 3000 --wall-limit 10m

(``--wall-limit`` stops the load after that much wall time, then drains and checks.)  Figures vary with the
machine and its load (printed); compare them on one quiet machine only.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import pulsar
from cpu_meter import CpuMeter

from conformance.scenarios import Open, Publish
from conformance.soak import SoakGenerator, SoakPlan, parse_duration
from conformance.trace.chunks import read_chunks
from pytest_keyshared.driver.handles import PROP_KEY, PROP_SEQ, PROP_UID
from pytest_keyshared.driver.pulsar_client import delivery_from_message
from pytest_keyshared.soak import SoakStatus, run_soak
from pytest_keyshared.targets import open_target
from pytest_keyshared.targets.pulsar_lite import PulsarLiteTarget
from reference_model.hashing import sticky_key


def rss_mb(field: str = "VmRSS") -> float:
    """The process's resident memory now (``VmRSS``), or its peak so far (``VmHWM``), in MB."""
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


def lite_plan(args: argparse.Namespace, seed: int) -> SoakPlan:
    """The load both sides of a round do: no churn, no faults, sync sends, consumers acknowledging at once."""
    return SoakPlan(
        duration_s=None,
        messages=args.messages,
        rate=1_000_000,  # as fast as the broker takes them
        producers=args.producers,
        consumers=args.consumers,
        keys=args.keys,
        churn_per_min=0,
        behaviours=("ack",),
        publish="sync",
        seed=seed,
        receiver_queue=args.receiver_queue,
    )


def soak_round(target: PulsarLiteTarget, out: Path, plan: SoakPlan) -> tuple[float, int, int]:
    """A churn-free, fault-free soak: seconds from the first send to the last acknowledgement (per its trace),
    and those two instants (monotonic ns)."""
    result = run_soak(target, plan, out_dir=out)
    first_send = last_ack = None
    for event in read_chunks(result.trace_dir)[1]:
        if event.op.value == "publish" and first_send is None:
            first_send = event.extra.get("t0", event.t)
        elif event.op.value == "ack":
            last_ack = event.t
    if result.counters.acked_expected != plan.messages or first_send is None or last_ack is None:
        raise SystemExit(
            f"soak round: {result.counters.acked_expected} of {plan.messages} acknowledged; {result.notes}"
        )
    return float(last_ack - first_send) / 1e9, int(first_send), int(last_ack)


def raw_round(target: PulsarLiteTarget, topic: str, plan: SoakPlan) -> tuple[float, int, int]:
    """The same load with pulsar-client alone: the soak generator's steps for ``plan``, replayed.

    The same consumers (each on its own client and thread, receiving with the driver's 50 ms poll and
    acknowledging at once, with the plan's receiver queue), the same producers (one client, one producer per
    name), the same messages in the same order (payload, properties, partition or ordering key, keyless).
    Seconds from the first send to the last acknowledgement, and those two instants (monotonic ns).
    """
    logger = pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)
    url = f"persistent://public/default/{topic}"
    clients: list[pulsar.Client] = []
    consumers: list[pulsar.Consumer] = []
    producers: dict[str, pulsar.Producer] = {}
    producer_client = pulsar.Client(target.service_url, operation_timeout_seconds=10, logger=logger)
    acked = [0]
    last_ack_ns = [0]
    lock = threading.Lock()
    all_acked = threading.Event()
    stop = threading.Event()
    messages = plan.messages or 0

    def consume(consumer: pulsar.Consumer) -> None:
        while not stop.is_set():
            try:
                msg = consumer.receive(timeout_millis=50)
            except pulsar.Timeout:
                continue
            delivery_from_message(msg)  # what any application reads of a message (the soak records these)
            consumer.acknowledge(msg)
            with lock:
                acked[0] += 1
                if acked[0] >= messages:
                    last_ack_ns[0] = last_ack_ns[0] or time.monotonic_ns()
                    all_acked.set()

    threads: list[threading.Thread] = []
    next_seq: dict[str, int] = {}
    started: int | None = None
    generator = SoakGenerator(plan, can_crash=False, can_restart=False)
    for timed in generator:
        step = timed.step
        if isinstance(step, Open):
            assert step.behaviour.kind == "ack", step
            client = pulsar.Client(target.service_url, operation_timeout_seconds=10, logger=logger)
            for _ in range(len(consumers)):  # distinct consumer ids across clients: pulsar-lite keys consumers by them
                client.subscribe(f"non-persistent://public/default/{topic}-burn", f"burn-{len(consumers)}")
            consumer = client.subscribe(
                url,
                "ks",
                consumer_type=pulsar.ConsumerType.KeyShared,
                consumer_name=step.consumer,
                receiver_queue_size=step.receiver_queue or plan.receiver_queue,
                initial_position=pulsar.InitialPosition.Earliest,
            )
            clients.append(client)
            consumers.append(consumer)
            threads.append(threading.Thread(target=consume, args=(consumer,), daemon=True))
            threads[-1].start()
        elif isinstance(step, Publish):
            producer = producers.get(step.producer)
            if producer is None:
                producer = producer_client.create_producer(url, producer_name=step.producer, send_timeout_millis=5000)
                producers[step.producer] = producer
            if started is None:
                started = time.monotonic_ns()
            for key in step.keys.keys()[: step.count]:
                seq = next_seq.get(step.producer, 1)
                next_seq[step.producer] = seq + 1
                uid = f"{step.producer}:{seq}"
                kwargs: dict[str, str] = {}
                if step.key_field == "none":
                    key = sticky_key(producer_name=step.producer, sequence_id=seq, version="4.0").decode()
                elif step.key_field == "partition_key":
                    kwargs["partition_key"] = key
                elif step.key_field == "ordering_key":
                    kwargs["ordering_key"] = key
                else:
                    kwargs.update(ordering_key=key, partition_key=f"pk-{key}")
                producer.send(
                    f"{uid}|{key}|".ljust(16, ".").encode(),
                    properties={PROP_UID: uid, PROP_SEQ: str(seq), PROP_KEY: key},
                    sequence_id=seq,
                    **kwargs,
                )
            if generator.published >= messages:
                break
    finished = all_acked.wait(120)
    stop.set()
    for thread in threads:
        thread.join()
    for client in [*clients, producer_client]:
        client.close()
    if not finished:
        raise SystemExit(f"raw round: only {acked[0]} of {messages} acknowledged within 120 s")
    assert started is not None
    return (last_ack_ns[0] - started) / 1e9, started, last_ack_ns[0]


#: The processes of the soak's side whose CPU is the harness's (the raw side has only ``clients``).
HARNESS_ROLES = ("clients", "trace sink", "consumer processes", "checker process", "other children")


@dataclasses.dataclass
class Side:
    """One side's figures over the rounds: seconds, and CPU-seconds per process role in the load window."""

    seconds: list[float] = dataclasses.field(default_factory=list)
    cpu: list[dict[str, float]] = dataclasses.field(default_factory=list)

    def harness_cpu(self, r: int) -> float:
        return sum(self.cpu[r].get(role, 0.0) for role in HARNESS_ROLES)


def bench_lite(args: argparse.Namespace) -> None:
    raw, soak = Side(), Side()
    sink_life: list[float] = []
    loads: list[float] = []
    load_before = os.getloadavg()[0]
    with (
        tempfile.TemporaryDirectory(prefix="bench-soak-") as tmp,
        open_target("pulsar-lite", artifacts_dir=Path(tmp) / "target") as target,
    ):
        assert isinstance(target, PulsarLiteTarget)
        with CpuMeter(lambda: {} if target.pid is None else {target.pid: "broker"}) as meter:
            warm = dataclasses.replace(lite_plan(args, 99), messages=200)
            raw_round(target, "bench-warm", warm)  # warm-ups, not counted
            soak_round(target, Path(tmp) / "warm", warm)
            for r in range(args.rounds):  # the same plan (seed) on both sides of a round; the order alternates
                plan = lite_plan(args, r)
                for side in ("raw", "soak") if r % 2 == 0 else ("soak", "raw"):
                    if side == "raw":
                        seconds, t0, t1 = raw_round(target, f"bench-raw-{r}", plan)
                        meter.sample()
                        time.sleep(2 * meter.interval_s)  # a sample after the window's end
                        raw.seconds.append(seconds)
                        raw.cpu.append(meter.between(t0, t1))
                    else:
                        since = time.monotonic_ns()
                        seconds, t0, t1 = soak_round(target, Path(tmp) / f"soak{r}", plan)
                        soak.seconds.append(seconds)
                        soak.cpu.append(meter.between(t0, t1))
                        sink_life.append(meter.lifetime("trace sink", since))
                loads.append(os.getloadavg()[0])
    report_lite(args, raw, soak, sink_life, loads, load_before)


def report_lite(
    args: argparse.Namespace, raw: Side, soak: Side, sink_life: list[float], loads: list[float], load_before: float
) -> None:
    n = args.messages
    us = 1e6 / n  # CPU-seconds of a round -> microseconds per message
    print(
        f"pulsar-lite, {n} messages over {args.keys} keys from {args.producers} producers, {args.consumers} Key_Shared"
        f" consumers acknowledging at once (receiver queue {args.receiver_queue}), sync sends; the soak generator's"
        " load on both sides.  CPU: user+sys per message from the first send to the last acknowledgement"
    )
    for r in range(args.rounds):
        rs, ss = raw.seconds[r], soak.seconds[r]
        rc, sc = raw.cpu[r], soak.cpu[r]
        parts = ", ".join(f"{role} {sc[role] * us:.0f}" for role in HARNESS_ROLES if sc.get(role))
        print(
            f"  round {r + 1}: raw pulsar-client {n / rs:7,.0f} msg/s, keyshared soak {n / ss:7,.0f} msg/s:"
            f" soak/raw time {ss / rs:.3f} (harness cost {100 * (ss / rs - 1):+.1f}%), load {loads[r]:.1f}"
        )
        print(
            f"           CPU us/msg: raw client {raw.harness_cpu(r) * us:.0f} (broker {rc.get('broker', 0) * us:.0f});"
            f" soak {soak.harness_cpu(r) * us:.0f} ({parts}; broker {sc.get('broker', 0) * us:.0f});"
            f" the sink's whole life {sink_life[r] * us:.0f}"
        )
    med = statistics.median
    raw_s, soak_s = med(raw.seconds), med(soak.seconds)
    paired = med(s / r for s, r in zip(soak.seconds, raw.seconds, strict=True))
    print(f"  raw pulsar-client : {n / raw_s:8,.0f} msg/s  (median of {args.rounds}: {raw_s:.2f}s; rounds"
          f" {_fmt(raw.seconds)})")  # fmt: skip
    print(f"  keyshared soak    : {n / soak_s:8,.0f} msg/s  (median of {args.rounds}: {soak_s:.2f}s; rounds"
          f" {_fmt(soak.seconds)})")  # fmt: skip
    total = sum(soak.seconds) / sum(raw.seconds)
    print(f"  harness cost      : {100 * (paired - 1):+.1f}% time per message, median of the per-round ratios"
          f" ({100 * (total - 1):+.1f}% over all rounds together; target: under 20%)")  # fmt: skip
    rounds = range(args.rounds)
    raw_cpu = med(raw.harness_cpu(r) * us for r in rounds)
    soak_cpu = med(soak.harness_cpu(r) * us for r in rounds)
    broker = [med(side.cpu[r].get("broker", 0.0) * us for r in rounds) for side in (raw, soak)]
    whole = med(
        (soak.harness_cpu(r) + soak.cpu[r].get("broker", 0.0)) / (raw.harness_cpu(r) + raw.cpu[r].get("broker", 0.0))
        for r in rounds
    )
    by_role = ", ".join(
        f"{role} {med(soak.cpu[r].get(role, 0.0) * us for r in rounds):.0f}"
        for role in HARNESS_ROLES
        if any(soak.cpu[r].get(role) for r in rounds)
    )
    print(f"  CPU per message   : raw pulsar-client {raw_cpu:.0f} us, keyshared soak {soak_cpu:.0f} us ({by_role});"
          f" medians; the sink's whole life {med(sink_life) * us:.0f} us")  # fmt: skip
    print(f"  broker CPU        : {broker[0]:.0f} us/msg beside the raw client, {broker[1]:.0f} beside the soak;"
          f" all processes, soak/raw: {whole:.3f} ({100 * (whole - 1):+.1f}%, median of the rounds)")  # fmt: skip
    print(f"  machine load      : {load_before:.1f} before, {os.getloadavg()[0]:.1f} after ({os.cpu_count()} CPUs)")


def bench_model(args: argparse.Namespace) -> None:
    duration = parse_duration(args.model_duration)
    wall_limit = parse_duration(args.wall_limit) if args.wall_limit else None
    plan = SoakPlan(
        duration_s=duration,
        rate=args.model_rate,
        churn_per_min=args.model_churn,
        faults=("restart",),
        seed=1,
    )
    stop = threading.Event()
    samples: list[tuple[float, float, int]] = []  # (wall s, RSS MB, events)
    started = time.monotonic()
    peak = [0.0]
    minute = [1]
    load_done = [0.0, 0]
    per_minute: list[tuple[int, float, int]] = []  # (minute, peak RSS MB so far, events)

    def on_status(status: SoakStatus) -> None:
        elapsed = time.monotonic() - started
        rss = rss_mb()
        peak[0] = max(peak[0], rss, rss_mb("VmHWM"))
        samples.append((elapsed, rss, status.events))
        if status.phase == "load":
            load_done[0], load_done[1] = elapsed, status.events
        if elapsed >= 60 * minute[0]:
            previous = per_minute[-1][2] if per_minute else 0
            per_minute.append((minute[0], peak[0], status.events))
            print(
                f"  {minute[0]:3d} min: RSS {rss:7.1f} MB (peak {peak[0]:.1f}), {status.events:,} events"
                f" ({(status.events - previous) / 60:,.0f}/s this minute), load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
            minute[0] += 1
        if wall_limit is not None and elapsed >= wall_limit:
            stop.set()

    load_before = os.getloadavg()[0]
    print(
        f"model (Pulsar 4.0, pip379): {duration:g}s simulated at {args.model_rate:g} msg/s, churn"
        f" {args.model_churn:g}/min, broker restarts; RSS at start {rss_mb():.1f} MB",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="bench-soak-model-") as tmp:
        with open_target("model", artifacts_dir=Path(tmp) / "target") as target:
            result = run_soak(target, plan, out_dir=Path(tmp) / "soak", status=on_status, stop=stop)
        total = time.monotonic() - started
        size = sum(p.stat().st_size for p in result.trace_dir.iterdir()) / 1e6
    load_s, load_events = load_done
    print(f"  events recorded   : {result.events:,} in {total:.1f}s wall", end="")
    print(f" ({result.events / total:,.0f} events/s overall, drain and final check included)")
    if load_s:
        print(f"  during the load   : {load_events / load_s:,.0f} events/s (generator, model, live check, chunks)")
    print(f"  trace chunks      : {size:.1f} MB on disk")
    print(f"  verdict           : {'VALID' if result.verdict and result.verdict.valid else 'INVALID'}"
          f" {dict((k, n) for k, n in result.verdict.counts.items() if n) if result.verdict else ''}")  # fmt: skip
    print(f"  faults            : {result.faults}; live violations {result.live_violations}")
    marks = [f"{m} min {p:.0f} MB" for m, p, _ in per_minute if m in (1, 5, 10)]
    if marks:
        print(f"  peak RSS at       : {', '.join(marks)}")
    print(f"  RSS               : peak {peak[0]:.1f} MB; " + ", ".join(
        f"{s[0]:.0f}s {s[1]:.0f} MB" for s in samples[:: max(1, len(samples) // 8)]))  # fmt: skip
    print(f"  machine load      : {load_before:.1f} before, {os.getloadavg()[0]:.1f} after ({os.cpu_count()} CPUs)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("which", nargs="?", default="both", choices=("lite", "model", "both"))
    parser.add_argument("--messages", type=int, default=3000)
    parser.add_argument("--keys", type=int, default=50)
    parser.add_argument("--consumers", type=int, default=2)
    parser.add_argument("--producers", type=int, default=2)
    parser.add_argument("--receiver-queue", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--model-duration", default="60s", help="simulated time of the model soak")
    parser.add_argument("--model-rate", type=float, default=3000.0)
    parser.add_argument("--model-churn", type=float, default=30.0)
    parser.add_argument("--wall-limit", default=None, help="stop the model load after this much wall time")
    args = parser.parse_args(argv)
    if args.which in ("lite", "both"):
        bench_lite(args)
    if args.which in ("model", "both"):
        bench_model(args)
    return 0


def _fmt(values: list[float]) -> str:
    return ", ".join(f"{v:.2f}s" for v in values)


if __name__ == "__main__":
    raise SystemExit(main())
