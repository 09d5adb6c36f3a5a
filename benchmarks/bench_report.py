"""Report generation against checking, on a large trace: time and page size (prints figures; not a test).

    python benchmarks/bench_report.py /tmp/trace-1m.parquet [--out /tmp/report-1m.html]

Make the trace with ``benchmarks/gen_trace.py --events 1000000 --out /tmp/trace-1m.parquet``.  Prints the
time to check the trace (the streaming engine, as ``keyshared check``), the time to draw its report from that
verdict (one pass over the trace plus the page), and the page's size.  The issue's bounds: the page under
5 MB for a 1M-event trace, and drawing no slower than checking.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", type=Path)
    parser.add_argument("--out", type=Path, default=Path("/tmp/keyshared-bench-report.html"))
    parser.add_argument("--rounds", type=int, default=3, help="rounds; the best of each is printed (default 3)")
    args = parser.parse_args()

    from conformance.checks import check_trace
    from conformance.report import build_report_data, render_html
    from conformance.trace.reader import open_trace

    checks, reports = [], []
    verdict = None
    page = ""
    for _ in range(args.rounds):
        gc.collect()
        start = time.perf_counter()
        verdict = check_trace(open_trace(args.trace))
        checks.append(time.perf_counter() - start)
        gc.collect()
        start = time.perf_counter()
        page = render_html(build_report_data(open_trace(args.trace), verdict.to_json()))
        args.out.write_text(page, encoding="utf-8")
        reports.append(time.perf_counter() - start)
    assert verdict is not None
    size = len(page.encode("utf-8"))
    check_s, report_s = min(checks), min(reports)
    print(f"trace: {args.trace} ({verdict.events} events; {sum(verdict.counts.values())} violations)")
    print(f"check:  {check_s:7.2f} s   (best of {args.rounds}: {', '.join(f'{s:.2f}' for s in checks)})")
    print(f"report: {report_s:7.2f} s   (best of {args.rounds}: {', '.join(f'{s:.2f}' for s in reports)})")
    print(f"report / check: {report_s / check_s:.2f}")
    print(f"page: {args.out} {size / 1e6:.2f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
