"""One error and exit-code policy for every ``keyshared`` subcommand.

=====  ===================================================================================================
code   meaning
=====  ===================================================================================================
0      valid
1      violations found
2      bad input: a usage error; an unreadable, empty or malformed file; an unknown scenario, target,
       profile or option; a step the target cannot perform
3      target failure: the broker would not start, is unreachable or died; also an unexpected error inside
       keyshared (the line names the file holding the traceback and the artifacts to look at)
4      verdict ``unknown``: nothing to judge (a trace without events), a contract that could not be judged,
       or a check that crashed
130    interrupted (Ctrl-C or SIGTERM): what was recorded is kept, the trace complete up to that point
=====  ===================================================================================================

Every failure is **one line** on stderr, ``keyshared <command>: <what happened>``, never a traceback.

How a subcommand adopts the policy: list its module in :data:`pytest_keyshared.cli.COMMANDS`; ``cli.main``
calls every handler through :func:`invoke`, so there is nothing else to do.  Inside the handler:

* raise :class:`~reference_model.errors.InvalidArgument` for bad input and
  :class:`~pytest_keyshared.targets.TargetError` for a target failure (any ``KeySharedError`` carries its code);
* call :func:`look_at` as soon as the artifacts directory (or trace) is known, so that an interruption or an
  unexpected error names it;
* return :func:`verdict_exit` of the verdict it judged.

A new subcommand, in full::

    # pytest_keyshared/commands/soak.py  (and "soak" added to cli.COMMANDS)
    from pytest_keyshared.commands._errors import look_at, verdict_exit

    def add_parser(subparsers):
        parser = subparsers.add_parser("soak", help="...")
        parser.set_defaults(handler=run)

    def run(args) -> int:
        out = ...                      # decided first: from here on, failures name it
        look_at(out)
        verdict = ...                  # raise InvalidArgument / TargetError on bad input / a failed target
        return verdict_exit(verdict)   # 0, 1 or 4

A handler called from elsewhere (a test, another command) gets the same treatment with ``@policy("name")``.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import signal
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from reference_model.errors import KeySharedError

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_INTERRUPTED",
    "EXIT_TARGET",
    "EXIT_UNKNOWN",
    "EXIT_VALID",
    "EXIT_VIOLATIONS",
    "Handler",
    "invoke",
    "look_at",
    "one_line",
    "policy",
    "verdict_exit",
]

EXIT_VALID = 0
EXIT_VIOLATIONS = 1
EXIT_BAD_INPUT = 2
EXIT_TARGET = 3
EXIT_UNKNOWN = 4
EXIT_INTERRUPTED = 130

Handler = Callable[[argparse.Namespace], int]

#: Where the running command keeps what a user should look at after a failure (artifacts dir, trace, log).
_LOOK_AT: ContextVar[tuple[Path, ...]] = ContextVar("keyshared_look_at", default=())
#: Modules of the Pulsar client whose exceptions mean the broker failed us (connect error, timeout, ...).
_CLIENT_MODULES = ("pulsar", "_pulsar")


def look_at(path: str | Path) -> None:
    """Name ``path`` (artifacts directory, trace or log) in the line printed if the command fails from here on."""
    _LOOK_AT.set((*_LOOK_AT.get(), Path(path)))


def verdict_exit(verdict: Any) -> int:
    """0 valid, 1 invalid, 4 unknown (also no verdict at all: nothing judged the trace)."""
    if verdict is None:
        return EXIT_UNKNOWN
    validity = str(getattr(verdict, "validity", "valid" if verdict.valid else "invalid"))
    if validity == "unknown":  # also under a profile that counts unknown as invalid: the trace was not judged
        return EXIT_UNKNOWN
    return EXIT_VALID if validity == "valid" and verdict.valid else EXIT_VIOLATIONS


def one_line(text: object) -> str:
    """``text`` on one line: a multi-line message would break the one-line contract of stderr."""
    return " ".join(str(text).split())


def invoke(command: str, handler: Handler, args: argparse.Namespace) -> int:
    """Run ``handler(args)`` under the policy and return the exit code (see the module docstring)."""
    token = _LOOK_AT.set(())
    try:
        with _sigterm_as_interrupt():
            return int(handler(args))
    except KeyboardInterrupt:
        kept = _where()
        _say(command, "interrupted" + (f"; what was recorded is in {kept}" if kept else ""))
        return EXIT_INTERRUPTED
    except KeySharedError as exc:
        # a failure mid-run: the trace so far is there (unless the error names where to look itself)
        where = _see() if exc.exit_code == EXIT_TARGET and not getattr(exc, "names_where", False) else ""
        _say(command, f"{type(exc).__name__}: {exc}{where}")
        return int(exc.exit_code)
    except (ConnectionError, TimeoutError) as exc:
        _say(command, f"target failure: {type(exc).__name__}: {exc}{_see()}")
        return EXIT_TARGET
    except OSError as exc:  # a file or directory the user named cannot be read or written
        _say(command, f"{type(exc).__name__}: {exc}")
        return EXIT_BAD_INPUT
    except Exception as exc:
        if type(exc).__module__.split(".")[0] in _CLIENT_MODULES:
            _say(command, f"target failure: pulsar client: {type(exc).__name__}: {exc}{_see()}")
            return EXIT_TARGET
        saved = _save_traceback(command)
        what = f"{type(exc).__name__}: {exc}"
        _say(command, f"unexpected error (a bug in keyshared): {what}; traceback in {saved}{_see()}")
        return EXIT_TARGET
    finally:
        _LOOK_AT.reset(token)


def policy(command: str) -> Callable[[Handler], Handler]:
    """Decorator: ``handler(args)`` returns its exit code under the policy instead of raising."""

    def wrap(handler: Handler) -> Handler:
        @functools.wraps(handler)
        def guarded(args: argparse.Namespace) -> int:
            return invoke(command, handler, args)

        return guarded

    return wrap


def _say(command: str, message: str) -> None:
    sys.stdout.flush()
    print(f"keyshared {command}: {one_line(message)}", file=sys.stderr, flush=True)


def _where() -> str:
    """The places named so far that hold something: a line never points at a directory that was not made, or
    at one left empty (a target that failed before anything was written)."""
    return ", ".join(dict.fromkeys(str(p) for p in _LOOK_AT.get() if _written(p)))


def _written(path: Path) -> bool:
    try:
        return path.is_file() or (path.is_dir() and any(path.iterdir()))
    except OSError:
        return False


def _see() -> str:
    where = _where()
    return f" (see {where})" if where else ""


def _save_traceback(command: str) -> Path:
    """Write the current traceback beside the artifacts (or to a temporary file) and return its path."""
    text = traceback.format_exc()
    for place in _LOOK_AT.get():
        directory = place if place.is_dir() else place.parent
        if directory.is_dir():
            path = directory / f"keyshared-{command}-error.txt"
            with contextlib.suppress(OSError):
                path.write_text(text, encoding="utf-8")
                return path
    with tempfile.NamedTemporaryFile(
        "w", prefix=f"keyshared-{command}-error-", suffix=".txt", delete=False, encoding="utf-8"
    ) as fh:
        fh.write(text)
        return Path(fh.name)


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM stops a command like Ctrl-C: the trace is finished and the broker stopped before exiting."""

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread (tests calling main() from a thread)
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
