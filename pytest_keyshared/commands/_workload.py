"""The options every command that runs a workload shares (``run``, ``replay``, ``soak``), defined once.

So the sibling commands take a scenario, a seed, a target and its options the same way, with the same
defaults and bounds:

* the scenario as a positional ``SCENARIO`` or ``--scenario/-s`` (a built-in name or a TOML/JSON file;
  default ``steady-state``);
* ``--seed N``: 0 <= N <= 4294967295, default 0;
* ``--target/-t T`` (default ``pulsar-lite``) and ``-o/--option KEY=VALUE`` (repeatable; VALUE is JSON when it
  parses, else text);
* ``--out/-d DIR``: where the artifacts go.  By default a directory of its own under ``keyshared-runs/``, made
  unique when it is created, so two runs never write over each other;
* ``--profile NAME``.

A new command calls :func:`add_workload_options` in its ``add_parser`` and :func:`scenario_name`,
:func:`target_options` and :func:`claim_out_dir` in its handler.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from reference_model.errors import InvalidArgument

__all__ = [
    "DEFAULT_SCENARIO",
    "DEFAULT_TARGET",
    "RUNS_DIR",
    "SEED_MAX",
    "add_workload_options",
    "claim_out_dir",
    "kept_if_written",
    "parse_option",
    "parse_seed",
    "scenario_name",
    "target_options",
]

DEFAULT_SCENARIO = "steady-state"
DEFAULT_TARGET = "pulsar-lite"
SEED_MAX = 2**32 - 1
#: Parent of the default artifacts directories, relative to the working directory.
RUNS_DIR = Path("keyshared-runs")


def add_workload_options(parser: argparse.ArgumentParser, *, out_help: str) -> None:
    """Add SCENARIO / ``--scenario``, ``--seed``, ``--target``, ``-o``, ``--out`` and ``--profile`` to ``parser``."""
    parser.add_argument(
        "scenario_arg",
        nargs="?",
        metavar="SCENARIO",
        help=f"a built-in scenario name or a .toml / .json file (default: {DEFAULT_SCENARIO})",
    )
    parser.add_argument("--scenario", "-s", dest="scenario_opt", metavar="NAME|FILE", help="the same as SCENARIO")
    parser.add_argument(
        "--seed", type=parse_seed, default=0, metavar="N", help=f"run seed, 0 to {SEED_MAX} (default: 0)"
    )
    parser.add_argument(
        "--target", "-t", default=DEFAULT_TARGET, metavar="T", help=f"the broker (default: {DEFAULT_TARGET})"
    )
    parser.add_argument(
        "--option",
        "-o",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="target option, repeatable (VALUE parsed as JSON when it parses, else a string)",
    )
    parser.add_argument("--out", "-d", type=Path, metavar="DIR", help=out_help)
    parser.add_argument("--profile", metavar="NAME", help="contract profile (default: from the target's claims)")


def parse_seed(text: str) -> int:
    """An argparse ``type``: a seed between 0 and :data:`SEED_MAX`."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a seed between 0 and {SEED_MAX} but got {text!r}") from None
    if not 0 <= value <= SEED_MAX:
        raise argparse.ArgumentTypeError(f"expected a seed between 0 and {SEED_MAX} but got {value}")
    return value


def parse_option(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` -> ``(key, value)``; VALUE is JSON when it parses (``10``, ``true``, ``{...}``), else text."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise InvalidArgument(f"Expected --option KEY=VALUE (e.g. -o startup_timeout_s=30) but got {text!r}.")
    try:
        value: Any = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key.strip(), value


def scenario_name(args: argparse.Namespace) -> str:
    """The scenario the command line names: SCENARIO or ``--scenario`` (not two different ones)."""
    positional, option = args.scenario_arg, args.scenario_opt
    if positional is not None and option is not None and positional != option:
        raise InvalidArgument(
            f"Two scenarios given: {positional!r} and --scenario {option!r}; give one (positional or --scenario)."
        )
    return str(positional or option or DEFAULT_SCENARIO)


def target_options(args: argparse.Namespace, **shortcuts: Any) -> dict[str, Any]:
    """The ``-o KEY=VALUE`` options as a dict; ``shortcuts`` (from dedicated flags) apply unless ``-o`` sets them."""
    options = {key: value for key, value in shortcuts.items() if value is not None}
    options.update(parse_option(o) for o in args.option)
    return options


def claim_out_dir(given: Path | None, stem: str) -> Path:
    """The artifacts directory: ``given`` as is, else a new ``keyshared-runs/<stem>-<time>[-K]`` made now.

    The default is created with ``mkdir(exist_ok=False)`` and a counter on a clash, so two runs started in
    the same second (or by two processes) never share a directory and never overwrite each other's trace.
    """
    if given is not None:
        return given
    RUNS_DIR.mkdir(parents=True, exist_ok=True)
    base = f"{stem}-{time.strftime('%Y%m%d-%H%M%S')}"
    for attempt in range(1, 1000):
        path = RUNS_DIR / (base if attempt == 1 else f"{base}-{attempt}")
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path
    raise InvalidArgument(f"Could not create a new directory under {RUNS_DIR.absolute()} (pid {os.getpid()}).")


@contextlib.contextmanager
def kept_if_written(out_dir: Path) -> Iterator[None]:
    """Remove ``out_dir`` if the command fails and leaves it empty (a target that never started): a directory
    the failure line would point at must hold what was attempted, else it is not left behind."""
    existed = out_dir.exists()
    try:
        yield
    except BaseException:
        if out_dir.is_dir() and (not existed or out_dir.parent == RUNS_DIR):
            with contextlib.suppress(OSError):
                out_dir.rmdir()  # only when empty
        raise
