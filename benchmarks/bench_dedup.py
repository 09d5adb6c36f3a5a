"""How fast the deduplication model judges sends and replays a topic on recovery; prints figures.

Run: ``.venv/bin/python benchmarks/bench_dedup.py [--sends N] [--producers P]``. Pure CPU, single thread.
"""

from __future__ import annotations

import argparse
import time

from reference_model.dedup import DedupConfig, DedupDecision, MessageDeduplication


def _rate(count: int, seconds: float) -> str:
    return f"{count / seconds:,.0f}/s" if seconds > 0 else "inf"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sends", type=int, default=200_000)
    parser.add_argument("--producers", type=int, default=100)
    args = parser.parse_args(argv)
    names = [f"producer-{i}" for i in range(args.producers)]

    dedup = MessageDeduplication(DedupConfig())
    dedup.set_enabled(True, now_ns=0)
    log: list[tuple[tuple[int, int], str, int, int]] = []
    started = time.perf_counter()
    for i in range(args.sends):
        name = names[i % len(names)]
        seq = i // len(names)
        if dedup.is_duplicate(name, seq) is DedupDecision.NOT_DUP:
            position = (0, i)
            dedup.on_persisted(name, seq, -1, position)
            log.append((position, name, seq, -1))
    publish_s = time.perf_counter() - started

    started = time.perf_counter()
    dups = 0
    for i in range(args.sends):
        dups += dedup.is_duplicate(names[i % len(names)], i // len(names)) is DedupDecision.DUP
    judge_s = time.perf_counter() - started

    saved = dedup.snapshot()
    started = time.perf_counter()
    restarted = MessageDeduplication(DedupConfig())
    restarted.recover(None, log)
    replay_all_s = time.perf_counter() - started
    started = time.perf_counter()
    after = [e for e in log if saved.position is None or e[0] > saved.position]
    restarted2 = MessageDeduplication(DedupConfig())
    restarted2.recover(saved, after)
    replay_tail_s = time.perf_counter() - started
    assert restarted.pushed() == restarted2.pushed() == dedup.pushed()

    print(f"sends={args.sends} producers={args.producers} entries_interval=1000")
    print(f"publish path (is_duplicate + on_persisted): {publish_s * 1e3:.1f} ms  {_rate(args.sends, publish_s)}")
    print(f"re-send every id (all DUP={dups == args.sends}):   {judge_s * 1e3:.1f} ms  {_rate(args.sends, judge_s)}")
    print(f"recover, replay whole topic ({len(log)} entries):   {replay_all_s * 1e3:.1f} ms")
    print(f"recover from snapshot at {saved.position}, {len(after)} entries: {replay_tail_s * 1e3:.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
