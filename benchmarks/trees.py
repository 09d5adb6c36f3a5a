"""Two source trees side by side, for before/after comparisons: a commit's tree and this checkout's, each in a
directory of its own, each optionally built with mypyc as CI builds the engine.

``bench_checker.py --compare-ref REF`` times the engine of both, alternated, and ``verdict_identity.py --ref REF``
checks that both give byte-identical verdicts.  Each tree runs in a child process with the tree first on
``PYTHONPATH`` (ahead of any installed copy of the package), so what runs is what the tree holds:

* :func:`export_ref` writes a commit's tree (``git archive``: no work tree, nothing of the repository touched);
* :func:`export_checkout` copies this checkout's files as they are now (committed or not; ``git ls-files``), so
  that building it leaves the checkout without extension modules;
* :func:`build` compiles the tree's engine in place with its own ``setup.py`` (``KEYSHARED_COMPILE=1 setup.py
  build_ext --inplace``: the modules its ``COMPILED`` names, one mypyc group, ``opt_level=3``; what
  ``KEYSHARED_COMPILE=1 pip install -e .`` builds in CI) and checks that the tree then runs the compiled build.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

__all__ = ["ROOT", "build", "env_for", "export_checkout", "export_ref", "running_build"]


def _git(*args: str) -> bytes:
    return subprocess.run(["git", "-C", str(ROOT), *args], check=True, capture_output=True).stdout


def export_ref(ref: str, dest: Path) -> Path:
    """The tree of commit ``ref`` in ``dest`` (replaced if it exists)."""
    commit = _git("rev-parse", "--verify", f"{ref}^{{commit}}").decode().strip()
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    with tarfile.open(fileobj=BytesIO(_git("archive", "--format=tar", commit))) as tar:
        tar.extractall(dest)
    (dest / ".tree").write_text(f"{ref} ({commit[:12]})\n")
    return dest


def export_checkout(dest: Path) -> Path:
    """This checkout's tracked and untracked-but-not-ignored files as they are now, in ``dest`` (replaced)."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    names = _git("ls-files", "-z", "--cached", "--others", "--exclude-standard").split(b"\0")
    for raw in names:
        if not raw:
            continue
        name = raw.decode()
        source = ROOT / name
        if source.is_file():
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    head = _git("rev-parse", "HEAD").decode().strip()[:12]
    dirty = " with uncommitted changes" if _git("status", "--porcelain", "--untracked-files=no").strip() else ""
    (dest / ".tree").write_text(f"this checkout ({head}{dirty})\n")
    return dest


def env_for(tree: Path, *, pure: bool) -> dict[str, str]:
    """The environment of a child process running ``tree``'s code (``pure``: its engine from source)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tree), str(tree / "tests" / "support")]))
    env.pop("KEYSHARED_PURE", None)
    if pure:
        env["KEYSHARED_PURE"] = "1"
    return env


def running_build(tree: Path, *, pure: bool) -> str:
    """What ``tree``'s engine runs as in a child process (``conformance.checks._build.running_build()``), and
    from which directory: a check that the child imports the tree, not an installed copy."""
    code = "import conformance, conformance.checks._build as b; print(b.running_build(), '|', conformance.__file__)"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tree, env=env_for(tree, pure=pure), check=True, capture_output=True,
        text=True,
    ).stdout.strip()  # fmt: skip
    build, _, where = out.partition(" | ")
    if not Path(where).resolve().is_relative_to(tree.resolve()):
        raise SystemExit(f"trees: {tree} imports conformance from {where}, not from the tree")
    return build


def build(tree: Path, log: Path) -> None:
    """Compile ``tree``'s streaming engine with mypyc, in place, as its ``setup.py`` does (minutes).

    The tree's ``pyproject.toml`` names its licence as an SPDX string, which setuptools before 68 refuses (pip
    builds in isolation with a newer one); with an older setuptools here the line is dropped from the copy."""
    import setuptools

    if int(setuptools.__version__.split(".")[0]) < 68:
        project = tree / "pyproject.toml"
        lines = project.read_text().splitlines(keepends=True)
        project.write_text("".join(line for line in lines if not line.startswith("license = ")))
    env = dict(os.environ, KEYSHARED_COMPILE="1")
    with log.open("w") as out:
        done = subprocess.run(
            [sys.executable, "setup.py", "build_ext", "--inplace"], cwd=tree, env=env, stdout=out, stderr=out,
            check=False,
        )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"trees: building {tree} with mypyc failed (exit {done.returncode}); see {log}")
    got = running_build(tree, pure=False)
    if got != "compiled with mypyc":
        raise SystemExit(f"trees: {tree} was built but runs {got!r}; see {log}")
