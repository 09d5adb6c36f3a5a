"""``keyshared replay SCENARIO [--target T] [--runs N]``: how often does a violation reproduce?

A violation found against a real broker may depend on timing.  Replaying its scenario N times against the
same target (started once) and counting, per violation kind, in how many runs it appeared turns "it failed
once in CI" into a rate, which is what a bug report needs and what decides between ``fails`` and
``may-fail`` in an expectations file.  Each run keeps its own trace and verdict under ``--out``.

Exit codes (:mod:`pytest_keyshared.commands._errors`): 0 every run valid, 1 a violation in at least one run,
2 bad input (unknown scenario, target string or option), 3 the target failed, 4 no violation but a verdict
unknown, 130 interrupted.  Scenario, seed, target and ``-o`` options as ``keyshared run`` (:mod:`._workload`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_keyshared.commands._errors import EXIT_UNKNOWN, EXIT_VALID, EXIT_VIOLATIONS, look_at, verdict_exit
from pytest_keyshared.commands._workload import (
    SEED_MAX,
    add_workload_options,
    claim_out_dir,
    kept_if_written,
    scenario_name,
    target_options,
)

__all__ = ["ReplayTally", "add_parser", "render_tally", "run", "tally_runs"]

_EPILOG = """\
examples:
  keyshared replay join-while-pending --runs 10
  keyshared replay --scenario join-while-pending --target model --seed 7 --runs 3
  keyshared replay keyshared-artifacts/latest/generated--model-programs/shrunk.toml --target model
  keyshared replay my-scenario.toml --target pulsar://127.0.0.1:6650 --runs 5 --json
