"""Detection power on bugs nobody chose: automatic operator mutants of the model, run against the suite.

``mutation.py`` plants the hand-written mutants of ``mutants.py``; those were written by the people who wrote
the cases, so a high kill rate there measures the cases' intent.  This script asks how far the suite *reaches*:
it samples mutation points of the reference model (``ast_mutants.py``: a comparison's boundary, a negated
condition, an off-by-one constant, a deleted update, ``and`` for ``or``, ...) with a seed, plants each one in a
copy of the packages, and runs the conformance suite against the model with it.

    python benchmarks/auto_mutation.py                       # 300 sampled mutants, seed 0, three model targets
    python benchmarks/auto_mutation.py --sample 1000 --seed 7 --out /tmp/fates.json
    python benchmarks/auto_mutation.py --list | head         # the points and what each one changes

How one mutant is judged:

1. Once per target (``--targets``), the unmutated suite runs with line tracing (``automut_plugin.py``): the
   baseline's failing cases, and which model lines each case executes.
2. A mutant is tried on each target, in order, whose cases execute its line; only those cases run (``-x``,
   the baseline's failing cases left out).  The first failing case kills it.
3. Fates: ``killed`` (a case failed), ``timeout`` (the suite did not finish within ``--timeout``: a broker
   that hangs is caught by the suite's bounded waits, so it counts as killed), ``crashed`` (the suite could not
   even collect: the mutant breaks the model at import; counted killed, shown apart), ``survived`` (every case
   that reaches the line passed), ``unreached`` (no case on any target executes the line: a workload
   dimension the suite never takes, or code only other tools use).
4. Survivors and unreached points can be classified by hand in ``auto_mutation_classified.toml`` (equivalent:
   no input distinguishes it; unobservable: no client can see it; dimension: a workload the suite must grow
   to take), with the reason.  A classification holds only while its file's source is unchanged (digest).

The kill rate printed is killed / (killed + survived + unreached) with equivalent and unobservable mutants set
aside; the rate over reached mutants only is printed beside it.  The fates are written (``--out``, default
``benchmarks/auto_mutation_fates.json``) and compared with the previous file of the same seed and sources: a
mutant killed before and surviving now is a lost detection.

Exit status: 0 when the kill rate reaches ``--min-rate`` (default 0.9), 1 otherwise, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

import tomllib

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from ast_mutants import DEFAULT_MODULES, Point, apply_point, points_under, source_digest  # noqa: E402
from mutation import suite_command  # noqa: E402

PACKAGES = ("reference_model", "conformance", "pytest_keyshared")
DEFAULT_TARGETS = ("model", "model:classic", "model:3.0")
KILLING = ("killed", "timeout", "crashed")
SET_ASIDE = ("equivalent", "unobservable")


@dataclass
class Fate:
    point: Point
    fate: str = "unreached"
    target: str = ""
    killed_by: str = ""
    cases_run: int = 0
    seconds: float = 0.0
    classified: str = ""
    reason: str = ""
    tried: list[str] = field(default_factory=list)


def _overlay(into: Path) -> None:
    """A copy of the three packages' sources (no builds: the pure source is what is mutated and run)."""
    ignore = shutil.ignore_patterns("__pycache__", "*.so", "*.c", "*.pyd", "build")
    for package in PACKAGES:
        shutil.copytree(ROOT / package, into / package, ignore=ignore)


