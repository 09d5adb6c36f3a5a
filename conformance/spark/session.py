"""Spark session settings for this project (a function the CLI and the tests call; the engine never does).

The checker functions take a session (or use the active one); they never start one, so a caller decides the
master, the memory and the JIT flags.  :func:`build_session` gathers the settings measured on our 2-core
machines (``/work/shared/research/pyspark.md``): loopback only (``SPARK_LOCAL_IP`` and the driver address),
workers on this interpreter (``PYSPARK_PYTHON``), no UI, few shuffle partitions.  ``for_tests`` adds the
C1-only JIT and no whole-stage codegen: ~40% faster for many small jobs, slower for big ones.  ``class_cache``
loads the driver JVM's classes from an archive a first run made (:mod:`conformance.spark.class_cache`); such a
session is stopped with :func:`stop`, which keeps the archive a first run dumps.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

__all__ = ["build_context", "build_session", "session_config", "stop"]


def session_config(
    master: str, *, for_tests: bool = False, driver_memory: str | None = None, small: bool = False
) -> dict[str, str]:
    """The builder settings :func:`build_session` applies (data, for inspection and tests; the one thing read
    from the environment is a pyarrow memory pool the user chose, passed on to the workers).

    ``small``: the JVM has little to do — a small trace, or any trace the engine's tasks read themselves (the
    JVM then carries no rows of it): the quick-start JIT settings of ``for_tests`` and 1g of driver memory
    (start-up dominates such a run).  Only a trace read by Spark itself (a URI only Spark reads) wants the
    full JIT and 4g.
    """
    parallelism = "2" if for_tests or small else "8"
    conf = {
        "spark.master": master,
        "spark.app.name": "keyshared-check",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        # only the DataFrame path (check_frames: a URI only Spark reads) shuffles; the engine's tasks are one per
        # part, and the parts default to spark.default.parallelism, left to Spark: the cores of the master
        "spark.sql.shuffle.partitions": parallelism,
        "spark.driver.memory": driver_memory or ("1g" if for_tests or small else "4g"),
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        # a caller that caches a trace (the engine itself does not): compressing the columns costs more CPU than
        # reading them back saves
        "spark.sql.inMemoryColumnarStorage.compressed": "false",
        # the Python workers' pyarrow allocates through the C library, not its default mimalloc, which made each
        # task's first large trace cost 0.3-0.9 s more CPU, mostly system time (conformance.spark.arrow_pool);
        # a pool the user chose for this process is passed on instead
        "spark.executorEnv.ARROW_DEFAULT_MEMORY_POOL": os.environ.get("ARROW_DEFAULT_MEMORY_POOL") or "system",
    }
    quick_jit = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
    if for_tests or small:
        conf["spark.executor.extraJavaOptions"] = quick_jit  # on a cluster
        conf["spark.sql.codegen.wholeStage"] = "false"
    driver_options = " ".join(filter(None, [_log_option(), quick_jit if for_tests or small else ""]))
    if driver_options:
        conf["spark.driver.extraJavaOptions"] = driver_options
    return conf


def _log_option() -> str:
    """The driver JVM's logging: this package's ``log4j2.properties`` (warnings and errors, without Spark's
    start-up chatter on the terminal of ``keyshared check``), unless the user configures Spark
    (``SPARK_CONF_DIR``: their own ``log4j2.properties`` is read from there)."""
    if os.environ.get("SPARK_CONF_DIR"):
        return ""
    from pathlib import Path

    return f"-Dlog4j2.configurationFile={(Path(__file__).parent / 'log4j2.properties').as_uri()}"


def build_session(
    master: str = "local[*]",
    *,
    for_tests: bool = False,
    driver_memory: str | None = None,
    small: bool = False,
    class_cache: bool = False,
    user_conf: Mapping[str, str] | None = None,
) -> Any:
    """Start (or join) a SparkSession with this project's settings; the caller stops it (:func:`stop`, which
    a ``class_cache`` run needs: see :mod:`conformance.spark.class_cache`).  ``user_conf``: the user's settings
    (``keyshared check --spark-conf``), applied over this project's."""
    from pyspark.sql import SparkSession

    _environment()
    conf = {
        **session_config(master, for_tests=for_tests, driver_memory=driver_memory, small=small),
        **(user_conf or {}),
    }

    def start(settings: dict[str, str]) -> Any:
        builder = SparkSession.builder
        for key, value in settings.items():
            builder = builder.config(key, value)
        return builder.getOrCreate()

    spark, cache = _started(start, conf, class_cache)
    spark.sparkContext.setLogLevel("ERROR")
    spark.sparkContext._keyshared_class_cache = cache
    return spark


