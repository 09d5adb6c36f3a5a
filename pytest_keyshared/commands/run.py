"""``keyshared run``: run a scenario against a target, save the trace, the verdict and the broker log.

A thin shell over :func:`pytest_keyshared.targets.open_target` and :func:`pytest_keyshared.driver.run_scenario`.
Exit codes (:mod:`pytest_keyshared.commands._errors`): 0 the trace is valid, 1 violations found, 2 bad input
(unknown scenario, target or profile, a step the target cannot perform), 3 target failure, 4 verdict unknown (something
forbidden could not be judged, or a check crashed),
130 interrupted (the trace is saved all the same).  Options shared with ``replay``: :mod:`._workload`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pytest_keyshared.commands._errors import look_at, verdict_exit
from pytest_keyshared.commands._layout import add_layout_options, buckets_from_args
from pytest_keyshared.commands._verdict_text import verdict_lines
from pytest_keyshared.commands._workload import (
    add_workload_options,
    claim_out_dir,
    kept_if_written,
    parse_option,
    scenario_name,
    target_options,
)

__all__ = ["add_parser", "parse_option", "run", "verdict_lines"]

_EPILOG = """\
targets:
  pulsar-lite                        the embedded broker from the pulsar-lite wheel (default)
  pulsar://HOST:PORT[?admin=URL]     any running broker (admin URL: deduplication switch)
  testcontainers[:IMAGE:TAG]         Apache Pulsar standalone in Docker
  testcontainers-geo[:IMAGE:TAG]     two Apache Pulsar clusters (r1, r2) with geo-replication, in Docker
  model[:VERSION][:classic|pip379]   the reference model (deterministic)

examples:
  keyshared run --scenario join-while-pending
  keyshared run --target model --scenario join-while-pending --seed 7
  keyshared run join-while-pending --target model --out run1
  keyshared run join-while-pending --target model --trace-layout bucketed --buckets 4
  keyshared run --target pulsar://127.0.0.1:6650 --scenario my-workload.toml --out runs/one
  keyshared run --target testcontainers:4.0.14 -o implementation=classic --scenario leave-while-pending
  keyshared run --list