"""


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "replay",
        help="run a scenario N times and report how often each violation kind appears",
        description="Run one scenario several times against one target (started once) and report, per"
        " violation kind, in how many runs it appeared.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_workload_options(
        parser, out_help="artifacts directory (default: a new keyshared-runs/<scenario>-replay-seed<N>-<time>)"
    )
    parser.add_argument("--runs", type=_positive, default=5, metavar="N", help="number of runs (default: 5)")
    parser.add_argument(
        "--same-seed",
        action="store_true",
        help="use --seed for every run (isolates broker timing); else run i uses seed+i",
    )
    parser.add_argument("--admin-url", default=None, metavar="URL", help="the same as -o admin_url=URL")
    parser.add_argument("--pulsar-version", default=None, metavar="V", help="the same as -o pulsar_version=V")
    parser.add_argument("--json", action="store_true", help="print the tally as one JSON object")
    parser.set_defaults(handler=run)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer but got {text!r}") from None
    if not 1 <= value <= 10_000:
        raise argparse.ArgumentTypeError(f"expected a number of runs between 1 and 10000 but got {value}")
    return value


@dataclass
class ReplayTally:
    """Per violation kind: in how many runs it appeared, and how many times in all."""

    scenario: str
    target: str
    runs: int = 0
    invalid_runs: int = 0
    runs_with: Counter[str] = field(default_factory=Counter)
    occurrences: Counter[str] = field(default_factory=Counter)
    traces: list[str] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)

    def add(self, verdict: Any, trace_path: Any, seed: int) -> None:
        self.runs += 1
        self.seeds.append(seed)
        self.traces.append(str(trace_path))
        kinds = Counter(_kind(v) for v in getattr(verdict, "violations", ()) or ())
        if kinds or not getattr(verdict, "valid", True):
            self.invalid_runs += 1
        for kind, count in kinds.items():
            self.runs_with[kind] += 1
            self.occurrences[kind] += count

    def to_json(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "target": self.target,
            "runs": self.runs,
            "invalid_runs": self.invalid_runs,
            "kinds": {
                kind: {"runs": self.runs_with[kind], "share": self.runs_with[kind] / self.runs, "total": total}
                for kind, total in sorted(self.occurrences.items())
            },
            "seeds": self.seeds,
            "traces": self.traces,
        }


def _kind(violation: Any) -> str:
    kind = getattr(violation, "kind", "unknown")
    return str(getattr(kind, "value", kind))


def tally_runs(verdicts: list[tuple[Any, Any, int]], *, scenario: str, target: str) -> ReplayTally:
    """Tally ``(verdict, trace_path, seed)`` triples (pure: used by :func:`run` and by tests)."""
    tally = ReplayTally(scenario=scenario, target=target)
    for verdict, trace, seed in verdicts:
        tally.add(verdict, trace, seed)
    return tally


def render_tally(tally: ReplayTally) -> str:
    """The human summary: the invalid share, then one row per kind with the runs it appeared in."""
    share = 100.0 * tally.invalid_runs / tally.runs if tally.runs else 0.0
    lines = [
        f"replay {tally.scenario} on {tally.target}: {tally.runs} run(s), {tally.invalid_runs} with violations"
        f" ({share:.0f}%)"
    ]
    if tally.occurrences:
        from pytest_keyshared.contracts import KIND_CONTRACTS

        lines.append(f"{'kind':<24}{'contract':<18}{'runs':>6}{'share':>8}{'total':>8}")
        for kind, total in sorted(tally.occurrences.items(), key=lambda kv: (-tally.runs_with[kv[0]], kv[0])):
            runs = tally.runs_with[kind]
            lines.append(
                f"{kind:<24}{KIND_CONTRACTS.get(kind, '?'):<18}{runs:>6}{100.0 * runs / tally.runs:>7.0f}%{total:>8}"
            )
    else:
        lines.append("no violation in any run")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from conformance.scenarios import load_scenario
    from pytest_keyshared.driver import run_scenario
    from pytest_keyshared.targets import open_target, parse_target

    options = target_options(args, admin_url=args.admin_url, pulsar_version=args.pulsar_version)
    scenario = load_scenario(scenario_name(args))  # InvalidScenario: one line, exit 2
    if args.profile is not None:
        from conformance.profiles import get_profile

        get_profile(args.profile)  # an unknown profile fails before a broker starts
    parse_target(args.target)  # an unknown target fails before an artifacts directory is made
    out = claim_out_dir(args.out, f"{scenario.name}-replay-seed{args.seed}")
    look_at(out)
    results: list[tuple[Any, Any, int]] = []
    with kept_if_written(out), open_target(args.target, artifacts_dir=out / "target", options=options) as target:
        for index in range(args.runs):
            seed = args.seed if args.same_seed else (args.seed + index) % (SEED_MAX + 1)
            started = time.monotonic()
            result = run_scenario(
                target, scenario, seed=seed, out_dir=out / f"run-{index + 1:03d}", profile=args.profile
            )
            verdict = result.verdict
            _write_report(result)
            kinds = sorted({_kind(v) for v in verdict.violations})
            print(
                f"run {index + 1}/{args.runs} seed={seed}: {_word(verdict)}"
                + (f" ({', '.join(kinds)})" if kinds else "")
                + f" in {time.monotonic() - started:.1f}s",
                file=sys.stderr,
            )
            results.append((verdict, result.trace_path, seed))
    tally = tally_runs(results, scenario=scenario.name, target=args.target)
    if args.json:
        print(json.dumps(tally.to_json(), sort_keys=True))
    else:
        print(render_tally(tally))
        first = next(((v, t, s) for v, t, s in results if verdict_exit(v) == EXIT_VIOLATIONS), None)
        if first is not None:  # the violations of one run, in the words every command uses
            from pytest_keyshared.commands._verdict_text import verdict_lines

            verdict, trace, seed = first
            print(f"first run with violations (seed {seed}), {trace}:")
            print("\n".join(verdict_lines(verdict, [], Path(trace).parent / "verdict.json", max_per_kind=1)))
        print(f"traces, verdicts and reports: {out}")
    if tally.invalid_runs:
        return EXIT_VIOLATIONS
    return max((verdict_exit(v) for v, _, _ in results), default=EXIT_VALID)


def _word(verdict: Any) -> str:
    return {EXIT_VALID: "valid", EXIT_VIOLATIONS: "INVALID", EXIT_UNKNOWN: "unknown"}[verdict_exit(verdict)]


def _write_report(result: Any) -> None:
    """Each run's ``report.html`` beside its trace; a page that cannot be drawn is noted, never fails the replay."""
    from pytest_keyshared.report import REPORT_NAME, write_report

    try:
        title = f"keyshared replay: {result.scenario} on {result.target}, seed {result.seed}"
        write_report(
            result.trace_path,
            result.artifacts_dir / REPORT_NAME,
            result.verdict,
            title=title,
            writer="keyshared replay",
        )
    except Exception as exc:  # the tally stands; the page is a convenience
        print(f"keyshared replay: no report for {result.trace_path}: {type(exc).__name__}: {exc}", file=sys.stderr)
