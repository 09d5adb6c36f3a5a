"""``keyshared run``: run a scenario against a target, save the trace, the verdict and the broker log.

A thin shell over :func:`pytest_keyshared.targets.open_target` and :func:`pytest_keyshared.driver.run_scenario`.
Exit codes: 0 the trace is valid, 1 violations found, 2 bad input (unknown scenario or target, a step the
target cannot perform), 3 target or harness failure, 4 verdict unknown (something forbidden could not be
judged, or a check crashed), 130 interrupted (the trace is saved all the same).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from reference_model.errors import InvalidArgument, KeySharedError

__all__ = ["add_parser", "parse_option", "run"]

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
  keyshared run --target pulsar://127.0.0.1:6650 --scenario my-workload.toml --out runs/one
  keyshared run --target testcontainers:4.0.13 -o implementation=classic --scenario leave-while-pending
  keyshared run --list
"""

#: Progress lines start after this long, then come every ``_PROGRESS_EVERY_S``.
_PROGRESS_AFTER_S = 2.0
_PROGRESS_EVERY_S = 2.0
_VERDICT_LINES = 40


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
    parser.add_argument("--target", "-t", default="pulsar-lite", metavar="T", help="the broker (default: pulsar-lite)")
    parser.add_argument("--scenario", "-s", default="steady-state", metavar="NAME|FILE", help="default: steady-state")
    parser.add_argument("--seed", type=_seed, default=0, metavar="N", help="run seed (default: 0)")
    parser.add_argument(
        "--out", "-d", type=Path, metavar="DIR", help="artifacts directory (default: keyshared-runs/...)"
    )
    parser.add_argument("--profile", metavar="NAME", help="contract profile (default: from the target's claims)")
    parser.add_argument(
        "--option",
        "-o",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="target option, repeatable (VALUE parsed as JSON when it parses, else a string)",
    )
    parser.add_argument("--no-live-check", action="store_true", help="check the saved trace at the end only")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress lines")
    parser.add_argument("--list", action="store_true", help="list the built-in scenarios and exit")
    parser.set_defaults(handler=run)


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {value}")
    return value


def parse_option(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` -> ``(key, value)``; VALUE is JSON when it parses (``10``, ``true``, ``{...}``), else text."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise InvalidArgument(f"Expected --option KEY=VALUE (e.g. -o startup_timeout_s=30) but got {text!r}.")
    try:
        value: Any = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key.strip(), value


def run(args: argparse.Namespace) -> int:
    from conformance.scenarios import builtin_scenarios, load_scenario

    if args.list:
        for name, scenario in builtin_scenarios().items():
            first = scenario.description.strip().split(". ")[0].replace("\n", " ")
            print(f"{name:22} {first}")
        return 0
    options = dict(parse_option(o) for o in args.option)
    scenario = load_scenario(args.scenario)
    out_dir: Path = (
        args.out or Path("keyshared-runs") / f"{scenario.name}-seed{args.seed}-{time.strftime('%Y%m%d-%H%M%S')}"
    )
    try:
        with _sigterm_as_interrupt():
            return _run(args, scenario, options, out_dir)
    except KeyboardInterrupt:
        print(f"keyshared run: interrupted; what was recorded is in {out_dir}", file=sys.stderr)
        return 130
    except KeySharedError:
        raise
    except Exception as exc:  # a harness bug or an unexpected client error: one line, exit 3
        print(f"keyshared run: harness failure: {type(exc).__name__}: {exc} (artifacts: {out_dir})", file=sys.stderr)
        return 3


def _run(args: argparse.Namespace, scenario: Any, options: dict[str, Any], out_dir: Path) -> int:
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
        )
    if args.json:
        print(json.dumps(_result_json(result), sort_keys=True))
    else:
        print(_summary(result))
    return int(result.exit_code)


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
    verdict = result.verdict
    if verdict is None:
        lines.append("  verdict: none (no checker available to judge the trace)")
    else:
        kinds = result.violation_kinds()
        counts: dict[str, int] = {}
        for v in verdict.violations:
            kind = str(getattr(v.kind, "value", v.kind))
            counts[kind] = counts.get(kind, 0) + 1
        if verdict.valid:
            lines.append("  verdict: VALID" + (f" (allowed: {', '.join(kinds)})" if kinds else ""))
        else:
            lines.append(f"  verdict: INVALID: {', '.join(f'{k} x{n}' for k, n in sorted(counts.items()))}")
        rendered = verdict.render().rstrip().splitlines() if hasattr(verdict, "render") else []
        shown = rendered[:_VERDICT_LINES]
        lines.extend(f"    {line}" for line in shown)
        if len(rendered) > len(shown):
            lines.append(f"    ... {len(rendered) - len(shown)} more lines in {result.verdict_path}")
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
        "exit_code": result.exit_code,
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


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM stops the run like Ctrl-C: the trace is finished and the broker stopped before exiting."""

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread (tests calling main() from a thread)
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
