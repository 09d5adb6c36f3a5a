"""Length-prefixed pickled messages between the harness and a helper process it started (the checker process,
the soak's trace sink): one framing, one bounded reader.

A frame is a 4-byte big-endian length and that many bytes of pickle.  The reader never waits past its deadline
and tells a silent child (:class:`TimeoutError`) from one that closed its output (:class:`EOFError`), so each
caller can say which process failed and how in its own words.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import selectors
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

__all__ = ["FRAME", "ReplyingChild", "read_frame", "to_frame"]

FRAME = struct.Struct(">I")


def to_frame(message: Any) -> bytes:
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


class ReplyingChild:
    """The parent's side of a helper process that the harness feeds on its stdin and that answers with one frame
    once its input ends (the checker process, the soak's trace sink).

    Writes never raise: a child that stopped reading is remembered and reported when the answer is asked for, so
    a run records its trace to the end whatever the helper does.  The wait for the answer is bounded, and the
    child is always waited for (killed after 5 s), never left behind.
    """

    def __init__(self, module: str, *, name: str, error: type[Exception], log_path: Path) -> None:
        """Start ``python -m module`` in a session of its own (Ctrl-C reaches the run, which then ends the
        helper's input), its stderr appended to ``log_path``.  ``name`` says which process in every message."""
        with log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", module],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                start_new_session=True,
            )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin: IO[bytes] = self.proc.stdin
        self.stdout: IO[bytes] = self.proc.stdout
        self.name = name
        self.error = error
        self.failed: str | None = None  #: why the child stopped reading, once it has

    def write(self, data: bytes) -> None:
        if self.failed is not None:
            return
        try:
            self.stdin.write(data)
            self.stdin.flush()
        except (BrokenPipeError, OSError, ValueError) as exc:
            self.failed = f"{self.name} stopped reading ({type(exc).__name__}: {exc})"

    def answer(self, kind: str, awaited: str, timeout_s: float) -> Any:
        """End the child's input and return the payload of its ``kind`` answer (``awaited`` names it in errors);
        raises ``error`` when the child failed, answered otherwise or did not answer within ``timeout_s``."""
        try:
            with contextlib.suppress(OSError, ValueError):
                self.stdin.close()
            if self.failed is not None:
                raise self.error(self.failed)
            try:
                got, payload = read_frame(self.stdout, timeout_s)
            except TimeoutError:
                raise self.error(f"{self.name} gave no {awaited} within {timeout_s:g}s") from None
            except EOFError:
                raise self.error(f"{self.name} exited (code {self.proc.poll()}) without {awaited}") from None
            if got != kind:
                raise self.error(f"{self.name}: {payload}")
            return payload
        finally:
            self.stop()

    def stop(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)
        with contextlib.suppress(OSError):
            self.stdout.close()
