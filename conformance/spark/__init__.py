"""The PySpark engine: the streaming checker (:mod:`conformance.checks`) run by Spark over parts of a trace.

No rule is written here. :mod:`conformance.spark.router` (each task routing a trace's events by the key they carry,
or by the key of their message, which it resolves itself; the parts then proving the split held) and
:mod:`conformance.spark.split` (a plan made before the tasks run, for what routing cannot hold) split
the events into parts the checker can judge one by one (by key, membership copied into every part; the identity
checks with their (producer, seq)), :mod:`conformance.spark.engine` runs the streaming checker on each part in
Spark's Python workers — each task reads the trace itself — and merges the results with
:func:`conformance.checks.partition.merge_parts`, so both engines return the same verdict by construction.
:mod:`conformance.spark.route` and :mod:`conformance.spark.load` are the DataFrame path for a URI only Spark reads;
:mod:`conformance.spark.standalone` starts a throwaway standalone cluster.

``pyspark`` is imported only inside these modules' functions.  The engine never starts a session: pass one, or
start it with :func:`build_session` (``keyshared check --engine spark`` does).
"""

from conformance.spark.engine import check_frames, check_many, check_with_spark, needs_plan, plan_trace, warm_workers
from conformance.spark.session import build_session, session_config

__all__ = [
    "build_session", "check_frames", "check_many", "check_with_spark", "needs_plan", "plan_trace", "session_config",
    "warm_workers",
]  # fmt: skip