"""

#: Progress lines start after this long, then come every ``_PROGRESS_EVERY_S``.
_PROGRESS_AFTER_S = 2.0
_PROGRESS_EVERY_S = 2.0


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run a scenario against a broker and judge the trace",
        description="Run a scenario (built-in name or TOML/JSON file) against a target, record the trace, drain"
        " the subscription, and check the trace. Writes trace.jsonl, verdict.json, scenario.toml and broker.log"
        " to the output directory.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_workload_options(
        parser, out_help="artifacts directory (default: a new keyshared-runs/<scenario>-seed<N>-<time>)"
    )
    parser.add_argument("--no-live-check", action="store_true", help="check the saved trace at the end only")
    add_layout_options(parser, what="trace.jsonl")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress lines")
    parser.add_argument("--list", action="store_true", help="list the built-in scenarios and exit")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from conformance.scenarios import builtin_scenarios, load_scenario

    if args.list:
        for name, scenario in builtin_scenarios().items():
            first = scenario.description.strip().split(". ")[0].replace("\n", " ")
            print(f"{name:22} {first}")
        return 0
    options = target_options(args)
    buckets = buckets_from_args(args)
    scenario = load_scenario(scenario_name(args))
    if args.profile is not None:
        from conformance.profiles import get_profile

        get_profile(args.profile)  # an unknown profile fails before a broker starts
    from pytest_keyshared.targets import parse_target

    parse_target(args.target)  # an unknown target fails before an artifacts directory is made
    out_dir = claim_out_dir(args.out, f"{scenario.name}-seed{args.seed}")
    look_at(out_dir)
    with kept_if_written(out_dir):
        return _run(args, scenario, options, out_dir, buckets)


def _run(args: argparse.Namespace, scenario: Any, options: dict[str, Any], out_dir: Path, buckets: int | None) -> int:
    from pytest_keyshared.driver import run_scenario
    from pytest_keyshared.targets import open_target

    reporter = _ProgressPrinter(enabled=not (args.quiet or args.json))
    with open_target(args.target, artifacts_dir=out_dir / "target", options=options) as target:
        if not args.json:
            print(f"keyshared run: scenario {scenario.name!r} on {target.describe()}, seed {args.seed}", flush=True)
        result = run_scenario(
            target,
            scenario,
            seed=args.seed,
            out_dir=out_dir,
            profile=args.profile,
            live_check=not args.no_live_check,
            progress=reporter,
            buckets=buckets,
        )
    report = _write_report(result)
    if args.json:
        print(json.dumps(_result_json(result), sort_keys=True))
    else:
        print(_summary(result))
        if report is not None:
            print(f"  report: {report}")
    return verdict_exit(result.verdict)


def _write_report(result: Any) -> Path | None:
    """``report.html`` beside the trace; a report that cannot be drawn is noted, never fails the run."""
    if result.verdict is None:
        return None
    from pytest_keyshared.report import REPORT_NAME, write_report

    try:
        title = f"keyshared run: {result.scenario} on {result.target}, seed {result.seed}"
        return write_report(
            result.trace_path, result.artifacts_dir / REPORT_NAME, result.verdict, title=title, writer="keyshared run"
        )
    except Exception as exc:  # the run's verdict stands; the page is a convenience
        print(f"keyshared run: no report: {type(exc).__name__}: {exc}", file=sys.stderr)
        return None


class _ProgressPrinter:
    """Prints a progress line to stderr every few seconds once a run has lasted a while."""

    def __init__(self, *, enabled: bool) -> None:
        self.enabled = enabled
        self._next = _PROGRESS_AFTER_S

    def __call__(self, progress: Any) -> None:
        if not self.enabled or progress.final or progress.elapsed_s < self._next:
            return
        self._next = progress.elapsed_s + _PROGRESS_EVERY_S
        print(f"  {progress.line()}", file=sys.stderr, flush=True)


def _summary(result: Any) -> str:
    c = result.counters
    lines = []
    failed = [s for s in result.steps if not s.ok]
    lines.append(f"  steps: {len(result.steps) - len(failed)} of {len(result.steps)} as planned")
    lines.extend(f"    step {s.index} ({s.do}): {s.note}" for s in failed)
    drain = "drained" if result.drained else "not drained"
    if result.drained:
        drain += " (quiet)" if result.quiet else " (drain bound expired)"
    lines.append(
        f"  published {c.published_ok} ok"
        + (f", {c.published_info} unknown" if c.published_info else "")
        + (f", {c.published_fail} failed" if c.published_fail else "")
        + f"; received {c.received}; acknowledged {c.acked_expected} of {c.expected_uids}; {drain}"
    )
    lines.extend(f"  note: {n}" for n in result.notes)
    lines.extend(verdict_lines(result.verdict, result.violation_kinds(), result.verdict_path))
    lines.append(f"  artifacts: {result.artifacts_dir} ({', '.join(p.name for p in result.artifacts.values())})")
    lines.append(f"  took {result.duration_s:.1f}s")
    return "\n".join(lines)


def _result_json(result: Any) -> dict[str, Any]:
    c = result.counters
    return {
        "scenario": result.scenario,
        "target": result.target,
        "seed": result.seed,
        "topic": result.topic,
        "valid": result.valid,
        "violation_kinds": result.violation_kinds(),
        "exit_code": verdict_exit(result.verdict),
        "drained": result.drained,
        "quiet": result.quiet,
        "published_ok": c.published_ok,
        "received": c.received,
        "acknowledged": c.acked_expected,
        "expected": c.expected_uids,
        "steps": [{"index": s.index, "do": s.do, "ok": s.ok, "note": s.note} for s in result.steps],
        "notes": list(result.notes),
        "artifacts": {name: str(path) for name, path in result.artifacts.items()},
        "duration_s": round(result.duration_s, 3),
    }
