"""The compiled streaming engine (mypyc, ``setup.py``): chosen only when it matches its source, and it judges
exactly as the source does.

The README's test command builds it (``KEYSHARED_COMPILE=1``), so these tests run against what the benchmark
measures; a checkout without the build fails here with the command that makes it.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import json
import os
import subprocess
import sys
from pathlib import Path

from trace_synth import PLANTABLE, SynthConfig, fuzz, synthesize

from conformance.checks import check_trace
from conformance.checks._build import RECORD_NAME, choose_build, is_compiled, running_build
from conformance.trace.parquet import write_parquet

SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]


def _group(tmp_path: Path, *, record: bool = True) -> list[Path]:
    sources = []
    for name in ("_state", "streaming"):
        source = tmp_path / f"{name}.py"
        source.write_text(f"X = {name!r}\n")
        (tmp_path / f"{name}{SUFFIX}").write_bytes(b"\x7fELF")
        sources.append(source)
    if record:
        digests = {s.name: hashlib.sha256(s.read_bytes()).hexdigest() for s in sources}
        (tmp_path / RECORD_NAME).write_text(json.dumps(digests))
    return sources


def test_a_build_that_matches_its_sources_is_chosen(tmp_path: Path) -> None:
    assert choose_build(_group(tmp_path), pure=False) == ("compiled", "compiled with mypyc")


def test_no_build_runs_the_source(tmp_path: Path) -> None:
    source = tmp_path / "streaming.py"
    source.write_text("X = 1\n")
    assert choose_build([source], pure=False) == ("source", "not compiled")


def test_keyshared_pure_asks_for_the_source(tmp_path: Path) -> None:
    assert choose_build(_group(tmp_path), pure=True) == ("source", "KEYSHARED_PURE=1")


def test_a_source_edited_after_the_build_makes_it_stale(tmp_path: Path) -> None:
    sources = _group(tmp_path)
    sources[1].write_text("X = 'edited'\n")
    build, why = choose_build(sources, pure=False)
    assert build == "source"
    assert why.startswith("streaming.py changed since it was compiled; rebuild with `KEYSHARED_COMPILE=1")


def test_a_build_without_its_record_or_with_a_module_missing_is_not_trusted(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    assert choose_build(_group(tmp_path / "a", record=False), pure=False)[0] == "source"
    sources = _group(tmp_path / "b")
    (tmp_path / "b" / f"_state{SUFFIX}").unlink()
    build, why = choose_build(sources, pure=False)
    assert (build, why.split(";")[0]) == ("source", "_state.py has no compiled build")


def test_this_checkout_runs_the_compiled_engine() -> None:
    """What the benchmark measures is what the tests check: the README's test command builds it."""
    assert is_compiled(), (
        f"the streaming engine runs from source here ({running_build()}): "
        "build it with `KEYSHARED_COMPILE=1 pip install -e .` (the README's test command does)"
    )


def test_the_compiled_group_type_checks_as_its_build_will(tmp_path: Path) -> None:
    """mypyc type-checks every module the compiled group imports, strictly, before it builds: one type error
    anywhere in that graph (a Spark module included) makes ``pip install`` of the README's test command fail
    before a single test runs. This runs the same check, so the error shows here, named, first."""
    root = Path(__file__).resolve().parents[2]
    modules = [str(root / "conformance" / "checks" / f"{name}.py") for name in ("_state", "streaming")]
    command = [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "mypy"), *modules]
    done = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"mypyc's build would fail on these type errors:\n{done.stdout}{done.stderr}"


_SOURCE_VERDICTS = """
import json, sys
from pathlib import Path
from conformance.checks import check_trace
from conformance.checks._build import is_compiled
assert not is_compiled()
print(json.dumps([check_trace(path).to_json() for path in sorted(Path(sys.argv[1]).glob("*.parquet"))]))
"""


def test_the_compiled_and_the_source_engine_give_the_same_verdicts(tmp_path: Path) -> None:
    """Synthetic runs with every kind planted, clean runs and fuzzed ones, read through the batch path; the
    source engine runs in a child process (``KEYSHARED_PURE=1``)."""
    assert is_compiled(), running_build()
    kinds = sorted(PLANTABLE)
    planted = 0  # each planted run takes the next kind, so every kind is planted (twice with 42 runs and 9 kinds)
    for n in range(42):
        if n % 3 == 2:
            run = fuzz(n, faults=n % 2 == 0, selector=None if n % 5 == 0 else "auto-split")
        else:
            cfg = SynthConfig(partitions=n % 3, messages=30, fault_rate=0.02 if n % 4 == 0 else 0.0)
            plant = set() if n % 6 == 0 else {kinds[planted % len(kinds)]}
            planted += bool(plant)
            run = synthesize(n, cfg, plant=plant)
        write_parquet(tmp_path / f"{n:03}.parquet", run.header, run.events)
    compiled = [check_trace(path).to_json() for path in sorted(tmp_path.glob("*.parquet"))]
    found = {v["kind"] for verdict in compiled for v in verdict["violations"]}
    assert found == {k.value for k in PLANTABLE}, "the traces must exercise every plantable kind"
    env = dict(os.environ, KEYSHARED_PURE="1")
    out = subprocess.run(
        [sys.executable, "-c", _SOURCE_VERDICTS, str(tmp_path)], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout) == compiled


def test_a_batch_decodes_into_shared_strings(tmp_path: Path) -> None:
    """Equal labels are one object, within a batch and across the batches of one decoder (the loop's
    dictionaries find them by identity), and the batch path judges as the event path does."""
    from conformance.trace.decode import ROW_FIELDS, RowDecoder
    from conformance.trace.reader import open_trace

    run = synthesize(7, SynthConfig(messages=20))
    path = write_parquet(tmp_path / "t.parquet", run.header, run.events)
    (batch,) = list(open_trace(path).row_batches())
    decoder = RowDecoder()
    by_value: dict[str, int] = {}
    for half in (batch.slice(0, batch.num_rows // 2), batch.slice(batch.num_rows // 2)):
        decoded = decoder.decode(half)
        for name in ("op", "consumer", "key", "stream"):
            for value in decoded.columns[ROW_FIELDS.index(name)]:
                if isinstance(value, str):
                    assert by_value.setdefault(value, id(value)) == id(value)
    assert check_trace(path).to_json() == check_trace(run.events, header=run.header).to_json()
