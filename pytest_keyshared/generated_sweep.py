"""Run many generated programs on a model release and explain every failure (CI and the nightly sweep).

``python -m pytest_keyshared.generated_sweep --target model:2.10 --programs 10000 [--first-seed N]
[--length 20] [--out DIR] [--json]`` runs programs ``program_from_seed(first_seed + i)`` (every workload
dimension drawn) on the target, one fresh model broker each (the run's seed is the program's).  A program that
breaks a contract is explained (:mod:`conformance.generated.attribution`): *expected* when a known bug of that
release explains it, else *unexplained*, and its scenario, trace and verdict are kept under ``DIR/failures/``
for ``keyshared replay``.  The last line gives the figures; the exit code is 0 when nothing is unexplained, 1
otherwise, 2 for bad arguments (``docs/conformance.md``, "Generated workloads").
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.cases._support import client_view_problems
from conformance.generated.attribution import Attribution, attribute
from conformance.generated.program import GeneratorOptions, program_from_seed
from conformance.scenarios import Scenario, dump_scenario
from pytest_keyshared.contracts import contract_of_kind
from reference_model.errors import InvalidArgument

__all__ = ["ProgramOutcome", "SweepReport", "main", "sweep"]


@dataclass(frozen=True, slots=True)
class ProgramOutcome:
    """A failing program: its seed, the violation kinds, and why (``attribution``)."""

    seed: int
    kinds: tuple[str, ...]
    attribution: Attribution
    kept: str | None  #: where its scenario and trace were kept


@dataclass(slots=True)
class SweepReport:
    target: str
    programs: int = 0
    valid: int = 0
    seconds: float = 0.0
    failures: list[ProgramOutcome] = field(default_factory=list)

    @property
    def expected(self) -> list[ProgramOutcome]:
        return [f for f in self.failures if f.attribution.expected]

    @property
    def unexplained(self) -> list[ProgramOutcome]:
        return [f for f in self.failures if not f.attribution.expected]

    def summary(self) -> str:
        bugs = Counter(b for f in self.expected for b in f.attribution.bugs)
        named = ", ".join(f"{b} x{n}" for b, n in sorted(bugs.items())) or "none"
        return (
            f"{self.target}: {self.programs} programs in {self.seconds:.1f}s, {self.valid} valid,"
            f" {len(self.expected)} failing as known bugs explain ({named}), {len(self.unexplained)} unexplained"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "programs": self.programs,
            "valid": self.valid,
            "seconds": round(self.seconds, 2),
            "failures": [
                {
                    "seed": f.seed,
                    "kinds": list(f.kinds),
                    "expected": f.attribution.expected,
                    "bugs": list(f.attribution.bugs),
                    "passes_on": f.attribution.passes_on,
                    "note": f.attribution.note,
                    "kept": f.kept,
                }
                for f in self.failures
            ],
        }


@contextmanager
def _targets(work: Path) -> Iterator[Any]:
    """Model targets by spec, opened once each (a model target is a value: nothing runs between runs)."""
    from pytest_keyshared.targets import open_target

    opened: dict[tuple[str, str | None, str | None], Any] = {}
    managers: list[Any] = []

    def get(spec: str, option: str | None = None, value: str | None = None) -> Any:
        """The target ``spec``; with ``option`` (``proposed_fixes`` or ``backports``), one that applies ``value``:
        a proposed fix of an open Pulsar bug, or a gate as if backported."""
        key = (spec, option, value)
        if key not in opened:
            options = {option: [value]} if option and value else None
            folder = f"{spec}-{len(opened)}".replace(":", "_")
            manager = open_target(spec, artifacts_dir=work / "targets" / folder, options=options)
            opened[key] = manager.__enter__()
            managers.append(manager)
        return opened[key]

    try:
        yield get
    finally:
        for manager in reversed(managers):
            manager.__exit__(None, None, None)


def _run(target: Any, program: Scenario, seed: int, out: Path) -> Any:
    from pytest_keyshared.driver import run_scenario

    return run_scenario(target, program, seed=seed, out_dir=out, live_check=False)


def sweep(
    target: str,
    programs: int,
    *,
    first_seed: int = 0,
    length: int = 20,
    out: Path | None = None,
    options: GeneratorOptions | None = None,
) -> SweepReport:
    """Run ``programs`` generated programs on the model target ``target`` and explain each failure."""
    from pytest_keyshared.targets.model import parse_model_spec

    version, implementation = parse_model_spec(target)
    report = SweepReport(target=target)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="keyshared-sweep-") as scratch, _targets(Path(scratch)) as get:
        work = Path(scratch)
        main_target = get(target)
        implementation = main_target.implementation
        for index in range(programs):
            seed = first_seed + index
            program = program_from_seed(seed, length=length, options=options)
            run_dir = work / "runs" / f"{seed}"
            result = _run(main_target, program, seed, run_dir)
            report.programs += 1
            # what the client saw of its batches and metadata: no known bug of a release is about them
            seen = client_view_problems(result.trace_path)
            if result.valid and not seen:
                report.valid += 1
                shutil.rmtree(run_dir, ignore_errors=True)
                continue

            def passes(spec: str, program: Scenario = program, seed: int = seed) -> bool:
                rerun = work / "reruns" / f"{seed}-{spec.replace(':', '_')}"
                valid = bool(_run(get(spec), program, seed, rerun).valid)
                shutil.rmtree(rerun, ignore_errors=True)
                return valid

            def passes_with(spec: str, proposed: str, program: Scenario = program, seed: int = seed) -> bool:
                rerun = work / "reruns" / f"{seed}-{spec.replace(':', '_')}-proposed"
                valid = bool(_run(get(spec, "proposed_fixes", proposed), program, seed, rerun).valid)
                shutil.rmtree(rerun, ignore_errors=True)
                return valid

            def passes_backported(spec: str, gate: str, program: Scenario = program, seed: int = seed) -> bool:
                rerun = work / "reruns" / f"{seed}-{spec.replace(':', '_')}-backport"
                valid = bool(_run(get(spec, "backports", gate), program, seed, rerun).valid)
                shutil.rmtree(rerun, ignore_errors=True)
                return valid

            if seen:
                kinds = tuple(sorted({str(kind) for _, kind, _ in seen}))
                attribution = Attribution(target, False, (), None, (), f"judged by the case: {seen[0][2]}")
            else:
                kinds = tuple(sorted({str(getattr(v.kind, "value", v.kind)) for v in result.verdict.violations}))
                broken = {contract_of_kind(kind) for kind in kinds}
                attribution = attribute(target, version, implementation, passes, broken, passes_with, passes_backported)
            kept = None
            if out is not None:
                keep = out / "failures" / f"{target.replace(':', '_')}-{seed}"
                keep.mkdir(parents=True, exist_ok=True)
                dump_scenario(program, keep / "scenario.toml")
                shutil.copyfile(result.trace_path, keep / "trace.jsonl")
                (keep / "attribution.txt").write_text(attribution.render() + "\n", encoding="utf-8")
                kept = str(keep)
            report.failures.append(ProgramOutcome(seed, kinds, attribution, kept))
            shutil.rmtree(run_dir, ignore_errors=True)
    report.seconds = time.monotonic() - started
    return report


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pytest_keyshared.generated_sweep",
        description="Run generated programs (every workload dimension) on model release lines and explain every"
        " failure: expected when a known bug of that release explains it, else unexplained (exit 1).",
    )
    parser.add_argument("--target", "-t", action="append", help="a model target (repeatable; default: model)")
    parser.add_argument("--all-lines", action="store_true", help="every release line the model reproduces")
    parser.add_argument("--programs", "-n", type=int, default=100, help="programs per target (default 100)")
    parser.add_argument("--first-seed", type=int, default=0, help="seed of the first program (default 0)")
    parser.add_argument("--length", type=int, default=20, help="moves per program (default 20)")
    parser.add_argument("--out", type=Path, help="keep failing programs' scenarios and traces here")
    parser.add_argument("--json", action="store_true", help="print one JSON object per target")
    parser.add_argument(
        "--delayed", action="store_true", help="programs may publish delayed messages (GeneratorOptions.delayed)"
    )
    parser.add_argument("--expiry", action="store_true", help="programs may expire messages (GeneratorOptions.expiry)")
    parser.add_argument(
        "--producers",
        action="store_true",
        help="programs may switch deduplication and close and create p1 again (GeneratorOptions.producers)",
    )
    return parser


def release_line_targets() -> list[str]:
    """``model:<line>`` for every release line the model reproduces, plus the classic dispatcher of 4.x (5.0 removed
    it, apache/pulsar#26687)."""
    from conformance.generated.attribution import line_spec
    from reference_model.versions import MIN_MODEL_VERSION, RELEASES, has_classic_dispatcher, parse_version

    lines = [line for line in sorted(RELEASES) if parse_version(f"{line[0]}.{line[1]}") >= MIN_MODEL_VERSION]
    specs = [line_spec(line, "default") for line in lines]
    specs += [
        line_spec(line, "classic")
        for line in lines
        if line >= (4, 0) and has_classic_dispatcher(f"{line[0]}.{line[1]}")
    ]
    return specs


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.programs < 1 or args.length < 1 or args.first_seed < 0:
        print("generated_sweep: --programs and --length must be >= 1, --first-seed >= 0", file=sys.stderr)
        return 2
    targets = list(args.target or [])
    if args.all_lines:
        targets += release_line_targets()
    unexplained = 0
    try:
        for target in targets or ["model"]:
            drawn = args.delayed or args.expiry or args.producers
            options = (
                GeneratorOptions(delayed=args.delayed, expiry=args.expiry, producers=args.producers) if drawn else None
            )
            report = sweep(
                target, args.programs, first_seed=args.first_seed, length=args.length, out=args.out, options=options
            )
            unexplained += len(report.unexplained)
            if args.json:
                print(json.dumps(report.to_json()))
                continue
            for failure in report.failures:
                print(f"  seed {failure.seed}: {', '.join(failure.kinds)}: {failure.attribution.render()}")
            print(report.summary(), flush=True)
    except InvalidArgument as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    return 1 if unexplained else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
