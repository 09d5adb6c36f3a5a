"""Soundness sweep of the case-level stats judgements over generated programs: a correct broker must give none.

``stats_mismatch`` (the subscription's draining figures against its consumers', positions as ``ledgerId:entryId``)
and ``dedup_snapshot_behind`` (the ``pulsar.dedup`` cursor against the entries stored since the last restart, and
after a quiet time-based interval) are judged by the cases that record the admin API's figures
(``record:subscription-stats``, ``record:dedup-cursor``).  This runs seeded generated programs, with every workload
dimension (restarts, crashes, batching, deduplication with a snapshot every 2 entries, trims, ...), on model targets
with both recordings on, and counts the programs either judgement flags: the model is the correct broker here, so
every one counted is a false positive of the rule (or a model bug) to explain.

    python benchmarks/stats_oracle_sweep.py                                  # 300 seeds, 8 release lines, ~4 min
    python benchmarks/stats_oracle_sweep.py --targets model,model:classic --seeds 1000

Exit status: 0 when nothing is flagged, 1 otherwise, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from conformance.cases._support import dedup_snapshot_problems, subscription_stats_problems  # noqa: E402
from conformance.generated.program import GeneratorOptions, program_from_seed  # noqa: E402
from pytest_keyshared.driver.run import run_scenario  # noqa: E402
from pytest_keyshared.targets import make_target  # noqa: E402
from reference_model.errors import KeySharedError  # noqa: E402

DEFAULT_TARGETS = "model:2.8,model:2.10,model:3.0,model:3.3,model:4.0,model:4.1,model:4.0:classic,model:5.0"
RECORD = ("record:subscription-stats", "record:dedup-cursor")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default=DEFAULT_TARGETS, help="comma-separated model targets")
    parser.add_argument("--seeds", type=int, default=300, help="programs per target: seeds 0 .. N-1 (default 300)")
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error("--seeds must be at least 1")
    options = GeneratorOptions(crash=True, restart=True, ack_timeout=True, delayed=True, expiry=True, gaps=True)
    runs = flagged = dedup_recorded = 0
    with tempfile.TemporaryDirectory(prefix="keyshared-stats-sweep-") as tmp:
        targets = []
        for spec in (t.strip() for t in args.targets.split(",") if t.strip()):
            try:
                targets.append((spec, make_target(spec, artifacts_dir=tmp)))
            except KeySharedError as exc:
                parser.error(f"--targets: {exc}")
            if not spec.startswith("model"):
                parser.error(f"--targets: {spec} is not a model target (the model is the correct broker here)")
        for spec, target in targets:
            for seed in range(args.seeds):
                program = program_from_seed(seed, options=options)
                program = dataclasses.replace(program, tags=(*program.tags, *RECORD))
                out = Path(tmp) / f"{spec}-{seed}"
                result = run_scenario(target, program, seed=seed, out_dir=out, live_check=False)
                runs += 1
                text = Path(result.trace_path).read_text(encoding="utf-8")
                dedup_recorded += '"dedup_cursor"' in text and "brokerDeduplicationEntriesInterval" in text
                problems = subscription_stats_problems(result.trace_path) + dedup_snapshot_problems(result.trace_path)
                if problems:
                    flagged += 1
                    print(f"{spec} seed {seed}: {problems[0]}")
    print(
        f"{runs} programs, {flagged} flagged; {dedup_recorded} recorded the deduplication cursor with an entries"
        " interval set"
    )
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main())
