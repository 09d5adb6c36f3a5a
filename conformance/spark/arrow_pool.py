"""pyarrow's allocator for the Spark engine's work: the C library's ``malloc``, not pyarrow's default pool.

A Spark task and the driver's plan each meet their first large trace in a process that has not yet allocated
much: a Python worker of the session, a driver that has only started Spark.  There pyarrow's default pool
(mimalloc in the Linux wheels this project installs) spent far more system time on fresh memory than the C
library's.  Measured at 3M events on a 2-core machine, the first check of a session, ``local[2]``, 2 parts:

* with mimalloc: plan 1.22-1.27 s, job 4.34-5.09 s, each task 4.13-4.92 s of CPU (0.48-0.72 s system time);
* with the C library's pool: plan 0.72-0.88 s, job 4.01-4.15 s, each task 3.80-3.95 s (0.29-0.35 s system);
* ``local[1]`` on one part: 7.75-8.21 s against 7.56-7.72 s;
* the Python engine in one process: no difference (7.26-7.88 s against 7.68-8.06 s), so it keeps the default.

The pool of a Spark task's process is chosen where the process starts
(``spark.executorEnv.ARROW_DEFAULT_MEMORY_POOL``, set by :func:`conformance.spark.session.session_config`):
pyarrow's C++ readers allocate from the process's C++ default, which only that variable sets.  The driver's
plan runs in the caller's process, so :func:`system_pool` switches pyarrow's pool for the plan only and puts it
back after, once the last of any overlapping users is done; a pool the user chose (``ARROW_DEFAULT_MEMORY_POOL``)
is left alone.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["system_pool"]

_lock = threading.Lock()
_users = 0
_previous: list[Any] = []  # the pool to put back when the last user is done


@contextlib.contextmanager
def system_pool() -> Iterator[None]:
    """Run the block with pyarrow allocating through the C library's ``malloc`` (see the module)."""
    global _users
    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        yield
        return
    import pyarrow as pa

    with _lock:
        if _users == 0:
            _previous[:] = [pa.default_memory_pool()]
            pa.set_memory_pool(pa.system_memory_pool())
        _users += 1
    try:
        yield
    finally:
        with _lock:
            _users -= 1
            if _users == 0:
                pa.set_memory_pool(_previous.pop())
