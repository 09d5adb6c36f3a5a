"""The ``keyshared`` command: a thin shell over library functions.

Each subcommand lives in :mod:`pytest_keyshared.commands` as a module with ``add_parser(subparsers)``; the
parser it adds sets ``handler`` to a function ``(args) -> int``.  :func:`main` runs every handler under the one
error and exit-code policy of :mod:`pytest_keyshared.commands._errors`: 0 valid, 1 violations found, 2 bad input,
3 target failure (or an unexpected error, naming where to look), 4 verdict unknown, 130 interrupted.  Errors
print as one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from pytest_keyshared.commands._errors import EXIT_BAD_INPUT, invoke

__all__ = ["COMMANDS", "ArgumentParser", "build_parser", "main", "program"]

#: Subcommand modules under ``pytest_keyshared.commands``, in the order ``--help`` lists them.
COMMANDS: tuple[str, ...] = ("run", "soak", "check", "convert", "replay", "report", "ranges", "select")


class ArgumentParser(argparse.ArgumentParser):
    """An argparse parser whose usage errors are one line and exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="keyshared",
        description="Check Pulsar-compatible brokers against Key_Shared, deduplication and "
        "replicated-subscription contracts.",
        epilog="exit codes: 0 valid, 1 violations found, 2 bad input, 3 target failure, 4 verdict unknown,"
        " 130 interrupted",
    )
    parser.add_argument("--version", action=_VersionAction, nargs=0, help="show the program's version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=ArgumentParser)
    for name in COMMANDS:
        qualified = f"pytest_keyshared.commands.{name}"
        if importlib.util.find_spec(qualified) is None:  # a subcommand not built yet
            continue
        importlib.import_module(qualified).add_parser(sub)
    return parser


class _VersionAction(argparse.Action):
    """``--version``: the installed version, looked up only when asked (reading package metadata takes
    longer than the rest of the parser)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: Any, values: Any, option: Any = None) -> None:
        print(f"keyshared (pytest-keyshared) {_version()}")
        parser.exit()


def _version() -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version("pytest-keyshared")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - run from a source tree
        return "unknown"


def main(argv: Sequence[str] | None = None, *, whole_process: bool = False) -> int:
    """Run one ``keyshared`` command and return its exit code.

    ``whole_process``: the command is all this process does, and it exits next (the ``keyshared`` program,
    :func:`program`); a command may then skip work only a process that goes on needs (``check`` skips the
    collection of the checker's garbage).  Callers in a longer-lived process (tests) leave it False.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "handler", None) is None:
        parser.print_help(sys.stderr)
        return EXIT_BAD_INPUT
    args.whole_process = whole_process
    return invoke(args.command, args.handler, args)


def program() -> NoReturn:
    """The ``keyshared`` program (the console script and ``python -m pytest_keyshared.cli``)."""
    sys.exit(main(whole_process=True))


if __name__ == "__main__":  # pragma: no cover
    program()