def _pytest(
    overlay: Path, target: str, timeout_s: float, *, reach: Path | None = None, select: Path | None = None
) -> tuple[set[str], set[str], str, float]:
    """(failing node ids, all node ids run, note, seconds) of one suite run from the overlay."""
    report = overlay / "junit.xml"
    report.unlink(missing_ok=True)
    cmd = [*suite_command("automut_plugin", target, f"{overlay}/artifacts", report), "-p", "no:randomly"]
    if select is not None:
        cmd.append("-x")
    env = dict(os.environ)
    env["PYTHONPATH"] = str(HERE)
    env["KEYSHARED_PURE"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.pop("KEYSHARED_MUTANT", None)
    env.pop("KEYSHARED_AUTOMUT_REACH", None)
    env.pop("KEYSHARED_AUTOMUT_SELECT", None)
    if reach is not None:
        env["KEYSHARED_AUTOMUT_REACH"] = str(reach)
    if select is not None:
        env["KEYSHARED_AUTOMUT_SELECT"] = str(select)
    started = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=overlay, env=env, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        return {"<timeout>"}, set(), f"did not finish within {timeout_s:.0f} s", time.monotonic() - started
    elapsed = time.monotonic() - started
    if not report.exists():
        tail = " | ".join((proc.stdout + proc.stderr).strip().splitlines()[-2:])
        return {"<crash>"}, set(), f"pytest exit {proc.returncode}: {tail[:200]}", elapsed
    failed: set[str] = set()
    ran: set[str] = set()
    for case in ET.parse(report).getroot().iter("testcase"):
        file = case.get("file") or case.get("classname", "").replace(".", "/") + ".py"
        nodeid = f"{file}::{case.get('name')}"
        ran.add(nodeid)
        if case.find("failure") is not None or case.find("error") is not None:
            failed.add(nodeid)
    note = "" if proc.returncode in (0, 1, 5) else f"pytest exit {proc.returncode}"
    if proc.returncode in (2, 3, 4) and not ran:
        return {"<crash>"}, ran, note, elapsed
    return failed, ran, note, elapsed


@dataclass
class Baseline:
    target: str
    failing: set[str]
    #: node id -> {path: lines}
    reach: dict[str, dict[str, set[int]]]
    seconds: float

    def cases_reaching(self, point: Point) -> list[str]:
        if point.line in self.reach.get("<import>", {}).get(point.path, set()) and not any(
            point.line in files.get(point.path, set()) for case, files in self.reach.items() if case != "<import>"
        ):
            return []  # executed only at import (a module constant nobody reads in a case)
        return sorted(
            case
            for case, files in self.reach.items()
            if case != "<import>" and case not in self.failing and point.line in files.get(point.path, set())
        )


def _baseline(overlay: Path, target: str, timeout_s: float, *, cache: Path, meta: dict[str, object]) -> Baseline:
    """The unmutated suite on ``target``, traced; kept in ``cache`` (a folder) for the same sources."""
    key = json.dumps({"target": target, "digests": meta["digests"]}, sort_keys=True)
    cached = cache / f"{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"
    if cached.exists():
        stored = json.loads(cached.read_text())
        failed, raw, secs = set(stored["failing"]), stored["reach"], 0.0
    else:
        reach_file = overlay / f"reach-{target.replace(':', '_')}.json"
        failed, _ran, note, secs = _pytest(overlay, target, timeout_s * 4, reach=reach_file)
        if failed & {"<timeout>", "<crash>"}:
            raise SystemExit(f"baseline on {target} broke: {note}")
        raw = json.loads(reach_file.read_text())
        cache.mkdir(parents=True, exist_ok=True)
        cached.write_text(json.dumps({"failing": sorted(failed), "reach": raw}))
    reach = {case: {path: set(lines) for path, lines in files.items()} for case, files in raw.items()}
    return Baseline(target, failed, reach, secs)


def _classified(path: Path, digests: dict[str, str]) -> dict[str, tuple[str, str]]:
    if not path.exists():
        return {}
    data = tomllib.loads(path.read_text())
    out: dict[str, tuple[str, str]] = {}
    for pid, entry in data.get("mutant", {}).items():
        file = pid.split(":", 1)[0]
        if entry.get("digest") == digests.get(file):
            out[pid] = (entry["class"], entry.get("reason", ""))
    return out


def _sample(points: list[Point], size: int, seed: int) -> list[Point]:
    """``size`` points drawn with ``seed``, in an order shuffled with it: a run cut short has measured a sample of
    every area, not the modules that sort first."""
    rng = random.Random(seed)
    ordered = sorted(points, key=lambda p: p.id)
    drawn = ordered if size >= len(ordered) else sorted(rng.sample(ordered, size), key=lambda p: p.id)
    rng.shuffle(drawn)
    return drawn


def _run_mutant(point: Point, overlay: Path, baselines: list[Baseline], timeout_s: float) -> Fate:
    fate = Fate(point)
    source_path = overlay / point.path
    original = source_path.read_text(encoding="utf-8")
    source_path.write_text(apply_point(original, point), encoding="utf-8")
    try:
        for baseline in baselines:
            cases = baseline.cases_reaching(point)
            if not cases:
                continue
            fate.tried.append(baseline.target)
            select = overlay / "select.json"
            select.write_text(json.dumps(cases))
            failed, ran, note, secs = _pytest(overlay, baseline.target, timeout_s, select=select)
            fate.seconds += secs
            fate.cases_run += len(ran)
            if "<timeout>" in failed:
                fate.fate, fate.target, fate.killed_by = "timeout", baseline.target, note
                return fate
            if "<crash>" in failed:
                fate.fate, fate.target, fate.killed_by = "crashed", baseline.target, note
                return fate
            if failed:
                fate.fate, fate.target, fate.killed_by = "killed", baseline.target, sorted(failed)[0]
                return fate
            fate.fate = "survived"
        return fate
    finally:
        source_path.write_text(original, encoding="utf-8")


def _rates(fates: list[Fate]) -> tuple[int, int, int]:
    """(killed, judged, reached judged): equivalent and unobservable set aside."""
    judged = [f for f in fates if f.classified not in SET_ASIDE]
    killed = sum(f.fate in KILLING for f in judged)
    reached = sum(f.fate != "unreached" for f in judged)
    return killed, len(judged), reached


def _previous(path: Path, meta: dict[str, object]) -> dict[str, object] | None:
    """The fates file of an earlier run of the same seed, sample size, targets and sources, if there is one."""
    if not path.exists():
        return None
    try:
        old = json.loads(path.read_text())
    except ValueError:
        print(f"previous fates {path} unreadable: not compared")
        return None
    if any(old.get(k) != v for k, v in meta.items()):
        print(f"previous fates {path}: another seed, sample, targets or sources; not compared mutant by mutant")
        return None
    return dict(old)


def _resumed(
    previous: dict[str, object] | None, sample: list[Point], classified: dict[str, tuple[str, str]]
) -> list[Fate]:
    if previous is None:
        return []
    by_id = {p.id: p for p in sample}
    kept: list[Fate] = []
    for row in previous.get("fates", []):  # type: ignore[union-attr]
        point = by_id.get(row["id"])
        if point is None:
            continue
        fate = Fate(point, row["fate"], row["target"], row["killed_by"], row["cases_run"], row["seconds"])
        fate.tried = list(row.get("tried", []))
        fate.classified, fate.reason = classified.get(point.id, ("", ""))
        kept.append(fate)
    return kept


def _compare(previous: dict[str, object], fates: list[Fate]) -> None:
    before = {row["id"]: row["fate"] for row in previous.get("fates", [])}  # type: ignore[union-attr]
    lost = [f for f in fates if before.get(f.point.id) in KILLING and f.fate not in KILLING]
    gained = [f for f in fates if f.point.id in before and before[f.point.id] not in KILLING and f.fate in KILLING]
    print(f"against the previous fates: {len(gained)} newly killed, {len(lost)} no longer killed")
    for f in lost:
        print(f"  LOST {f.point.describe()}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=300, help="how many mutants to draw (default 300)")
    parser.add_argument("--seed", type=int, default=0, help="the sample's seed (default 0)")
    parser.add_argument("--targets", default=",".join(DEFAULT_TARGETS), help="model targets, in the order tried")
    parser.add_argument("--modules", help="comma-separated files or folders (default: the model's decision code)")
    parser.add_argument("--timeout", type=float, default=120.0, help="bound on one mutant's suite run, seconds")
    parser.add_argument("--min-rate", type=float, default=0.9, help="exit 1 below this kill rate")
    parser.add_argument("--out", type=Path, default=HERE / "auto_mutation_fates.json", help="the fates file")
    parser.add_argument("--classified", type=Path, default=HERE / "auto_mutation_classified.toml")
    parser.add_argument("--list", action="store_true", help="print the sampled points and exit")
    parser.add_argument(
        "--resume", action="store_true", help="keep the fates already in --out (same seed and sources), run the rest"
    )
    args = parser.parse_args(argv)
    if args.sample < 1:
        parser.error("--sample must be at least 1")
    modules = tuple(m.strip() for m in args.modules.split(",")) if args.modules else DEFAULT_MODULES
    for name in modules:
        if not (ROOT / name).exists():
            parser.error(f"--modules: {name} does not exist under {ROOT}")
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    points = points_under(ROOT, modules)
    sample = _sample(points, args.sample, args.seed)
    if args.list:
        try:
            for p in sample:
                print(p.describe())
        except BrokenPipeError:  # ``--list | head``: the reader has what it wanted
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    digests = {p.path: source_digest((ROOT / p.path).read_text(encoding="utf-8")) for p in points}
    classified = _classified(args.classified, digests)
    print(f"{len(points)} mutation points in {len(digests)} modules; {len(sample)} sampled (seed {args.seed})")
    meta = {"seed": args.seed, "sample": len(sample), "points": len(points), "targets": targets, "digests": digests}
    previous = _previous(args.out, meta)
    done = _resumed(previous, sample, classified) if args.resume else []
    if done:
        print(f"resuming: {len(done)} fates from {args.out} kept")
    started = time.monotonic()
    fates: list[Fate] = list(done)
    finished = {f.point.id for f in done}
    interrupted = False
    with tempfile.TemporaryDirectory(prefix="keyshared-automut-") as tmp:
        overlay = Path(tmp)
        _overlay(overlay)
        try:
            baselines = []
            for target in targets:
                b = _baseline(
                    overlay, target, args.timeout, cache=args.out.with_name(args.out.name + ".reach"), meta=meta
                )
                cases = sum(1 for c in b.reach if c != "<import>")
                failing = len(b.failing)
                print(f"baseline {target}: {cases} cases, {failing} failing, traced in {b.seconds:.1f} s", flush=True)
                baselines.append(b)
            for n, point in enumerate(sample, 1):
                if point.id in finished:
                    continue
                fate = _run_mutant(point, overlay, baselines, args.timeout)
                if point.id in classified:
                    fate.classified, fate.reason = classified[point.id]
                fates.append(fate)
                where = f" on {fate.target} by {fate.killed_by}" if fate.fate in KILLING else ""
                extra = f" [{fate.classified}]" if fate.classified else ""
                print(f"{n:4}/{len(sample)} {fate.fate.upper():9} {point.describe()}{where}{extra}", flush=True)
                _write(args.out, meta, fates, complete=False)  # a run cut short keeps what it measured
        except KeyboardInterrupt:
            interrupted = True
            print(f"\ninterrupted after {len(fates)} of {len(sample)} mutants; --resume goes on from {args.out}")
    rate = _summary(fates, time.monotonic() - started)
    if previous is not None and not args.resume:
        _compare(previous, fates)
    _write(args.out, meta, fates, complete=not interrupted and len(fates) == len(sample))
    print(f"fates written to {args.out}")
    if interrupted:
        return 130
    return 0 if rate >= args.min_rate else 1


def _summary(fates: list[Fate], seconds: float) -> float:
    """Print the fates by kind and area and the kill rates; return the kill rate over judged mutants."""
    killed, judged, reached = _rates(fates)
    counts = Counter(f.fate for f in fates)
    print()
    print("fates: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    by_area: dict[str, list[Fate]] = {}
    for f in fates:
        by_area.setdefault(f.point.area, []).append(f)
    for area, group in sorted(by_area.items()):
        k, j, r = _rates(group)
        print(f"  {area:12} {k}/{j} killed ({r} reached)")
    aside = sum(f.classified in SET_ASIDE for f in fates)
    rate = killed / judged if judged else 0.0
    reached_killed = sum(f.fate in KILLING for f in fates if f.fate != "unreached" and f.classified not in SET_ASIDE)
    reached_rate = reached_killed / reached if reached else 0.0
    print(
        f"killed {killed} of {judged} judged mutants: {rate:.1%} ({aside} set aside as equivalent or unobservable);"
        f" of the {reached} the suite reaches: {reached_rate:.1%}; time {seconds:.0f} s"
    )
    return rate


def _fate_row(f: Fate) -> dict[str, object]:
    return {
        "id": f.point.id,
        "area": f.point.area,
        "operator": f.point.operator,
        "original": f.point.original,
        "replacement": f.point.replacement,
        **{k: v for k, v in asdict(f).items() if k != "point"},
    }


def _write(out: Path, meta: dict[str, object], fates: list[Fate], *, complete: bool) -> None:
    killed, judged, reached = _rates(fates)
    body = {
        **meta,
        "complete": complete,
        "killed": killed,
        "judged": judged,
        "reached": reached,
        "rate": round(killed / judged, 4) if judged else 0.0,
        "fates": [_fate_row(f) for f in fates],
    }
    partial = out.with_name(out.name + ".part")
    partial.write_text(json.dumps(body, indent=1) + "\n")
    partial.replace(out)


if __name__ == "__main__":
    sys.exit(main())
