"""Detection power of the conformance suite, measured: run it against mutants of the reference model.

Each mutant (``benchmarks/mutants.py``) is a plausible broker bug planted in the model by a monkeypatch.  For
every mutant this runs ``pytest -p pytest_keyshared --pyargs conformance --keyshared-target=<model spec>`` in a
fresh process with the mutant applied (``mutation_plugin``), and compares the failing cases with those of the
unmutated model (the baseline of that target): a mutant is *killed* when some case that passes on the
baseline fails on it.  It prints each mutant's fate, the kill rate, the survivors and the total time.

    python benchmarks/mutation.py                    # every mutant, the whole suite each time
    python benchmarks/mutation.py --fast             # the CI subset: a few mutants, only the cases that see them
    python benchmarks/mutation.py --mutants hash-off-by-one,dedup-ignored -k pinned
    python benchmarks/mutation.py --list             # the mutants and the bug each stands for

Exit status: 0 when the kill rate reaches ``--min-rate`` (default 0.95), 1 otherwise, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from mutants import MUTANTS, Mutant, by_name  # noqa: E402

#: The CI subset: (mutant, the -k expression of the cases that kill it).  One mutant per area, each run
#: against only the cases that see it, so the subset takes seconds; the full run is the measurement.
FAST: tuple[tuple[str, str], ...] = (
    ("draining-released-at-first-ack", "draining-first-ack"),
    ("replay-forgets-hashes", "replay-before-new-messages"),
    ("stuck-consumer-blocks-all", "stuck-consumer-progress"),
    ("stalled-socket-blocks-dispatch", "slow-socket-does-not-block-fast"),
    ("hash-off-by-one", "ring-three-points"),
    ("ring-ignores-name-index", "ring-same-names"),
    ("sticky-gaps-delivered", "sticky-gaps"),
    ("auto-split-wrong-range", "auto-split-four-consumers"),
    ("snapshot-last-answer-only", "two-producers"),
    ("remote-cursor-never-updated", "across-two-regions"),
    ("remote-cursor-lags-a-snapshot", "same-producer-name"),
    ("replicated-resend-stored-again", "replicator-repeated-sends"),
    ("partitioned-status-first-partition-only", "partitioned-status"),
    ("markers-use-permits", "markers-key-shared"),
    ("classic-no-recently-joined", "join-while-pending"),
    ("dedup-failed-write-keeps-pushed", "storage-failure-resend"),
    ("dedup-gap-stored", "gapped-ids"),
    ("dedup-ignores-highest-id", "batch-highest-id"),
    ("ack-timeout-never-fires", "ack-timeout-ordering-key-sticky"),
    ("non-persistent-no-permits-to-other", "non-persistent-flow-control"),
    ("delayed-delivery-ignored", "delayed-with-joiner"),
    ("max-unacked-consumer-never-unblocks", "max-unacked-per-consumer-lifted"),
    ("expiry-ignored", "ttl-restarts-blocked-dispatch"),
    ("redelivery-count-not-raised", "nack-then-settle"),
    ("dead-letter-count-shared-across-partitions", "dead-letter-key-shared-partitioned and not ack-timeout"),
)


@dataclass
class Fate:
    mutant: Mutant
    killed_by: list[str] = field(default_factory=list)
    seconds: float = 0.0
    error: str = ""

    @property
    def killed(self) -> bool:
        return bool(self.killed_by)


def suite_command(plugin: str, target: str, artifacts: str, report: Path) -> list[str]:
    """The conformance suite against ``target`` with ``plugin`` (which plants the mutant) loaded, every case run
    whatever the target's expectations, its results in the JUnit file ``report`` (this script's and
    ``auto_mutation.py``'s runs)."""
    return [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "pytest_keyshared",
        "-p",
        plugin,
        "--pyargs",
        "conformance",
        f"--keyshared-target={target}",
        "--keyshared-expectations=none",
        f"--keyshared-artifacts={artifacts}",
        "-p",
        "no:cacheprovider",
        "-q",
        f"--junitxml={report}",
    ]


