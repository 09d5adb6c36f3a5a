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
   A selector or hashing point (``ORACLE_PATHS``) the targets did not kill is then given to the independent
   selector oracle (``tests/oracles``, importing nothing from ``reference_model``): it drives the model's selectors
   and a second implementation through random memberships at a release on each side of every selector change, from
   2.8.0 on (``ERA_RELEASES``: the 2.x-3.3.1 collision-list ring, the pre-apache/pulsar#24730 sticky selector of
   3.0.13 / 4.0.6, ...), so the older selector code the three targets (each line's newest patch) never run is
   judged there; a failing oracle test kills the mutant (judge ``oracle``).  Older release lines are not added as
   targets: each would add a whole traced suite to the baseline (about 4-5 minutes per line on the shared 2-core
   machine), and the code where the eras differ most, the selectors, is judged by the oracle at every era.  What
   stays outside this run's reach is the version-gated *dispatch* code of older lines only (e.g. redelivery counts
   before 2.11): such a point is ``unreached`` here, not killed.  ``--oracle-only`` re-runs just the oracle judge
   for ``--only`` ids.
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
import ast
import contextlib
import difflib
import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

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
#: Points the independent selector oracle judges (``tests/oracles``: the model's selectors against a second
#: implementation on random memberships of every era, and Pulsar's pinned values): tried after the targets, as
#: the judge ``oracle``.  The conformance cases ask the model's own selector which consumer owns a key, so a
#: selector bug moves their oracle with it; this one does not move.
ORACLE_PATHS = ("reference_model/selectors/", "reference_model/hashing.py")
ORACLE = "oracle"


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
    shutil.copytree(ROOT / "tests" / "oracles", into / "tests" / "oracles", ignore=ignore)
    (into / "tests" / "unit").mkdir(parents=True, exist_ok=True)
    shutil.copy2(ROOT / "tests" / "unit" / "pulsar_vectors.py", into / "tests" / "unit" / "pulsar_vectors.py")


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _stop_group(proc: subprocess.Popen[str]) -> None:
    """End the suite run ``proc`` and everything it started: its own process group (``start_new_session``), by
    its pid; SIGTERM first, SIGKILL after a short grace."""
    for sig, grace in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 3.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=grace)
            break
        except subprocess.TimeoutExpired:
            continue
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # a grandchild left in the group after pytest itself exited


def _run_child(cmd: list[str], cwd: Path, env: dict[str, str], timeout_s: float) -> tuple[int, str]:
    """(exit status, output) of one suite run, in a session of its own.

    The child does not share the terminal's process group, so a ^C reaches only this script, which then ends
    the child's whole group by pid (``_stop_group``) and lets ``KeyboardInterrupt`` go on: the first ^C stops
    the run at once instead of being fielded by the child's pytest while this loop starts the next mutant.
    A timeout ends the group the same way, so no stray run keeps a core busy."""
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    try:
        output, _ = proc.communicate(timeout=timeout_s)
    except BaseException:  # TimeoutExpired, KeyboardInterrupt, SystemExit: the child must not outlive it
        _stop_group(proc)
        proc.communicate()
        raise
    return proc.returncode, output


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
        returncode, output = _run_child(cmd, overlay, env, timeout_s)
    except subprocess.TimeoutExpired:
        return {"<timeout>"}, set(), f"did not finish within {timeout_s:.0f} s", time.monotonic() - started
    elapsed = time.monotonic() - started
    if not report.exists():
        tail = " | ".join(output.strip().splitlines()[-2:])
        return {"<crash>"}, set(), f"pytest exit {returncode}: {tail[:200]}", elapsed
    failed: set[str] = set()
    ran: set[str] = set()
    for case in ET.parse(report).getroot().iter("testcase"):
        file = case.get("file") or case.get("classname", "").replace(".", "/") + ".py"
        nodeid = f"{file}::{case.get('name')}"
        ran.add(nodeid)
        if case.find("failure") is not None or case.find("error") is not None:
            failed.add(nodeid)
    note = "" if returncode in (0, 1, 5) else f"pytest exit {returncode}"
    if returncode in (2, 3, 4) and not ran:
        return {"<crash>"}, ran, note, elapsed
    return failed, ran, note, elapsed


