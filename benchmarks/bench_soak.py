"""Soak figures: sustained msg/s on pulsar-lite beside raw pulsar-client, and events/s recorded on the model.

Run: ``.venv/bin/python benchmarks/bench_soak.py [lite|model|both] [options]`` (default ``both``, short).

``lite``: the same load twice on one pulsar-lite broker started for the benchmark: C Key_Shared consumers
acknowledging at once, N messages sent one at a time (sync sends, as the soak does on pulsar-lite) over K keys;
once by ``keyshared soak`` (no churn, no faults, trace chunks, live check in its own process), once by a plain
pulsar-client loop (``bench_driver.raw_round``).  Throughput is counted from the first send to the last
acknowledgement (from the trace's timestamps for the soak), so the soak's drain and final check are printed
apart.  Rounds alternate; medians are reported.

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
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_driver import raw_round

from conformance.soak import SoakPlan, parse_duration
from conformance.trace.chunks import read_chunks
from pytest_keyshared.soak import SoakStatus, run_soak
from pytest_keyshared.targets import open_target
from pytest_keyshared.targets.pulsar_lite import PulsarLiteTarget


def rss_mb(field: str = "VmRSS") -> float:
    """The process's resident memory now (``VmRSS``), or its peak so far (``VmHWM``), in MB."""
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


RECEIVER_QUEUE = [1000]  # the driver's default receiver queue, as the raw loop's client default


def soak_round(target: PulsarLiteTarget, out: Path, seed: int, messages: int, keys: int, consumers: int) -> float:
    """Seconds from the first send to the last acknowledgement of a churn-free, fault-free soak (per its trace)."""
    plan = SoakPlan(
        duration_s=None,
        messages=messages,
        rate=1_000_000,
        consumers=consumers,
        keys=keys,
        churn_per_min=0,
        behaviours=("ack",),
        publish="sync",
        seed=seed,
        receiver_queue=RECEIVER_QUEUE[0],
    )
    result = run_soak(target, plan, out_dir=out)
    first_send = last_ack = None
    for event in read_chunks(result.trace_dir)[1]:
        if event.op.value == "publish" and first_send is None:
            first_send = event.extra.get("t0", event.t)
        elif event.op.value == "ack":
            last_ack = event.t
    if result.counters.acked_expected != messages or first_send is None or last_ack is None:
        raise SystemExit(f"soak round: {result.counters.acked_expected} of {messages} acknowledged; {result.notes}")
    return (last_ack - first_send) / 1e9


def bench_lite(args: argparse.Namespace) -> None:
    raw_s: list[float] = []
    soak_s: list[float] = []
    load_before = os.getloadavg()[0]
    with (
        tempfile.TemporaryDirectory(prefix="bench-soak-") as tmp,
        open_target("pulsar-lite", artifacts_dir=Path(tmp) / "target") as target,
    ):
        assert isinstance(target, PulsarLiteTarget)
        raw_round(target, "bench-warm", 200, args.keys, args.consumers)  # warm-up, not counted
        for r in range(args.rounds):
            raw_s.append(raw_round(target, f"bench-raw-{r}", args.messages, args.keys, args.consumers))
            soak_s.append(soak_round(target, Path(tmp) / f"soak{r}", r, args.messages, args.keys, args.consumers))
    raw, soak = statistics.median(raw_s), statistics.median(soak_s)
    n = args.messages
    print(f"pulsar-lite, {n} messages over {args.keys} keys, {args.consumers} Key_Shared consumers, sync sends")
    print(f"  raw pulsar-client : {n / raw:8,.0f} msg/s  (median of {args.rounds}: {raw:.2f}s; rounds {_fmt(raw_s)})")
    print(f"  keyshared soak    : {n / soak:8,.0f} msg/s  (median of {args.rounds}: {soak:.2f}s;", end="")
    print(f" rounds {_fmt(soak_s)})")
    paired = statistics.median(s / r for s, r in zip(soak_s, raw_s, strict=True))
    print(f"  harness cost      : {100 * (soak / raw - 1):+.1f}% time per message (target: under 20%)")
    print(f"  paired rounds     : {100 * (paired - 1):+.1f}% (median of per-round soak/raw ratios)")
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
    parser.add_argument("--rounds", type=int, default=3)
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
