"""Entry point of the soak's trace sink process (``python -m pytest_keyshared.soak.sink_child``).

A module of its own because :mod:`.sink` is imported by the package (through the runner): running that module
with ``-m`` would load it twice and make Python warn about it.
"""

from __future__ import annotations

import sys

from pytest_keyshared.soak.sink import child_main

if __name__ == "__main__":  # pragma: no cover - runs in the child
    sys.exit(child_main())