def _oracle(overlay: Path, timeout_s: float) -> tuple[str, float]:
    """Run ``tests/oracles`` from the overlay (``-x``); (the first failing test or a note, or "" when all pass;
    seconds)."""
    report = overlay / "oracle.xml"
    report.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "pytest", "tests/oracles", "-x", "-q", "-p", "no:randomly", "-p", "no:cacheprovider"]
    cmd += ["--rootdir", str(overlay), f"--junitxml={report}"]
    env = dict(os.environ, KEYSHARED_PURE="1", PYTHONDONTWRITEBYTECODE="1")
    started = time.monotonic()
    try:
        returncode, output = _run_child(cmd, overlay, env, timeout_s)
    except subprocess.TimeoutExpired:
        return f"did not finish within {timeout_s:.0f} s", time.monotonic() - started
    elapsed = time.monotonic() - started
    if not report.exists():
        return f"pytest exit {returncode}: " + " | ".join(output.strip().splitlines()[-2:])[:200], elapsed
    for case in ET.parse(report).getroot().iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            return f"tests/oracles::{case.get('name')}", elapsed
    return ("" if returncode in (0, 5) else f"pytest exit {returncode}"), elapsed


def _judged_by_oracle(point: Point) -> bool:
    return point.path.startswith(ORACLE_PATHS)


@dataclass
class Baseline:
    target: str
    failing: set[str]
    #: node id -> {path: lines}
    reach: dict[str, dict[str, set[int]]]
    seconds: float

    def cases_reaching(self, point: Point) -> list[str]:
        """The baseline-passing cases that execute the point's line.  A line executed only at import (a module
        constant, a class body, a decorator's code generation) runs before any case, but every case may read
        what it built: such a point runs every passing case."""
        if point.line in self.reach.get("<import>", {}).get(point.path, set()) and not any(
            point.line in files.get(point.path, set()) for case, files in self.reach.items() if case != "<import>"
        ):
            return sorted(case for case in self.reach if case != "<import>" and case not in self.failing)
        return sorted(
            case
            for case, files in self.reach.items()
            if case != "<import>" and case not in self.failing and point.line in files.get(point.path, set())
        )


def _suite_digest() -> str:
    """A digest of the suite's own sources (the cases, generators and plugin): the traced reach of a baseline holds
    only while they are unchanged, so a case added to close a survivor is traced again, not read from the cache."""
    h = hashlib.sha256()
    for package in PACKAGES[1:]:
        for file in sorted((ROOT / package).rglob("*")):
            if (
                file.is_file()
                and file.suffix in (".py", ".toml", ".json", ".yaml", ".txt")
                and "__pycache__" not in file.parts
            ):
                h.update(file.relative_to(ROOT).as_posix().encode())
                h.update(file.read_bytes())
    return h.hexdigest()[:16]


def _baseline(overlay: Path, target: str, timeout_s: float, *, cache: Path, meta: dict[str, object]) -> Baseline:
    """The unmutated suite on ``target``, traced; kept in ``cache`` (a folder) for the same sources."""
    key = json.dumps({"target": target, "digests": meta["digests"], "suite": _suite_digest()}, sort_keys=True)
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


def _run_mutant(
    point: Point,
    overlay: Path,
    baselines: list[Baseline],
    timeout_s: float,
    *,
    oracle: bool,
    before: Fate | None = None,
) -> Fate:
    """The mutant's fate: the targets in order (none when ``before`` is given: its fate stands, only the oracle
    runs), then, for a selector or hashing point the targets did not kill, the selector oracle."""
    fate = Fate(point) if before is None else before
    source_path = overlay / point.path
    original = source_path.read_text(encoding="utf-8")
    source_path.write_text(apply_point(original, point), encoding="utf-8")
    try:
        for baseline in baselines if before is None else []:
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
        if oracle and _judged_by_oracle(point) and fate.fate not in KILLING:
            fate.tried = [t for t in fate.tried if t != ORACLE] + [ORACLE]
            failing, secs = _oracle(overlay, timeout_s)
            fate.seconds += secs
            if failing:
                kind = "timeout" if failing.startswith("did not finish") else "killed"
                fate.fate, fate.target, fate.killed_by = kind, ORACLE, failing
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
    for row in _rows(previous):
        point = by_id.get(row["id"])
        if point is None:
            continue
        fate = Fate(point, row["fate"], row["target"], row["killed_by"], row["cases_run"], row["seconds"])
        fate.tried = list(row.get("tried", []))
        fate.classified, fate.reason = classified.get(point.id, ("", ""))
        kept.append(fate)
    return kept


def _rows(previous: dict[str, object]) -> list[dict[str, Any]]:
    """The fate rows of a fates file (``fates``: a list of objects)."""
    rows = previous.get("fates", [])
    return list(rows) if isinstance(rows, list) else []


