"""Length-prefixed pickled messages between the harness and a helper process it started (the checker process,
the soak's trace sink): one framing, one bounded reader.

A frame is a 4-byte big-endian length and that many bytes of pickle.  The reader never waits past its deadline
and tells a silent child (:class:`TimeoutError`) from one that closed its output (:class:`EOFError`), so each
caller can say which process failed and how in its own words.
"""

from __future__ import annotations

import os
import pickle
import selectors
import struct
import time
from typing import IO, Any

__all__ = ["FRAME", "frame", "read_frame"]

FRAME = struct.Struct(">I")


def frame(message: Any) -> bytes:
    """``message`` as one frame."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return FRAME.pack(len(data)) + data


def read_frame(stream: IO[bytes], timeout_s: float) -> tuple[str, Any]:
    """The next ``(kind, payload)`` frame a child wrote to ``stream``, within ``timeout_s``.

    Raises :class:`TimeoutError` when none is complete in time and :class:`EOFError` when the child closes the
    stream first.
    """
    deadline = time.monotonic() + timeout_s
    fd = stream.fileno()
    buffer = b""
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            if len(buffer) >= FRAME.size:
                (size,) = FRAME.unpack_from(buffer)
                if len(buffer) >= FRAME.size + size:
                    message: tuple[str, Any] = pickle.loads(buffer[FRAME.size : FRAME.size + size])
                    return message
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no message within {timeout_s:g}s")
            if not selector.select(remaining):
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise EOFError("the process closed its output")
            buffer += chunk
