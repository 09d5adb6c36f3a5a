"""The ``keyshared`` command: a thin shell over library functions.

Each subcommand lives in :mod:`pytest_keyshared.commands` as a module with ``add_parser(subparsers)``; the
parser it adds sets ``handler`` to a function ``(args) -> int``.  Exit codes, shared by all subcommands:
0 success / valid, 1 violations found, 2 bad input (usage, unreadable trace or scenario, unknown version),
3 target or harness failure.  Errors print as one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Sequence
from typing import NoReturn

from reference_model.errors import KeySharedError

__all__ = ["COMMANDS", "ArgumentParser", "build_parser", "main"]

#: Subcommand modules under ``pytest_keyshared.commands``, in the order ``--help`` lists them.
COMMANDS: tuple[str, ...] = ("run", "soak", "check", "replay", "ranges", "select")


class ArgumentParser(argparse.ArgumentParser):
    """An argparse parser whose usage errors are one line and exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="keyshared",
        description="Check Pulsar-compatible brokers against Key_Shared, deduplication and "
        "replicated-subscription contracts.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=ArgumentParser)
    for name in COMMANDS:
        qualified = f"pytest_keyshared.commands.{name}"
        if importlib.util.find_spec(qualified) is None:  # a subcommand not built yet
            continue
        importlib.import_module(qualified).add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "handler", None) is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.handler(args))
    except KeySharedError as exc:
        print(f"keyshared {args.command}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"keyshared {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
