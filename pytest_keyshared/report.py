"""Writing report pages: one per trace (:func:`write_report`) and an index for a suite run (:func:`write_index`).

The pages themselves are built by :mod:`conformance.report` (pure); this module reads the verdict, checks the
trace when no verdict is given, and writes the files.  ``keyshared run``, ``keyshared replay``, ``keyshared
soak`` and the plugin's ``--keyshared-report DIR`` all call :func:`write_report`.
"""

from __future__ import annotations

import html
import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reference_model.errors import InvalidArgument

__all__ = ["INDEX_NAME", "REPORT_NAME", "load_verdict", "report_name", "write_index", "write_report"]

#: The page ``keyshared run`` / ``replay`` / ``soak`` write beside the trace.
REPORT_NAME = "report.html"
#: The suite run's index page in the ``--keyshared-report`` directory.
INDEX_NAME = "index.html"


def load_verdict(verdict: Any) -> dict[str, Any]:
    """A verdict as its JSON dict: a :class:`~conformance.verdict.Verdict`, a dict, or a ``verdict.json`` path."""
    if isinstance(verdict, Mapping):
        return dict(verdict)
    if hasattr(verdict, "to_json"):
        data = verdict.to_json()
        return json.loads(data) if isinstance(data, str) else dict(data)
    path = Path(verdict)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InvalidArgument(f"cannot read the verdict {str(path)!r}: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidArgument(
            f"{path}: not a verdict (JSON expected, as `keyshared check --json` writes): {exc}"
        ) from None
    if not isinstance(data, dict) or "violations" not in data or "counts" not in data:
        raise InvalidArgument(
            f"{path}: not a verdict: expected an object with 'violations' and 'counts', as `keyshared check --json`"
            " and `keyshared run` (verdict.json) write"
        )
    return data


def write_report(
    trace_path: str | Path,
    out_path: str | Path,
    verdict: Any = None,
    *,
    title: str | None = None,
    profile: str | None = None,
    writer: str | None = None,
) -> Path:
    """Write the report page of ``trace_path`` to ``out_path``; return the path written.

    ``verdict``: a ``Verdict``, its JSON dict, or a ``verdict.json`` path; None checks the trace (python
    engine, ``profile`` or the header's contract).  A malformed trace or verdict raises ``InvalidArgument``.
    ``writer`` names the command that wrote the page in its subtitle (``"keyshared run"``); None: ``keyshared
    soak`` for a directory of Parquet chunks (only a soak writes one), else no command is named.
    """
    from conformance.report import build_report_data, render_html
    from conformance.trace.reader import open_trace

    if verdict is None:
        from conformance.checks import check_trace

        verdict = check_trace(open_trace(trace_path), profile=profile)
    source = open_trace(trace_path)
    if writer is None and source.chunks:
        writer = "keyshared soak"
    data = build_report_data(source, load_verdict(verdict), title=title, writer=writer)
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(render_html(data), encoding="utf-8")
    os.replace(tmp, out)
    return out


def report_name(case: str, n: int = 0) -> str:
    """A file name for a case's page: the case id with anything unsafe replaced (``n`` > 0: its n-th trace)."""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", case).strip("._") or "case"
    return f"{safe[:150]}{'' if n == 0 else f'-{n + 1}'}.html"


def write_index(
    out_dir: str | Path,
    rows: Sequence[Mapping[str, Any]],
    *,
    title: str,
    contract_lines: Sequence[str] = (),
    baseline_lines: Sequence[str] = (),
) -> Path:
    """Write ``index.html``: the contract table, one row per case (outcome, reason, link), the baseline changes.

    ``rows``: ``{"case", "outcome", "broken", "reason", "note", "pages": [file names]}`` per case.
    """
    from conformance.report.html import page_asset

    out = Path(out_dir) / INDEX_NAME
    out.parent.mkdir(parents=True, exist_ok=True)
    body = []
    for row in rows:
        pages = " ".join(
            f'<a href="{html.escape(p)}">{"report" if k == 0 else f"run {k + 1}"}</a>'
            for k, p in enumerate(row["pages"])
        )
        outcome = str(row["outcome"])
        cls = (
            "invalid" if outcome in ("failed", "error") else "unknown" if outcome in ("xfailed", "xpassed") else "valid"
        )
        if outcome == "skipped":
            cls = ""
        case = html.escape(str(row["case"]))
        body.append(
            f'<tr class="case" data-case="{case}"><td><code>{case}</code></td>'
            f'<td><span class="badge {cls}">{html.escape(outcome)}</span></td>'
            f"<td>{html.escape(', '.join(row.get('broken') or ()))}</td>"
            f"<td>{html.escape(row.get('reason') or '')}{' ' if row.get('reason') and row.get('note') else ''}"
            f'<span class="muted">{html.escape(row.get("note") or "")}</span></td><td>{pages or "—"}</td></tr>'
        )
    table = "\n".join(body)
    contracts = html.escape("\n".join(contract_lines))
    baseline = (
        '<h2 id="baseline">Baseline comparison</h2>'
        f'<pre id="baseline-lines">{html.escape(chr(10).join(baseline_lines))}</pre>'
        if baseline_lines
        else ""
    )
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<style>{page_asset("page.css")} .badge:not(.valid):not(.invalid):not(.unknown){{background:#9aa5b1}}
#cases td{{border-top:1px solid var(--line);padding:4px 12px 4px 0}}</style></head><body data-ready="1"><main>
<h1>{html.escape(title)}</h1>
<h2>Contracts</h2><pre id="contracts">{contracts}</pre>
{baseline}
<h2>Cases</h2>
<table id="cases"><tr><th>case</th><th>outcome</th><th>contracts broken</th><th>expectation reason / note</th>
<th>page</th></tr>
{table}
</table></main></body></html>
"""
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(page, encoding="utf-8")
    os.replace(tmp, out)
    return out
