"""One Spark session for the whole run: local[2] on loopback, with the fast-test JVM settings.

Starting a session costs 8-15 s on our machines; every Spark test shares this one (never one per test,
module or xdist worker).  ``conformance.spark.build_session`` sets SPARK_LOCAL_IP and PYSPARK_PYTHON.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from conformance.spark import build_session
    from conformance.spark.session import stop

    session = build_session("local[2]", for_tests=True, class_cache=True)
    yield session
    stop(session)
