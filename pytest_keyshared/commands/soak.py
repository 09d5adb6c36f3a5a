"""``keyshared soak``: a long randomized run with churn and faults against a target, judged at the end.

A thin shell over :func:`pytest_keyshared.soak.run_soak`.  Every option is checked, and the target is asked
whether it can take the faults requested, before anything starts (bad input: one line, exit 2).  While it runs:
one live status line on a terminal, a plain line every few seconds otherwise.  Ctrl-C (or SIGTERM) is
acknowledged at once and works in steps (:mod:`pytest_keyshared.soak.interrupt`): the first ends the load, the
second stops waiting for the clients to close, the third stops the check; the trace is ended and what was
recorded judged and summarised, exit 130.  A broker that stops serving is a ``stalled`` violation (exit 1,
the last line says what happened: :mod:`pytest_keyshared.soak.stall`); one that died, a target failure (3).
Exit codes as ``keyshared run``: 0 valid, 1 violations, 2 bad input, 3 target failure, 4 no verdict, 130
interrupted.  The report page (``report.html``) is named in the final lines.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

from pytest_keyshared.commands._layout import add_layout_options, buckets_from_args
from reference_model.errors import InvalidArgument

__all__ = ["add_parser", "plan_from_args", "soak"]

_EPILOG = """\
faults (comma-separated): restart (broker restart; targets that can), cut (close one client's connections),
  stall (forward nothing for a while), delay (add latency for a while), partition (cut one client off, then
  heal); the network faults go through a loopback proxy per client (brokers reached over TCP only)

examples:
  keyshared soak --target model --duration 10m --churn 30 --faults restart
  keyshared soak --duration 2m --churn 12 --faults restart,cut,stall,delay,partition --out soak1
  keyshared soak --target pulsar://127.0.0.1:6650 --messages 100000 --rate 2000 --key-distribution zipf:1.1
"""

#: Plain progress lines (not on a terminal) come this often.
_PLAIN_EVERY_S = 5.0


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "soak",
        help="a long randomized run with consumer churn and faults, traced to Parquet chunks",
        description="Run a seeded random workload (publishes, consumer behaviours, joins, leaves, crashes) with a"
        " nemesis (broker restarts, network faults on single clients) against a target for a duration or a"
        " number of messages, drain, and check the whole trace. Writes trace/part-NNNNNN.parquet, verdict.json,"
        " report.html, summary.json (with a per-second throughput series), soak.json and the logs to the output"
        " directory. Ctrl-C ends the load (again: stop waiting for the clients; a third time: stop the check).",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--target", "-t", default="pulsar-lite", metavar="T", help="the broker (default: pulsar-lite)")
    bound = parser.add_mutually_exclusive_group()
    bound.add_argument("--duration", metavar="D", help="how long to load, e.g. 90s, 10m, 1h (default: 1m)")
    bound.add_argument("--messages", type=_int_arg, metavar="N", help="how many messages to publish")
    parser.add_argument("--rate", type=_float_arg, default=500.0, metavar="MSG_PER_S", help="default: 500")
    parser.add_argument("--producers", type=_int_arg, default=2, metavar="P", help="default: 2")
    parser.add_argument("--consumers", type=_int_arg, default=3, metavar="C", help="default: 3")
    parser.add_argument("--keys", type=_int_arg, default=100, metavar="K", help="default: 100")
    parser.add_argument("--key-distribution", default="uniform", metavar="uniform|zipf:S", help="default: uniform")
    parser.add_argument("--churn", type=_float_arg, default=6.0, metavar="PER_MIN", help="membership and behaviour"
                        " changes per minute (default: 6; 0: none)")  # fmt: skip
    parser.add_argument(
        "--faults", default="", metavar="LIST", help="restart,cut,stall,delay,partition (default: none)"
    )
    parser.add_argument(
        "--publish",
        default="auto",
        choices=("auto", "mixed", "sync"),
        help="mixed: sync sends and async key-based batches; sync: sync only; auto (default): sync on targets where"
        " pipelined sends are a known trap (pulsar-lite), else mixed",
    )
    parser.add_argument(
        "--behaviours",
        default="",
        metavar="LIST",
        help="consumer behaviours to draw from: ack,ack_after,slow,hold,nack (default: all; on pulsar-lite all but"
        " nack, which stalls it)",
    )
    parser.add_argument("--seed", type=_int_arg, default=0, metavar="N", help="default: 0")
    parser.add_argument("--out", "-d", type=Path, metavar="DIR", help="artifacts directory (default: keyshared-runs/)")
    parser.add_argument("--profile", metavar="NAME", help="contract profile (default: from the target's claims)")
    parser.add_argument("--drain-timeout", default="30s", metavar="D", help="bound on the final drain (default: 30s)")
    parser.add_argument(
        "--option", "-o", action="append", default=[], metavar="KEY=VALUE", help="target option, repeatable"
    )
    parser.add_argument("--no-live-check", action="store_true", help="check the chunks at the end only")
    add_layout_options(parser, what="the trace's chunks")
    parser.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    parser.add_argument("--quiet", "-q", action="store_true", help="no status line")
    parser.set_defaults(handler=soak)


def _int_arg(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


def _float_arg(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None


def plan_from_args(args: argparse.Namespace) -> Any:
    """The :class:`~conformance.soak.SoakPlan` the options describe (raises ``InvalidArgument``)."""
    from conformance.soak import SoakPlan, parse_duration, parse_faults

    duration_s: float | None = None
    if args.messages is None:
        duration_s = parse_duration(args.duration or "1m")
    return SoakPlan(
        duration_s=duration_s,
        messages=args.messages,
        rate=args.rate,
        producers=args.producers,
        consumers=args.consumers,
        keys=args.keys,
        key_distribution=args.key_distribution,
        churn_per_min=args.churn,
        faults=parse_faults(args.faults),
        seed=args.seed,
        publish=args.publish,
        behaviours=tuple(b.strip() for b in args.behaviours.split(",") if b.strip()),
        drain_timeout_ms=int(parse_duration(args.drain_timeout) * 1000),
    )


def soak(args: argparse.Namespace) -> int:
    """The command, under the CLI's error policy (:mod:`pytest_keyshared.commands._errors`): bad input is checked
    before anything starts; Ctrl-C or SIGTERM ends the soak with a complete trace (130)."""
    from pytest_keyshared.commands._errors import look_at
    from pytest_keyshared.commands._workload import claim_out_dir, parse_option
    from pytest_keyshared.soak import check_soak_plan
    from pytest_keyshared.targets import make_target

    plan = plan_from_args(args)
    buckets = buckets_from_args(args)
    options = dict(parse_option(o) for o in args.option)
    if args.profile is not None:
        from conformance.checks import get_profile

        get_profile(args.profile)  # an unknown profile is bad input: say so before starting anything
    if args.out is not None and any((args.out / "trace").glob("part-*.parquet")):
        raise InvalidArgument(f"{args.out} already holds a soak trace; pass another --out.")
    out_dir = claim_out_dir(args.out, f"soak-seed{plan.seed}").absolute()
    target = make_target(args.target, artifacts_dir=out_dir / "target", options=options)
    check_soak_plan(target, plan)
    look_at(out_dir)
    printer = _StatusPrinter(enabled=not (args.quiet or args.json))
    try:
        target.start()
        if not args.json:
            bound = f"{plan.messages} messages" if plan.messages else f"{plan.duration_s:g}s"
            print(
                f"keyshared soak: {target.describe()}, {bound} at <= {plan.rate:g} msg/s, seed {plan.seed},"
                f" faults {','.join(plan.faults) or 'none'}, churn {plan.churn_per_min:g}/min",
                flush=True,
            )
        result = _run(target, plan, args, out_dir, printer, buckets)
    finally:
        printer.end()
        target.stop()
    if args.json:
        print(json.dumps(result.summary(), sort_keys=True))
    else:
        print(_render(result), flush=True)
    if result.interrupted:  # as every command says it (pytest_keyshared.commands._errors), once all is written
        print(f"keyshared soak: interrupted; what was recorded is in {out_dir}", file=sys.stderr, flush=True)
    return int(result.exit_code)


def _run(
    target: Any, plan: Any, args: argparse.Namespace, out_dir: Path, printer: _StatusPrinter, buckets: int | None
) -> Any:
    from pytest_keyshared.soak import run_soak

    return run_soak(
        target,
        plan,
        out_dir=out_dir,
        profile=args.profile,
        live_check=not args.no_live_check,
        status=printer,
        buckets=buckets,
    )


class _StatusPrinter:
    """One status line rewritten in place on a terminal; a plain line every few seconds otherwise.  Each Ctrl-C
    is acknowledged at once on a line of its own (also with ``--quiet`` and ``--json``): what the soak stops,
    what it still waits for, and what another Ctrl-C would do (:mod:`pytest_keyshared.soak.interrupt`)."""

    def __init__(self, *, enabled: bool) -> None:
        self.enabled = enabled
        self.tty = sys.stderr.isatty()
        self._next_plain = 0.0
        self._shown = False
        self._acknowledged = 0
        self._stage: tuple[str, str] = ("load", "")

    def __call__(self, status: Any) -> None:
        if status.interrupts > self._acknowledged:
            self._acknowledged = status.interrupts
            self._say(_acknowledgement(status))
        if not self.enabled:
            return
        line = status.line()
        if self.tty:
            width = shutil.get_terminal_size((120, 20)).columns
            sys.stderr.write("\r" + line[: width - 1].ljust(width - 1))
            sys.stderr.flush()
            self._shown = True
        else:  # every few seconds, and at once when the phase or what the teardown waits for changes
            stage = (status.phase, status.waiting.split(" (", 1)[0])
            if status.elapsed_s >= self._next_plain or stage != self._stage:
                self._next_plain, self._stage = status.elapsed_s + _PLAIN_EVERY_S, stage
                print(f"  {line}", file=sys.stderr, flush=True)

    def _say(self, text: str) -> None:
        """A line of its own, over the status line on a terminal (which the next status redraws below it)."""
        if self._shown:
            width = shutil.get_terminal_size((120, 20)).columns
            sys.stderr.write("\r" + " " * (width - 1) + "\r")
            self._shown = False
        print(text, file=sys.stderr, flush=True)

    def end(self) -> None:
        if self._shown:
            sys.stderr.write("\n")
            sys.stderr.flush()
            self._shown = False


def _acknowledgement(status: Any) -> str:
    """What the ``status.interrupts``-th Ctrl-C does, said at once."""
    from pytest_keyshared.soak.runner import CLOSE_BOUND_S

    if status.interrupts == 1:
        return (
            f"keyshared soak: interrupted at {status.elapsed_s:.1f}s: stopping the load; waiting for the consumers"
            f" and producers to close (at most {CLOSE_BOUND_S:g}s each) and the trace's last chunk, then checking"
            " what was recorded; Ctrl-C again to stop waiting for the clients"
        )
    if status.interrupts == 2:
        return (
            "keyshared soak: interrupted again: not waiting for the clients to close; ending the trace and checking"
            f" what was recorded ({status.events} events); Ctrl-C again to stop the check (no verdict)"
        )
    return "keyshared soak: interrupted a third time: stopping the check; the trace and summary are kept, no verdict"


def _render(result: Any) -> str:
    c = result.counters
    lines = []
    drain = "drained" if result.drained else "not drained"
    if result.drained:
        drain += " (quiet)" if result.quiet else " (drain bound expired)"
    lines.append(
        f"  published {c.published_ok} ok"
        + (f", {c.published_info} unknown" if c.published_info else "")
        + (f", {c.published_fail} failed" if c.published_fail else "")
        + f"; received {c.received}; acknowledged {c.acked_expected} of {c.expected_uids}; {drain};"
        f" {result.events} events"
    )
    faults = ", ".join(f"{kind} x{n}" for kind, n in sorted(result.faults.items())) or "none"
    lines.append(f"  faults injected: {faults}")
    rates = [row["produced"] for row in result.throughput if row["produced"] > 0]
    if rates:
        lines.append(f"  produced per second: mean {sum(rates) / len(rates):.0f}, max {max(rates):.0f}")
    lines.extend(f"  step failed ({s.do}): {s.note}" for s in result.failed_steps[:10])
    lines.extend(f"  note: {n}" for n in result.notes)
    from pytest_keyshared.commands._verdict_text import verdict_lines

    lines.extend(verdict_lines(result.verdict, result.violation_kinds(), result.out_dir / "verdict.json"))
    if "report" in result.artifacts:
        lines.append(f"  report: {result.artifacts['report']}")
    lines.append(f"  artifacts: {result.out_dir} ({', '.join(sorted(p.name for p in result.artifacts.values()))})")
    lines.append(f"  took {result.duration_s:.1f}s")
    if result.stall is not None:  # the last line says in words what happened
        lines.append(f"keyshared soak: {result.stall.sentence()} (see {result.out_dir / 'verdict.json'})")
    return "\n".join(lines)