def _run(
    target: str, mutant: str | None, keyword: str | None, timeout_s: float, *, first: bool = False
) -> tuple[set[str], str, float]:
    """Failing case ids of one suite run (and an error note if the run itself broke); ``first``: stop at the
    first failing case (``-x``), enough to know a mutant is killed when the baseline fails nothing."""
    with tempfile.TemporaryDirectory(prefix="keyshared-mutation-") as tmp:
        report = Path(tmp) / "junit.xml"
        cmd = suite_command("mutation_plugin", target, f"{tmp}/artifacts", report)
        if keyword:
            cmd += ["-k", keyword]
        if first:
            cmd.append("-x")
        env = dict(os.environ)
        # this checkout's packages first (a worktree beside an editable install of another checkout runs its own)
        env["PYTHONPATH"] = os.pathsep.join([str(HERE), str(HERE.parent), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        env.pop("KEYSHARED_MUTANT", None)
        if mutant:
            env["KEYSHARED_MUTANT"] = mutant
        started = time.monotonic()
        try:
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout_s, check=False)
        except subprocess.TimeoutExpired:
            return {"<timeout>"}, f"suite did not finish within {timeout_s:.0f} s", time.monotonic() - started
        elapsed = time.monotonic() - started
        if not report.exists():
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
            return {"<crash>"}, f"pytest exit {proc.returncode}: {' | '.join(tail)}", elapsed
        failed: set[str] = set()
        for case in ET.parse(report).getroot().iter("testcase"):
            if case.find("failure") is not None or case.find("error") is not None:
                failed.add(f"{case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name')}")
        note = ""
        if proc.returncode not in (0, 1):
            note = f"pytest exit {proc.returncode}"
        return failed, note, elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mutants", help="comma-separated mutant names (default: all)")
    parser.add_argument(
        "--area", help="only mutants of this area (pip379, classic, dispatch, selectors, dedup, replication, client)"
    )
    parser.add_argument("--fast", action="store_true", help="the CI subset, each against the cases that see it")
    parser.add_argument("-k", dest="keyword", help="pytest -k expression: run only these cases")
    parser.add_argument("--timeout", type=float, default=300.0, help="bound on one suite run, seconds")
    parser.add_argument(
        "--all-killers",
        dest="first",
        action="store_false",
        help="run every case on each mutant (default: stop at the first failure)",
    )
    parser.add_argument("--min-rate", type=float, default=0.95, help="exit 1 below this kill rate")
    parser.add_argument("--json", type=Path, help="write the fates here")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    args = parser.parse_args(argv)

    if args.list:
        for m in MUTANTS:
            print(f"{m.name:42} {m.area:12} {m.target:14} {m.bug}")
        return 0
    plan: list[tuple[Mutant, str | None]]
    if args.fast:
        plan = [(by_name(name), keyword) for name, keyword in FAST]
    elif args.mutants:
        plan = [(by_name(n.strip()), args.keyword) for n in args.mutants.split(",") if n.strip()]
    else:
        plan = [(m, args.keyword) for m in MUTANTS]
    if args.area:
        plan = [(m, k) for m, k in plan if m.area == args.area]
    if not plan:
        print("no mutant selected", file=sys.stderr)
        return 2

    started = time.monotonic()
    # one baseline per target, over the union of the cases the plan runs (every case when any mutant runs all)
    keywords: dict[str, set[str | None]] = {}
    for m, keyword in plan:
        keywords.setdefault(m.target, set()).add(keyword)
    baselines: dict[str, set[str]] = {}
    for target, wanted in keywords.items():
        union = None if None in wanted else " or ".join(f"({k})" for k in sorted(w for w in wanted if w))
        failed, note, secs = _run(target, None, union, args.timeout)
        if note and failed & {"<timeout>", "<crash>"}:
            print(f"baseline {target} broke: {note}", file=sys.stderr)
            return 2
        baselines[target] = failed
        where = f" -k {union!r}" if union else ""
        print(f"baseline {target}{where}: {len(failed)} failing case(s) {sorted(failed)} ({secs:.1f} s)", flush=True)
    fates: list[Fate] = []
    for m, keyword in plan:
        key = m.target
        failed, note, secs = _run(m.target, m.name, keyword, args.timeout, first=args.first and not baselines[key])
        fate = Fate(m, sorted(failed - baselines[key]), secs, note)
        fates.append(fate)
        if fate.killed:
            shown = ", ".join(fate.killed_by[:3]) + (f" +{len(fate.killed_by) - 3}" if len(fate.killed_by) > 3 else "")
            print(f"KILLED   {m.name:42} {secs:5.1f} s  by {shown}", flush=True)
        else:
            print(f"SURVIVED {m.name:42} {secs:5.1f} s  {m.bug}{'  [' + note + ']' if note else ''}", flush=True)

    total = time.monotonic() - started
    killed = sum(f.killed for f in fates)
    rate = killed / len(fates)
    by_area: dict[str, list[Fate]] = {}
    for f in fates:
        by_area.setdefault(f.mutant.area, []).append(f)
    print()
    for area, group in by_area.items():
        print(f"  {area:12} {sum(f.killed for f in group)}/{len(group)} killed")
    survivors = [f for f in fates if not f.killed]
    print(f"killed {killed} of {len(fates)} mutants: {rate:.1%}; total time {total:.1f} s")
    if survivors:
        print("survivors:")
        for f in survivors:
            print(f"  {f.mutant.name}: {f.mutant.bug}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "killed": killed,
                    "mutants": len(fates),
                    "rate": rate,
                    "seconds": round(total, 1),
                    "fates": [
                        {
                            "mutant": f.mutant.name,
                            "area": f.mutant.area,
                            "target": f.mutant.target,
                            "bug": f.mutant.bug,
                            "killed_by": f.killed_by,
                            "seconds": round(f.seconds, 2),
                            "note": f.error,
                        }
                        for f in fates
                    ],
                },
                indent=2,
            )
            + "\n"
        )
    return 0 if rate >= args.min_rate else 1


if __name__ == "__main__":
    sys.exit(main())
