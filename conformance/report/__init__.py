"""The run report: a self-contained HTML page of a trace and its verdict.

Pure apart from reading the trace source it is handed and its own page assets (``page.css``, ``page.js``).

``build_report_data(source, verdict_json)`` gathers what the page shows in one pass over the trace;
``render_html(data)`` turns it into the page.  Writing files is ``pytest_keyshared.report``'s job.
"""

from conformance.report.data import REPORT_FORMAT, build_report_data
from conformance.report.html import render_html

__all__ = ["REPORT_FORMAT", "build_report_data", "render_html"]
