"""The Spark engine's pyarrow pool: the driver's plan and the session's Python workers allocate through the C
library (``conformance.spark.arrow_pool`` gives the measurements), and a pool the user chose is left alone."""

from __future__ import annotations

import threading

import pytest

pa = pytest.importorskip("pyarrow")


@pytest.fixture(autouse=True)
def no_chosen_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)


def test_the_plan_allocates_through_the_c_library_and_the_pool_is_put_back() -> None:
    from conformance.spark.arrow_pool import system_pool

    before = pa.default_memory_pool().backend_name
    with system_pool():
        assert pa.default_memory_pool().backend_name == "system"
        assert pa.array(["a", "b"]).to_pylist() == ["a", "b"]  # allocated there, usable after
    assert pa.default_memory_pool().backend_name == before


def test_the_pool_is_put_back_after_a_failure() -> None:
    from conformance.spark.arrow_pool import system_pool

    before = pa.default_memory_pool().backend_name
    with pytest.raises(ZeroDivisionError), system_pool():
        1 / 0  # noqa: B018
    assert pa.default_memory_pool().backend_name == before


def test_overlapping_users_put_the_pool_back_once_the_last_is_done() -> None:
    """Two plans in two threads, the first done before the second: the second keeps the C library's pool to its
    end, and the first pool comes back only then."""
    from conformance.spark.arrow_pool import system_pool

    before = pa.default_memory_pool().backend_name
    inside, first_done, seen = threading.Event(), threading.Event(), []

    def second() -> None:
        with system_pool():
            inside.set()
            first_done.wait(10)
            seen.append(pa.default_memory_pool().backend_name)

    thread = threading.Thread(target=second)
    with system_pool():
        thread.start()
        assert inside.wait(10)
    first_done.set()
    thread.join(10)
    assert seen == ["system"]
    assert pa.default_memory_pool().backend_name == before


def test_a_pool_the_user_chose_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    from conformance.spark.arrow_pool import system_pool
    from conformance.spark.session import session_config

    monkeypatch.setenv("ARROW_DEFAULT_MEMORY_POOL", "jemalloc")
    before = pa.default_memory_pool().backend_name
    with system_pool():
        assert pa.default_memory_pool().backend_name == before
    assert session_config("local[2]")["spark.executorEnv.ARROW_DEFAULT_MEMORY_POOL"] == "jemalloc"


def test_the_session_gives_its_python_workers_the_c_library_pool() -> None:
    from conformance.spark.session import session_config

    for conf in (session_config("local[2]"), session_config("spark://h:7077", small=True)):
        assert conf["spark.executorEnv.ARROW_DEFAULT_MEMORY_POOL"] == "system"
