"""Reading ahead: the items of an iterator made in a background thread while the caller works on earlier ones.

The reader's work on a stored trace (Parquet decompression, the vector checks, deriving and encoding columns) is
done in pyarrow's kernels, which release the GIL; the checker's loop holds it.  Run in a thread of its own, the
reader's work overlaps the checker's on a second core instead of adding to it.

What the caller sees is the plain iterator: the same items in the same order, and an exception the iterator
raised is raised to the caller at the same point (after the items before it).  Every wait is bounded: the
thread gives up when the caller stops reading (closing the generator, or an exception in the caller), and the
caller notices a thread that died without a word.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

__all__ = ["read_ahead"]

T = TypeVar("T")

_POLL_S = 0.5  # how often a blocked side looks whether the other one is still there


class _End:
    """Put after the last item; carries the iterator's exception, if it raised one."""

    def __init__(self, error: BaseException | None) -> None:
        self.error = error


def read_ahead(make: Callable[[], Iterable[T]], depth: int = 2) -> Iterator[T]:
    """The items of ``make()``, produced in a daemon thread at most ``depth`` items ahead of the caller."""
    items: queue.Queue[T | _End] = queue.Queue(maxsize=max(depth, 1))
    stop = threading.Event()

    def put(item: T | _End) -> bool:
        while not stop.is_set():
            try:
                items.put(item, timeout=_POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in make():
                if not put(item):
                    return
        except BaseException as exc:  # handed to the caller, who raises it
            put(_End(exc))
            return
        put(_End(None))

    thread = threading.Thread(target=produce, name="keyshared-read-ahead", daemon=True)
    thread.start()
    try:
        while True:
            try:
                got = items.get(timeout=_POLL_S)
            except queue.Empty:
                if not thread.is_alive() and items.empty():
                    raise RuntimeError("the read-ahead thread ended without its last item") from None
                continue
            if isinstance(got, _End):
                if got.error is not None:
                    raise got.error
                return
            yield got
    finally:
        stop.set()
