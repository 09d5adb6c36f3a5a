"""``keyshared report TRACE [-o report.html] [--verdict verdict.json]``: draw a trace and its verdict as a page.

One self-contained HTML file (opens from disk, no network access): the verdict, a per-key timeline of holds
with the violations' witnesses, each violation explained, the claimed selector's hash ranges over time, and
throughput.  Without ``--verdict`` the trace is checked first (python engine).

Exit codes follow the verdict drawn, as ``keyshared check``: 0 valid, 1 violations found, 2 bad input (an
unreadable trace or verdict), 4 verdict ``unknown``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pytest_keyshared.commands._errors import EXIT_UNKNOWN, EXIT_VALID, EXIT_VIOLATIONS
from pytest_keyshared.commands._verdict_text import verdict_headline

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "report",
        help="write a self-contained HTML report of a trace and its verdict",
        description="Write one self-contained HTML page (no network access) showing a trace's verdict, a per-key"
        " timeline with each violation's witnesses, the claimed selector's hash ranges over time and throughput.",
    )
    parser.add_argument("trace", metavar="TRACE", help="trace file: .jsonl, .jsonl.gz or .parquet")
    parser.add_argument(
        "-o",
        "--out",
        type=Path,
        default=None,
        metavar="FILE",
        help="the page to write (default: report.html beside TRACE)",
    )
    parser.add_argument(
        "--verdict", type=Path, default=None, metavar="FILE", help="a verdict.json to draw (default: check the trace)"
    )
    parser.add_argument("--profile", metavar="NAME", default=None, help="contract profile when checking")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pytest_keyshared.report import REPORT_NAME, load_verdict, write_report

    trace = Path(args.trace)
    out = args.out if args.out is not None else trace.with_name(REPORT_NAME)
    verdict: Any = None if args.verdict is None else load_verdict(args.verdict)
    if verdict is None:
        from pytest_keyshared.commands.check import check_file

        verdict = check_file(trace, profile=args.profile).to_json()
    written = write_report(trace, out, verdict, writer="keyshared report")
    # the verdict drawn, as `keyshared check` words it: the exit code (1 for violations) is the verdict's
    print(verdict_headline(verdict))
    print(f"report: {written}")
    if verdict.get("validity") == "unknown":
        return EXIT_UNKNOWN
    return EXIT_VALID if verdict.get("valid", True) else EXIT_VIOLATIONS
