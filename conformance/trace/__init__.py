"""Delivery traces: the format (v1), recording, reading and validation, Parquet, hand-written traces.

Specification: ``docs/trace-format.md``.
"""

from conformance.trace.builder import TraceBuilder
from conformance.trace.events import CORE_FIELDS, DEDUP_RECEIPT, Event, MsgId, Op, Result
from conformance.trace.header import TRACE_FORMAT, HeaderError, SelectorSpec, SubscriptionSpec, TraceHeader
from conformance.trace.parquet import convert_to_parquet, write_parquet
from conformance.trace.reader import TraceSource, open_trace, read_trace
from conformance.trace.validation import TraceFormatError
from conformance.trace.writer import TraceWriter

__all__ = [
    "CORE_FIELDS",
    "DEDUP_RECEIPT",
    "TRACE_FORMAT",
    "Event",
    "HeaderError",
    "MsgId",
    "Op",
    "Result",
    "SelectorSpec",
    "SubscriptionSpec",
    "TraceBuilder",
    "TraceFormatError",
    "TraceHeader",
    "TraceSource",
    "TraceWriter",
    "convert_to_parquet",
    "open_trace",
    "read_trace",
    "write_parquet",
]
