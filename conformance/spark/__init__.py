"""The PySpark engine: the same checks as :mod:`conformance.checks`, as DataFrame transforms.

Module for module the twin of the streaming engine (``exclusivity``, ``ordering``, ``loss``, ``redelivery``,
``duplicates``, ``unexpected``, ``assignment``), over the shared frames of :mod:`conformance.spark.prepare`,
composed by :mod:`conformance.spark.engine`.  Both engines return identical ``(kind, subscription, key,
events)`` for every trace (``tests/quality/test_differential.py``).

``pyspark`` is imported only inside these modules' functions.  The engine never starts a session: pass one, or
start it with :func:`build_session` (``keyshared check --engine spark`` does).
"""

from conformance.spark.engine import check_frames, check_many, check_with_spark
from conformance.spark.session import build_session, session_config

__all__ = ["build_session", "check_frames", "check_many", "check_with_spark", "session_config"]
