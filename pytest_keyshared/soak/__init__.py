"""Soak runs: a seeded generator and a nemesis over the driver, traced to Parquet chunks (``docs/soak.md``).

``run_soak(target, SoakPlan(...), out_dir=...)`` is the library entry; ``keyshared soak`` and the
``keyshared_soak`` fixture are shells over it.
"""

from pytest_keyshared.soak.runner import SoakRecorder, SoakResult, SoakStatus, check_soak_plan, run_soak

__all__ = ["SoakRecorder", "SoakResult", "SoakStatus", "check_soak_plan", "run_soak"]