def _compare(previous: dict[str, object], fates: list[Fate]) -> None:
    before = {row["id"]: row["fate"] for row in _rows(previous)}
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
    parser.add_argument(
        "--no-oracle", action="store_true", help="do not run the selector oracle (tests/oracles) on selector points"
    )
    parser.add_argument(
        "--oracle-only",
        action="store_true",
        help="with --only: keep the targets' fates in --out and run only the selector oracle on these mutants",
    )
    parser.add_argument("--list", action="store_true", help="print the sampled points and exit")
    parser.add_argument(
        "--report",
        action="store_true",
        help="print the figures of the fates in --out with the classification; run nothing",
    )
    parser.add_argument("--show", metavar="ID", help="print one point's mutant (the changed lines, as a diff) and exit")
    parser.add_argument(
        "--only",
        metavar="IDS",
        help="run only these sampled points (comma-separated ids, or @FILE with one id a line); their new fates"
        " replace the old ones in --out, every other fate there is kept",
    )
    parser.add_argument(
        "--resume", action="store_true", help="keep the fates already in --out (same seed and sources), run the rest"
    )
    parser.add_argument(
        "--carry",
        action="store_true",
        help="the model's sources changed since --out was measured: carry its sample (and the classification) to"
        " the current sources, point by point, and pin it there; the carried fates are marked, to be measured again",
    )
    args = parser.parse_args(argv)
    if args.sample < 1:
        parser.error("--sample must be at least 1")
    if args.oracle_only and (not args.only or args.no_oracle):
        parser.error("--oracle-only needs --only (and the oracle: not with --no-oracle)")
    modules = tuple(m.strip() for m in args.modules.split(",")) if args.modules else DEFAULT_MODULES
    for name in modules:
        if not (ROOT / name).exists():
            parser.error(f"--modules: {name} does not exist under {ROOT}")
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    points = points_under(ROOT, modules)
    if args.carry:
        return _carry(args.out, args.classified, points, targets)
    pinned = _pinned(args.out, points, args.seed, args.sample)
    sample = pinned or _sample(points, args.sample, args.seed)
    if args.show:
        return _show(args.show, points)
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
    meta: dict[str, object] = {
        "seed": args.seed,
        "sample": len(sample),
        "points": len(points),
        "targets": targets,
        "digests": digests,
    }
    if pinned:
        meta["pinned"] = [p.id for p in pinned]  # kept by every later write: the sample is the carried one
    previous = _previous(args.out, meta)
    if args.report:
        if previous is None:
            parser.error(f"--report needs a fates file of the same seed, sample, targets and sources in {args.out}")
        measured = _resumed(previous, sample, classified)
        print(f"{len(measured)} of {len(sample)} sampled mutants measured in {args.out}")
        rate = _summary(measured, sum(f.seconds for f in measured))
        return 0 if rate >= args.min_rate else 1
    stale: dict[str, Fate] = {}
    if args.only:
        wanted = _only_ids(args.only)
        unknown = sorted(wanted - {p.id for p in sample})
        if unknown:
            parser.error(f"--only: {unknown[0]} is not in the sample (seed {args.seed}, --sample {args.sample})")
        if previous is None:
            parser.error(f"--only needs a fates file of the same seed and sources in {args.out} to update")
        kept = _resumed(previous, sample, classified)
        done = [f for f in kept if f.point.id not in wanted]
        stale = {f.point.id: f for f in kept if f.point.id in wanted}  # written back until measured again
        sample = [p for p in sample if p.id in wanted] + [f.point for f in done]
        print(f"subset: {len(wanted)} mutants run, {len(done)} other fates kept from {args.out}")
    else:
        done = _resumed(previous, sample, classified) if args.resume else []
    if done and not args.only:
        print(f"resuming: {len(done)} fates from {args.out} kept")
    # ^C (and SIGTERM) end the run at once even when the shell started it with SIGINT ignored (``cmd &``)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)
    started = time.monotonic()
    fates: list[Fate] = list(done)
    finished = {f.point.id for f in done}
    interrupted = False
    with tempfile.TemporaryDirectory(prefix="keyshared-automut-") as tmp:
        overlay = Path(tmp)
        _overlay(overlay)
        try:
            baselines = []
            for target in [] if args.oracle_only else targets:
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
                fate = _run_mutant(
                    point,
                    overlay,
                    [] if args.oracle_only else baselines,
                    args.timeout,
                    oracle=not args.no_oracle,
                    before=stale.get(point.id) if args.oracle_only else None,
                )
                if point.id in classified:
                    fate.classified, fate.reason = classified[point.id]
                fates.append(fate)
                where = f" on {fate.target} by {fate.killed_by}" if fate.fate in KILLING else ""
                extra = f" [{fate.classified}]" if fate.classified else ""
                print(f"{n:4}/{len(sample)} {fate.fate.upper():9} {point.describe()}{where}{extra}", flush=True)
                stale.pop(point.id, None)
                _write(args.out, meta, [*fates, *stale.values()], complete=False)  # a run cut short keeps them
        except KeyboardInterrupt:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second ^C must not cut the fates file short
            interrupted = True
            again = "--only with the same ids" if args.only else "--resume"
            print(f"\ninterrupted after {len(fates)} of {len(sample)} mutants; {again} goes on from {args.out}")
    rate = _summary(fates, time.monotonic() - started)
    if previous is not None and not args.resume and not args.only:
        _compare(previous, fates)
    fates.extend(stale.values())  # --only cut short: the fates not measured again stay as they were
    _write(args.out, meta, fates, complete=not interrupted and len(fates) == len(sample))
    print(f"fates written to {args.out}")
    if interrupted:
        return 130
    return 0 if rate >= args.min_rate else 1


