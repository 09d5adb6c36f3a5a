"""The live checker in a process of its own, for runs against real brokers.

Python runs one thread at a time.  A checker thread in the driver's process would compete for the
interpreter with the consumer and producer threads whose timing the trace records, and slow them.  So the
run's pipeline thread hands this process the trace lines it has just written (the same bytes, encoded
once); here they are parsed, validated and fed to ``StreamingChecker`` as they arrive, on another core, and
the verdict goes back at the end.

Wire format.  Parent to child: one JSON line ``{"header": {...}, "profile": NAME | null, "profile_pickle":
BASE64 | null}``, then the trace's event lines; end of input means "finish".  Child to parent: a 4-byte
big-endian length and a pickle of ``("verdict", Verdict)`` or ``("error", text)`` (the child is our own
program, started by us; nothing else writes to these pipes).  Every wait on the child is bounded; when it
fails, the caller checks the saved trace instead.
"""

from __future__ import annotations

import base64
import json
import pickle
import sys
from pathlib import Path
from typing import Any

from conformance.trace import TraceHeader
from pytest_keyshared.driver.frames import ReplyingChild, to_frame

__all__ = ["CheckerProcess", "CheckerProcessError"]


class CheckerProcessError(Exception):
    """The checker process failed or did not answer in time (the run checks its saved trace instead)."""


class CheckerProcess:
    """Parent side: start the child, stream trace lines to it, collect the verdict."""

    def __init__(
        self, header: TraceHeader, profile: Any, *, log_path: Path, options: dict[str, Any] | None = None
    ) -> None:
        """``options``: ``prune_keep`` (the soak's bounded live check, :mod:`pytest_keyshared.soak.live`) and
        ``status_path`` (a file the child rewrites with ``"<events> <violations>"`` now and then)."""
        self._child = ReplyingChild(
            "pytest_keyshared.driver.checker_process",
            name="checker process",
            error=CheckerProcessError,
            log_path=log_path,
        )
        first = {
            "header": header.to_dict(),
            "profile": profile if isinstance(profile, str) else None,
            "profile_pickle": None
            if profile is None or isinstance(profile, str)
            else base64.b64encode(pickle.dumps(profile)).decode(),
            **(options or {}),
        }
        self.feed_lines((json.dumps(first) + "\n").encode())

    @property
    def pid(self) -> int:
        return self._child.proc.pid

    @property
    def failed(self) -> str | None:
        """Why the child stopped reading, once it has (the run goes on; :meth:`finish` reports it)."""
        return self._child.failed

    def feed_lines(self, data: bytes) -> None:
        """Complete trace lines (each ending in a newline), in trace order."""
        self._child.write(data)

    def finish(self, timeout_s: float) -> Any:
        """The verdict; raises :class:`CheckerProcessError` when the child failed or ran out of time."""
        return self._child.answer("verdict", "a verdict", timeout_s)


def _child_main() -> int:  # pragma: no cover - runs in the child (exercised by tests through the parent)
    from conformance.checks import TraceChecker, get_profile
    from conformance.trace.validation import EventValidator

    lines = iter(sys.stdin.buffer)
    error: str | None = None
    checker: Any = None
    try:
        first = json.loads(next(lines))
        profile: Any = first["profile"]
        if first["profile_pickle"] is not None:
            profile = pickle.loads(base64.b64decode(first["profile_pickle"]))
        elif profile is not None:
            profile = get_profile(profile)
        checker = TraceChecker(TraceHeader.from_dict(first["header"]), profile=profile)
        validator = EventValidator("the live trace")
        keep = first.get("prune_keep")
        status = first.get("status_path")
        found = 0
        for position, line in enumerate(lines, start=2):
            found += len(checker.feed(validator.event(json.loads(line), position)))
            if position % 2048 == 0:
                if keep is not None and position % 10240 == 0:
                    from pytest_keyshared.soak.live import prune

                    prune(checker, int(keep))
                if status is not None:
                    Path(status).write_text(f"{position - 1} {found}\n", encoding="utf-8")
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
        for _ in lines:  # keep reading, so the parent never blocks on a full pipe
            pass
    try:
        reply: tuple[str, Any] = ("error", error) if error is not None else ("verdict", checker.finish())
    except Exception as exc:
        reply = ("error", f"{type(exc).__name__}: {exc}")
    sys.stdout.buffer.write(to_frame(reply))
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(_child_main())
