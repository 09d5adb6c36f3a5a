"""Which build of the streaming engine runs: the mypyc-compiled one (``setup.py``) or its Python source.

``KEYSHARED_COMPILE=1 pip install [-e] .`` compiles :data:`COMPILED_MODULES` into extension modules next to
their sources, and Python imports an extension before a ``.py`` of the same name.  Two cases must not run
the compiled build, so this module (imported by ``conformance.checks`` before anything else in it) loads the
sources in its place:

* the build is *stale*: a source differs from what was compiled (``setup.py`` records the sources' digests in
  ``_compiled_from.json``), so the compiled engine would apply rules the code no longer says; a warning tells
  how to rebuild;
* ``KEYSHARED_PURE=1`` asks for the source (to profile the loop, or to compare the two builds).

The modules are one mypyc group (the compiled loop reaches the compiled state classes directly), so they are
swapped together: all compiled or all source.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import os
import sys
import warnings
from pathlib import Path
from types import ModuleType

__all__ = ["COMPILED_MODULES", "choose_build", "compiled_file", "is_compiled", "running_build"]

#: The compiled group, in import order (``streaming`` imports ``_state``).
COMPILED_MODULES: tuple[str, ...] = ("conformance.checks._state", "conformance.checks.streaming")
_HERE = Path(__file__).resolve().parent
#: Written by setup.py when it compiles: source file name -> sha256 of what was compiled.
RECORD_NAME = "_compiled_from.json"
_REBUILD = "rebuild with `KEYSHARED_COMPILE=1 pip install -e .`, or delete the .so files to run the source"


def compiled_file(source: Path) -> Path | None:
    """The extension module built from ``source`` for this interpreter, if there is one."""
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        candidate = source.with_name(source.stem + suffix)
        if candidate.exists():
            return candidate
    return None


def choose_build(sources: list[Path], *, pure: bool) -> tuple[str, str]:
    """``("compiled" | "source", why)`` for a group of module sources (a function of the files alone)."""
    built = [compiled_file(source) for source in sources]
    if not any(built):
        return "source", "not compiled"
    if pure:
        return "source", "KEYSHARED_PURE=1"
    try:
        record = json.loads((sources[0].parent / RECORD_NAME).read_text())
    except (OSError, ValueError):
        return "source", f"the compiled build has no readable {RECORD_NAME}; {_REBUILD}"
    for source, extension in zip(sources, built, strict=True):
        if extension is None:
            return "source", f"{source.name} has no compiled build; {_REBUILD}"
        if record.get(source.name) != hashlib.sha256(source.read_bytes()).hexdigest():
            return "source", f"{source.name} changed since it was compiled; {_REBUILD}"
    return "compiled", "compiled with mypyc"


def _load_source(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    parent, _, child = name.rpartition(".")
    setattr(sys.modules[parent], child, module)
    return module


def _sources() -> list[Path]:
    return [_HERE / (name.rpartition(".")[2] + ".py") for name in COMPILED_MODULES]


def _select() -> tuple[str, str]:
    sources = _sources()
    build, why = choose_build(sources, pure=os.environ.get("KEYSHARED_PURE", "") not in ("", "0"))
    if build == "source" and why != "not compiled" and not all(name in sys.modules for name in COMPILED_MODULES):
        if why != "KEYSHARED_PURE=1":
            warnings.warn(f"running the streaming checker from source: {why}", RuntimeWarning, stacklevel=2)
        for name, source in zip(COMPILED_MODULES, sources, strict=True):
            _load_source(name, source)
    return build, why


_BUILD, _WHY = _select()


def running_build() -> str:
    """What runs, for reports: ``compiled with mypyc`` or ``source (why)``."""
    return _WHY if _BUILD == "compiled" else f"source ({_WHY})"


def is_compiled() -> bool:
    """Whether the streaming engine running in this process is the compiled build."""
    module = sys.modules.get("conformance.checks.streaming")
    if module is None:
        import conformance.checks.streaming as module
    return str(getattr(module, "__file__", "")).endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))
