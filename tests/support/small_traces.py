"""Small hand-written traces several test modules need (importable as ``small_traces``: tests/support is on
pytest's pythonpath)."""

from __future__ import annotations

from conformance.trace.builder import TraceBuilder

__all__ = ["cut_off_at_the_end", "key_overlap"]


def key_overlap(*, end: bool = True) -> TraceBuilder:
    """c1 holds 1:0 of key ``k`` while c2 receives 1:1 of it: one ``key_overlap`` and one ``out_of_order``.

    With ``end=False`` the trace stays open, for a test to add events before calling ``end()`` itself.
    """
    b = TraceBuilder()
    b.open("c1")
    b.open("c2")
    b.publish("k", "1:0")
    b.publish("k", "1:1")
    b.receive("c1", "k", "1:0")
    b.receive("c2", "k", "1:1")
    b.ack("c1", "1:0")
    b.ack("c2", "1:1")
    if end:
        b.end()
    return b


def cut_off_at_the_end(*, drained: bool) -> TraceBuilder:
    """c2 is cut off (a partition, recorded naming it) before it receives 1:1 of key ``j``; the run ends with c2
    still away.  Not ``drained``: ``end`` names c2 in ``unreachable``, as the driver writes it, and
    ``undelivered`` is not judged; ``drained``: 1:1 is ``undelivered``."""
    b = TraceBuilder()
    b.open("c1")
    b.open("c2")
    b.publish("k", "1:0")
    b.publish("j", "1:1")
    b.receive("c1", "k", "1:0")
    b.add("fault", fault="net_partition", client="c2", consumers=["c2"])
    b.ack("c1", "1:0")
    unreachable = None if drained else ["c2"]
    b.add("end", drained=drained, quiet=False, received=1, expected=2, acked=1, unreachable=unreachable)
    return b
