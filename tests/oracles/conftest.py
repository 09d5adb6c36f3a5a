"""The oracle tests read Pulsar's pinned unit-test values from ``tests/unit/pulsar_vectors.py``."""

from __future__ import annotations

import sys
from pathlib import Path

_UNIT = str(Path(__file__).resolve().parents[1] / "unit")
if _UNIT not in sys.path:
    sys.path.append(_UNIT)
