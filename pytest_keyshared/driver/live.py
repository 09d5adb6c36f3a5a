"""The checker, live on the events as they are recorded, with a fallback to checking the saved trace.

The streaming checker (``conformance.checks.StreamingChecker``) sees every event in trace order:

* against the model, inline from the trace writer (no threads: the run stays deterministic);
* against a real broker, in a process of its own (:mod:`.checker_process`) fed the trace lines by the run's
  :class:`~pytest_keyshared.driver.pipeline.TracePipeline`, so its work never competes with the client
  threads whose timing the trace records.

A checker that fails is taken off the live path (its error noted) and the saved trace is checked once more
at the end instead: a checker bug must never lose a run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conformance.trace import Event, TraceHeader

__all__ = ["LiveChecker", "resolve_profile"]


def resolve_profile(profile: Any) -> Any:
    """A profile object from a name (``"pip379"``), an object, or None (derived from the trace header)."""
    if profile is None or not isinstance(profile, str):
        return profile
    from conformance.checks import get_profile  # the checker is optional at import time

    return get_profile(profile)


class LiveChecker:
    """Feeds a ``StreamingChecker`` (inline, or in a child process with ``process_log``); ``finish`` judges."""

    def __init__(
        self,
        header: TraceHeader,
        profile: Any,
        *,
        enabled: bool = True,
        process_log: Path | None = None,
        finish_timeout_s: float = 120.0,
    ) -> None:
        self.header = header
        self.profile = profile
        self.finish_timeout_s = finish_timeout_s
        self.notes: list[str] = []
        self.violations_seen = 0
        self._checker: Any = None
        self._process: Any = None
        if not enabled:
            return
        try:
            from conformance.checks import TraceChecker
        except ImportError as exc:
            self.notes.append(f"no live checker ({exc})")
            return
        resolved = resolve_profile(profile)  # a bad profile name fails here, before the run
        if process_log is not None:
            from pytest_keyshared.driver.checker_process import CheckerProcess

            self._process = CheckerProcess(header, resolved, log_path=process_log)
        else:
            self._checker = TraceChecker(header, profile=resolved)

    def feed(self, event: Event) -> None:
        """Check one event inline; called in trace order."""
        checker = self._checker
        if checker is None:
            return
        try:
            found = checker.feed(event)
        except Exception as exc:  # a checker bug: check the saved trace at the end instead
            self.notes.append(f"live checker failed at event {event.i}: {type(exc).__name__}: {exc}")
            self._checker = None
            return
        if found:
            self.violations_seen += len(found)

    def feed_lines(self, data: bytes) -> None:
        """Check trace lines as the pipeline wrote them (process mode)."""
        if self._process is not None:
            self._process.feed_lines(data)

    def abandon(self, reason: str) -> None:
        """Stop using the live checker (the saved trace is checked at the end instead)."""
        if self._checker is not None or self._process is not None:
            self.notes.append(reason)
            self._checker = None
            self._process = None

    def finish(self, trace_path: Path) -> Any:
        """The verdict: the live checker's, else a check of the saved trace, else None (no checker)."""
        if self._process is not None:
            from pytest_keyshared.driver.checker_process import CheckerProcessError

            try:
                return self._process.finish(self.finish_timeout_s)
            except CheckerProcessError as exc:
                self.notes.append(f"{exc}; checked the saved trace instead")
        if self._checker is not None:
            try:
                return self._checker.finish()
            except Exception as exc:
                self.notes.append(f"live checker failed at the end: {type(exc).__name__}: {exc}")
        try:
            from conformance.checks import check_trace
        except ImportError as exc:
            self.notes.append(f"trace not judged: no checker installed ({exc})")
            return None
        return check_trace(trace_path, profile=resolve_profile(self.profile))
