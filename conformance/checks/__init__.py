"""The checkers: every property of a delivery trace, judged by a streaming Python engine.

``check_trace(path_or_events, profile=None, engine="python" | "spark")`` returns a
:class:`~conformance.verdict.Verdict`; :class:`StreamingChecker` checks live (``writer.add_listener(checker.feed)``).
One module per property (``exclusivity``, ``ordering``, ``loss``, ``redelivery``, ``redelivery_count``, ``duplicates``,
``unexpected``, ``assignment``, ``replication``) holds its rule, its witness and its explanation; ``streaming``
composes the delivery checks into one pass and :class:`TraceChecker` runs it and the replication check, each
guarded (a check that raises makes the verdict ``unknown``); :mod:`~conformance.checks.partition` runs the
streaming pass over parts of a trace and merges them (the PySpark engine, :mod:`conformance.spark`, does that
in Spark's workers).  Rules: ``docs/checker.md``.
The streaming engine may run compiled (mypyc, ``setup.py``): :mod:`conformance.checks._build` picks the build
before anything else here is imported.
"""

from conformance.checks import _build  # noqa: F401  (first: it decides which build of the engine is imported)
from conformance.checks.api import ENGINES, TraceChecker, check_events, check_source, check_trace
from conformance.checks.streaming import StreamingChecker
from conformance.profiles import PROFILES, Profile, get_profile, profile_for_header
from conformance.trace.validation import TraceFormatError
from conformance.verdict import Validity, Verdict
from conformance.violations import KINDS, Kind, Violation

__all__ = [
    "ENGINES",
    "KINDS",
    "PROFILES",
    "Kind",
    "Profile",
    "StreamingChecker",
    "TraceChecker",
    "TraceFormatError",
    "Validity",
    "Verdict",
    "Violation",
    "check_events",
    "check_source",
    "check_trace",
    "get_profile",
    "profile_for_header",
]