def _pinned(out: Path, points: list[Point], seed: int, size: int) -> list[Point] | None:
    """The sample a fates file pins (``pinned``: written by ``--carry``), for the same seed, when every pinned
    point exists in the current sources; else None (the sample is drawn).  A pinned sample is the carried one, of
    the size the carry kept, whatever ``--sample`` says."""
    if not out.exists():
        return None
    try:
        old = json.loads(out.read_text())
    except ValueError:
        return None
    pinned = old.get("pinned")
    if not isinstance(pinned, list) or old.get("seed") != seed or old.get("sample") != len(pinned) or size < 1:
        return None
    by_id = {p.id: p for p in points}
    if not all(pid in by_id for pid in pinned):
        return None
    return [by_id[pid] for pid in pinned]


def _match(row: dict[str, Any], points_of_file: list[Point], taken: set[str]) -> Point | None:
    """The current point an old fate row names: the same file, operator, original and replacement, at the nearest
    line (then column) to the old one, not taken by another row."""
    _path, line, col, _operator, _index = row["id"].rsplit(":", 4)
    old_line, old_col = int(line), int(col)
    same = [
        p
        for p in points_of_file
        if p.operator == row["operator"]
        and p.original == row["original"]
        and p.replacement == row["replacement"]
        and p.id not in taken
    ]
    if not same:
        return None
    return min(same, key=lambda p: (abs(p.line - old_line), abs(p.col - old_col), p.id))


def _carry(out: Path, classified_path: Path, points: list[Point], targets: list[str]) -> int:
    """``--carry``: the fates file's sample mapped onto the current sources (:func:`_match`), pinned there, its
    fates kept and marked ``carried`` (measured on the previous sources: ``--only`` measures them again), and the
    classification's tables of those mutants renamed to their new ids with the current digests."""
    if not out.exists():
        print(f"auto_mutation: --carry needs a fates file in {out}", file=sys.stderr)
        return 2
    old = json.loads(out.read_text())
    by_file: dict[str, list[Point]] = {}
    for p in points:
        by_file.setdefault(p.path, []).append(p)
    digests = {path: source_digest((ROOT / path).read_text(encoding="utf-8")) for path in by_file}
    taken: set[str] = set()
    renamed: dict[str, str] = {}
    rows: list[dict[str, Any]] = []
    lost: list[str] = []
    for row in _rows(old):
        path = row["id"].split(":", 1)[0]
        point = _match(row, by_file.get(path, []), taken)
        if point is None:
            lost.append(row["id"])
            continue
        taken.add(point.id)
        if point.id != row["id"] or old.get("digests", {}).get(path) != digests.get(path):
            renamed[row["id"]] = point.id
            row = {**row, "id": point.id, "carried": row.get("carried") or row["id"]}
        rows.append(row)
    pinned = [r["id"] for r in rows]
    meta = {"seed": old["seed"], "sample": len(pinned), "points": len(points), "targets": targets, "digests": digests}
    body = {**meta, "pinned": pinned, "complete": old.get("complete", False), "fates": rows}
    out.write_text(json.dumps(body, indent=1) + "\n")
    if classified_path.exists():
        text = classified_path.read_text()
        for old_id, new_id in renamed.items():
            head = f'[mutant."{old_id}"]\n'
            at = text.find(head)
            if at < 0:
                continue
            end = text.find("\n[", at + len(head))
            end = len(text) if end < 0 else end + 1
            table = text[at:end]
            first = table[len(head) :]
            origin = "" if first.startswith("carried = ") else f'carried = "{old_id}"\n'  # the first id stays
            table = table.replace(head, f'[mutant."{new_id}"]\n{origin}', 1)
            table = re.sub(r'^digest = ".*"$', f'digest = "{digests[new_id.split(":", 1)[0]]}"', table, count=1,
                           flags=re.MULTILINE)  # fmt: skip
            text = text[:at] + table + text[end:]
        classified_path.write_text(text)
    print(f"carried {len(rows)} of {len(_rows(old))} sampled mutants to the current sources ({len(renamed)} moved or in"
          f" changed files, marked carried: measure them again with --only); {len(lost)} without a match")  # fmt: skip
    for pid in lost:
        print(f"  NO MATCH {pid}")
    return 0


