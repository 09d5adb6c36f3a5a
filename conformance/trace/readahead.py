"""Reading ahead: the items of an iterator made in a background thread while the caller works on earlier ones.

The reader's work on a stored trace (Parquet decompression, the vector checks, deriving and encoding columns) is
done in pyarrow's kernels, which release the GIL; the checker's loop holds it.  Run in a thread of its own, the
reader's work overlaps the checker's on a second core instead of adding to it.

The reader's thread needs the GIL back after each pyarrow call (a batch costs it dozens), and a thread waiting
for the GIL gets it only when the holder's switch interval runs out (5 ms by default): against a checker loop
that never blocks, the reader would spend most of its time waiting, and the checker then waits for the reader.
While a read-ahead runs, the interpreter's switch interval is therefore shortened (:data:`SWITCH_INTERVAL_S`,
restored when the last read-ahead ends): the reader gets the GIL within a millisecond, and as it asks for it
only between pyarrow calls, the checker's loop is interrupted about as often as before.  (Measured on a shared
2-core machine against a loop busy 110 ms per batch: the checker waited 0.5-0.6 s for the reader at 5 ms,
0.3 s at 1 ms and no less at 0.2 ms, which slowed the loop's own work a little more.)

What the caller sees is the plain iterator: the same items in the same order, and an exception the iterator
raised is raised to the caller at the same point (after the items before it).  Every wait is bounded: the
thread gives up when the caller stops reading (closing the generator, or an exception in the caller), and the
caller notices a thread that died without a word.
"""

from __future__ import annotations

import queue
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

__all__ = ["read_ahead"]

T = TypeVar("T")

_POLL_S = 0.5  # how often a blocked side looks whether the other one is still there
#: The switch interval while a read-ahead runs (seconds; Python's default is 0.005).
SWITCH_INTERVAL_S = 0.001

_switch_lock = threading.Lock()
_running = 0  # read-aheads running now
_saved_interval = 0.0  # the switch interval before the first of them started


def _shorten_switch_interval() -> None:
    global _running, _saved_interval
    with _switch_lock:
        if _running == 0:
            _saved_interval = sys.getswitchinterval()
            sys.setswitchinterval(min(_saved_interval, SWITCH_INTERVAL_S))
        _running += 1


def _restore_switch_interval() -> None:
    global _running
    with _switch_lock:
        _running -= 1
        if _running == 0:
            sys.setswitchinterval(_saved_interval)


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
    _shorten_switch_interval()
    try:
        thread.start()
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
        _restore_switch_interval()
