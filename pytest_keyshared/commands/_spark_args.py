"""``keyshared check --spark-conf KEY=VALUE``: Spark settings the way ``spark-submit --conf`` takes them.

Each pair is one setting, applied over the ones ``keyshared`` gives its session
(:func:`conformance.spark.session.build_context`); ``SPARK_CONF_DIR`` keeps working beside them.  A malformed
pair is bad input: one line naming it, exit 2.
"""

from __future__ import annotations

from collections.abc import Sequence

from reference_model.errors import InvalidArgument

__all__ = ["MEMORY_KEYS", "parse_spark_conf"]

#: The settings the part count is chosen from (:mod:`conformance.spark.parts`): their values must be sizes.
MEMORY_KEYS = ("spark.driver.memory", "spark.executor.memory", "spark.executor.pyspark.memory")


def parse_spark_conf(pairs: Sequence[str] | None) -> dict[str, str]:
    """``KEY=VALUE`` pairs as settings, a later pair overriding an earlier one (as ``spark-submit`` does).

    Refused (``InvalidArgument``): a pair without ``=`` or with an empty key, a key that is not a Spark setting
    (Spark's start with ``spark.``; ``spark-submit`` would ignore it), a memory setting that is not a size.
    """
    from conformance.spark.parts import parse_memory

    settings: dict[str, str] = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise InvalidArgument(f"--spark-conf expects KEY=VALUE (as spark-submit --conf), not {pair!r}")
        if not key.startswith("spark."):
            raise InvalidArgument(
                f"--spark-conf {pair!r}: {key!r} is not a Spark setting (Spark's settings start with 'spark.')"
            )
        if key in MEMORY_KEYS:
            try:
                parse_memory(value)
            except ValueError as exc:
                raise InvalidArgument(f"--spark-conf {pair!r}: {exc}") from None
        settings[key] = value
    return settings