def build_context(
    master: str = "local[*]",
    *,
    driver_memory: str | None = None,
    class_cache: bool = False,
    user_conf: Mapping[str, str] | None = None,
) -> Any:
    """Start a SparkContext alone, with the settings of :func:`build_session` for traces the engine's tasks
    read (``small``), and the user's ``user_conf`` over them; the caller stops it (:func:`stop`).

    The engine's tasks need Spark Core only.  A SparkSession on top costs seconds more to start (the builder
    applies its settings to the SQL session state, which builds it); ``keyshared check`` starts a session only
    for a URI only Spark reads.
    """
    from pyspark import SparkConf, SparkContext

    _environment()
    conf = {**session_config(master, driver_memory=driver_memory, small=True), **(user_conf or {})}
    context, cache = _started(
        lambda settings: SparkContext.getOrCreate(SparkConf().setAll(list(settings.items()))), conf, class_cache
    )
    context.setLogLevel("ERROR")
    context._keyshared_class_cache = cache
    return context


def stop(spark: Any) -> None:
    """Stop a session or context this module started; a run dumping the driver's class archive then waits for
    its JVM to exit (bounded) and keeps the archive (:meth:`~conformance.spark.class_cache.ClassCache.finish`)."""
    context = getattr(spark, "sparkContext", spark)
    cache = getattr(context, "_keyshared_class_cache", None)
    spark.stop()
    if cache is None or not cache.dumping or getattr(context, "_jsc", None) is not None:
        return  # nothing to keep, or a session lent to the caller (its stop did not stop it)
    from pyspark import SparkContext

    gateway: Any = SparkContext._gateway
    process = getattr(gateway, "proc", None)
    if process is None:
        cache.abandon()
        return
    import subprocess

    gateway.shutdown()
    SparkContext._gateway = SparkContext._jvm = None  # a later context starts a JVM of its own
    if process.stdin is not None:
        process.stdin.close()  # the gateway's JVM exits when its stdin closes, dumping the classes it loaded
    try:
        process.wait(timeout=_DUMP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        cache.abandon()
        return
    if process.returncode == 0:
        cache.finish()
    else:
        cache.abandon()


#: How long a JVM dumping its class archive may take to exit (measured: a few seconds on 2 cores).
_DUMP_TIMEOUT_S = 120


def _environment() -> None:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


def _started(start: Any, conf: dict[str, str], class_cache: bool) -> tuple[Any, Any]:
    """``start(settings)`` with the driver's class archive (:mod:`conformance.spark.class_cache`) where asked
    and possible, else without; ``(what started, the cache or None)``.  A JVM that will not start with the
    archive is started again without it, and the archive removed."""
    from conformance.spark.class_cache import ClassCache

    if not class_cache or not ClassCache.enabled():
        return start(conf), None
    key = "spark.driver.extraJavaOptions"
    cache = ClassCache(conf.get(key, ""), conf.get("spark.driver.memory", ""))
    options = cache.java_options()
    if not options:
        return start(conf), None
    try:
        return start({**conf, key: f"{conf.get(key, '')} {options}".strip()}), cache
    except Exception:  # the archive (or the dump) is the suspect: once more without it
        cache.abandon()
        return start(conf), None
