"""Delivery traces: the format (v1), recording, and (see :mod:`conformance.trace.reader`) reading."""

from conformance.trace.events import CORE_FIELDS, DEDUP_RECEIPT, Event, MsgId, Op, Result
from conformance.trace.header import TRACE_FORMAT, SelectorSpec, SubscriptionSpec, TraceHeader
from conformance.trace.writer import TraceWriter

__all__ = [
    "CORE_FIELDS",
    "DEDUP_RECEIPT",
    "TRACE_FORMAT",
    "Event",
    "MsgId",
    "Op",
    "Result",
    "SelectorSpec",
    "SubscriptionSpec",
    "TraceHeader",
    "TraceWriter",
]