def _only_ids(spec: str) -> set[str]:
    if spec.startswith("@"):
        lines = Path(spec[1:]).read_text().splitlines()
        return {line.split("#", 1)[0].strip() for line in lines if line.split("#", 1)[0].strip()}
    return {part.strip() for part in spec.split(",") if part.strip()}


def _show(pid: str, points: list[Point]) -> int:
    """Print the mutant ``pid`` as a unified diff of its module (the unparsed original against the mutant, so the
    layout matches line for line)."""
    point = next((p for p in points if p.id == pid), None)
    if point is None:
        print(f"auto_mutation: no mutation point {pid} in the model's current source", file=sys.stderr)
        return 2
    source = (ROOT / point.path).read_text(encoding="utf-8")
    before = (ast.unparse(ast.parse(source)) + "\n").splitlines(keepends=True)
    after = apply_point(source, point).splitlines(keepends=True)
    print(point.describe())
    sys.stdout.writelines(difflib.unified_diff(before, after, point.path, "mutant", n=4))
    return 0


def _summary(fates: list[Fate], seconds: float) -> float:
    """Print the fates by kind and area and the kill rates; return the kill rate over judged mutants."""
    killed, judged, reached = _rates(fates)
    counts = Counter(f.fate for f in fates)
    print()
    print("fates: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    by_area: dict[str, list[Fate]] = {}
    for f in fates:
        by_area.setdefault(f.point.area, []).append(f)

    def open_survivors(group: list[Fate]) -> int:
        return sum(f.fate not in KILLING and f.classified not in SET_ASIDE for f in group)

    # the area with the most survivors first: where the suite's reach is shortest
    for area, group in sorted(by_area.items(), key=lambda item: (-open_survivors(item[1]), item[0])):
        k, j, r = _rates(group)
        share = f"{k / j:.0%}" if j else "-"
        print(f"  {area:12} {k}/{j} killed ({share}; {r} reached, {open_survivors(group)} survive)")
    _print_classes(fates)
    aside = sum(f.classified in SET_ASIDE for f in fates)
    rate = killed / judged if judged else 0.0
    reached_killed = sum(f.fate in KILLING for f in fates if f.fate != "unreached" and f.classified not in SET_ASIDE)
    reached_rate = reached_killed / reached if reached else 0.0
    print(
        f"killed {killed} of {judged} judged mutants: {rate:.1%} ({aside} set aside as equivalent or unobservable);"
        f" of the {reached} the suite reaches: {reached_rate:.1%}; time {seconds:.0f} s"
    )
    return rate


def _print_classes(fates: list[Fate]) -> None:
    """The hand classification against this run: how many of each class, which ``dimension`` mutants a run now
    kills (closed) and which still survive (open), survivors nobody classified, and set-aside mutants that a
    case killed after all (their classification is wrong)."""
    counts = Counter(f.classified for f in fates if f.classified)
    closed = [f for f in fates if f.classified == "dimension" and f.fate in KILLING]
    still = [f for f in fates if f.classified == "dimension" and f.fate not in KILLING]
    unclassified = [f for f in fates if not f.classified and f.fate not in KILLING]
    wrong = [f for f in fates if f.classified in SET_ASIDE and f.fate in KILLING]
    print(
        f"classified: {counts['equivalent']} equivalent, {counts['unobservable']} unobservable (set aside);"
        f" {counts['dimension']} missing a dimension: {len(closed)} now killed, {len(still)} open;"
        f" {len(unclassified)} survivors unclassified"
    )
    for f in unclassified:
        print(f"  UNCLASSIFIED {f.fate} {f.point.describe()}")
    for f in wrong:
        print(f"  KILLED ALTHOUGH {f.classified.upper()}: {f.point.describe()} (fix the classification)")


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
