"""Spark session settings for this project (a function the CLI and the tests call; the engine never does).

The checker functions take a session (or use the active one); they never start one, so a caller decides the
master, the memory and the JIT flags.  :func:`build_session` gathers the settings measured on our 2-core
machines (``/work/shared/research/pyspark.md``): loopback only (``SPARK_LOCAL_IP`` and the driver address),
workers on this interpreter (``PYSPARK_PYTHON``), no UI, few shuffle partitions.  ``for_tests`` adds the
C1-only JIT and no whole-stage codegen: ~40% faster for many small jobs, slower for big ones.
"""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["build_context", "build_session", "session_config"]


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
    if for_tests or small:
        conf["spark.driver.extraJavaOptions"] = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
        conf["spark.executor.extraJavaOptions"] = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"  # on a cluster
        conf["spark.sql.codegen.wholeStage"] = "false"
    return conf


def build_session(
    master: str = "local[*]", *, for_tests: bool = False, driver_memory: str | None = None, small: bool = False
) -> Any:
    """Start (or join) a SparkSession with this project's settings; the caller stops it."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    for key, value in session_config(master, for_tests=for_tests, driver_memory=driver_memory, small=small).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def build_context(master: str = "local[*]", *, driver_memory: str | None = None) -> Any:
    """Start a SparkContext alone, with the settings of :func:`build_session` for traces the engine's tasks
    read (``small``); the caller stops it.

    The engine's tasks need Spark Core only.  A SparkSession on top costs seconds more to start (the builder
    applies its settings to the SQL session state, which builds it); ``keyshared check`` starts a session only
    for a URI only Spark reads.
    """
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark import SparkConf, SparkContext

    conf = SparkConf().setAll(list(session_config(master, driver_memory=driver_memory, small=True).items()))
    context = SparkContext.getOrCreate(conf)
    context.setLogLevel("ERROR")
    return context
