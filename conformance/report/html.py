"""The report page: one self-contained HTML file (inline CSS, script and data; no network access).

The page carries its data as JSON in a ``<script type="application/json">`` element and a small script
(``page.js``) that draws the timeline, the violations, the hash ranges and the throughput as SVG.  Nothing is
fetched: the file opens from disk, in any browser, offline.
"""

from __future__ import annotations

import html
import json
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["CSP", "page_asset", "render_html"]

#: The page may load nothing: no script, style or image from anywhere but itself.
CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"


@cache
def page_asset(name: str) -> str:
    """The text of ``page.css`` or ``page.js`` (shipped beside this module)."""
    return resources.files("conformance.report").joinpath(name).read_text(encoding="utf-8")


def _script_json(data: Any) -> str:
    """JSON safe inside a ``<script>`` element (no ``</script>``, no ``<!--``)."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_html(data: dict[str, Any]) -> str:
    """The page for :func:`~conformance.report.data.build_report_data`'s result."""
    title = html.escape(str(data.get("title", "keyshared report")))
    source = html.escape(str(data.get("source", "")))
    writer = data.get("writer")
    by = f' (<code id="writer">{html.escape(str(writer))}</code>)' if writer else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<title>{title}</title>
<style>{page_asset("page.css")}</style>
</head><body><main>
<h1>{title}</h1>
<p class="muted" id="subtitle">Trace <code>{source}</code> · written by pytest-keyshared{by}</p>
<section id="verdict"></section>
<div id="summarised"></div>
<nav class="toc" id="toc"><a href="#timeline">Timeline</a> · <a href="#ranges">Hash ranges</a> ·
<a href="#throughput">Throughput</a> · <a href="#violations">Violations</a> <span id="toc-violations"
class="muted"></span></nav>
<h2 id="timeline">Timeline</h2>
<p class="muted">One lane per key (or per consumer); time runs left to right by event index (or in seconds). A bar
is a message held by a consumer, from its receive to its release (ack, nack, redeliver, close, crash or fault),
coloured by consumer; ticks are acks, crosses nacks, dots publishes; vertical lines are membership changes (O open,
C close/crash) and faults (F, orange, named in the top row). A lane with violations has a red label; red markers
are witness events: click one for its explanation. A selected violation's witnesses are ringed and its lanes
banded.</p>
<div class="controls"><label>lanes <select id="mode"><option value="key">per key</option><option value="consumer">per
consumer</option></select></label><label>axis <select id="axis"><option value="i">event index</option><option
value="t">time</option></select></label><button id="zoom-all" type="button">show the whole run</button>
<span id="view-range" class="muted"></span></div>
<div class="legend" id="timeline-legend"></div>
<div class="scroll" id="timeline-box"><div id="timeline-scroll"></div></div>
<h2 id="ranges">Hash ranges over time</h2>
<div id="ranges-box"></div>
<h2 id="throughput">Throughput</h2>
<div id="throughput-box"></div>
<h2 id="violations">Violations</h2>
<p class="muted">By kind, then by key. A folded line is a group of one kind on one key, with its count: open it for
the explanations and witnesses.</p>
<div id="violation-list"></div>
</main>
<a id="tl" href="#timeline" hidden></a>
<script type="application/json" id="report-data">{_script_json(data)}</script>
<script>{page_asset("page.js")}</script>
</body></html>
"""
