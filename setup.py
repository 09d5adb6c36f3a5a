"""Build hook for the optional compiled streaming checker; everything else about the package is in pyproject.toml.

``KEYSHARED_COMPILE=1 pip install [-e] .`` compiles the streaming engine's hot modules with mypyc: the same
source, typed as it is, turned into a C extension (1.3x to 1.5x the pure-Python speed in our runs of
``benchmarks/bench_checker.py``).  Without the variable the package is pure Python and behaves identically.
mypyc comes from mypy; under pip's build isolation it is requested as a build requirement only when compiling.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from setuptools import setup

#: The modules compiled together (one mypyc group): the loop and the state it works on.
COMPILED = ["conformance/checks/_state.py", "conformance/checks/streaming.py"]
#: What the build was made from (file name -> sha256), shipped beside the modules: at import,
#: ``conformance.checks._build`` runs the source instead of a build whose sources have changed since.
RECORD = Path("conformance/checks/_compiled_from.json")


def compiled_extensions() -> tuple[list[object], list[str]]:
    """(extensions, build requirements still missing) for this build."""
    if os.environ.get("KEYSHARED_COMPILE", "") in ("", "0"):
        return [], []
    try:
        from mypyc.build import mypycify
    except ImportError:  # the build backend asks first which requirements it needs, then builds with them
        return [], ["mypy>=1.15,<3"]
    extensions = list(mypycify(COMPILED, opt_level="3", group_name="keyshared_checks"))
    digests = {Path(path).name: hashlib.sha256(Path(path).read_bytes()).hexdigest() for path in COMPILED}
    RECORD.write_text(json.dumps(digests, indent=1, sort_keys=True) + "\n")
    return extensions, []


extensions, missing = compiled_extensions()
setup(ext_modules=extensions, setup_requires=missing)
