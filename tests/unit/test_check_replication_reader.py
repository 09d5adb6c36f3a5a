"""A reader in another region reads exactly the messages published (``undelivered`` for one it missed), on
hand-written failover traces, both ways
(``ReplicatedSubscriptionTest.testReplicatedSubscriptionAcrossTwoRegionsGetLastMessage``).

The reader (an ``open`` with ``reader: true``) is judged when it opens right after a settled ``snapshot``: every
message published before must be among its receives by its ``close``.  It acknowledges what it reads, as the
clients' readers do, so the ordinary delivery checks see nothing owed to it.
"""

from __future__ import annotations

import pytest

from conformance.checks import Kind, Validity, check_trace
from conformance.trace import SubscriptionSpec, TraceHeader
from conformance.trace.builder import TraceBuilder

A, B = "t@r1", "t@r2"


def trace(*, reads: list[int], settled: bool = True, step: int = 10) -> TraceBuilder:
    header = TraceHeader(
        target="hand-written", subscription=SubscriptionSpec("s"), deduplication=False, extra={"clusters": ["r1", "r2"]}
    )
    b = TraceBuilder(header, step=step)
    b.open("c1", topic=A)
    for n in range(3):
        b.add("publish", topic=A, producer="p", key=f"k{n}", msg_id=f"1:{n}", uid=f"m{n}", result="ok")
    for n in range(3):
        b.receive("c1", f"k{n}", f"1:{n}", uid=f"m{n}", topic=A)
        b.ack("c1", f"1:{n}", topic=A)
    for cluster in ("r1", "r2"):
        b.add("snapshot", subscription="s", cluster=cluster, backlog=0, settled=settled, snapshot_periods=2)
    b.add("open", topic=B, subscription="reader-r2", consumer="reader-r2", result="ok", reader=True)
    for n in reads:
        b.receive("reader-r2", f"k{n}", f"7:{n}", uid=f"m{n}", topic=B)
        b.ack("reader-r2", f"7:{n}", topic=B)
    b.close("reader-r2")
    b.close("c1")
    b.add("failover", topic=A, subscription="s", cluster="r1", to="r2")
    b.open("c1", topic=B)
    b.close("c1")
    b.end(drained=True)
    return b


@pytest.mark.parametrize("step", [10, 0], ids=["distinct-timestamps", "equal-timestamps"])
def test_a_reader_that_misses_a_message_is_found(step: int) -> None:
    b = trace(reads=[0, 2], step=step)
    verdict = check_trace(b.events, header=b.header)
    assert verdict.validity is Validity.INVALID
    assert [(v.kind, v.facts["uid"]) for v in verdict.violations] == [(Kind.UNDELIVERED, "m1")]
    assert "reader 'reader-r2' on r2 never read m1" in verdict.violations[0].explanation


def test_a_reader_that_reads_everything_passes() -> None:
    b = trace(reads=[0, 1, 2])
    verdict = check_trace(b.events, header=b.header)
    assert verdict.validity is Validity.VALID, verdict.render()


def test_a_reader_after_an_unsettled_snapshot_is_not_judged() -> None:
    b = trace(reads=[0], settled=False)
    verdict = check_trace(b.events, header=b.header)
    assert verdict.validity is Validity.VALID, verdict.render()
    assert any("reader 'reader-r2' E" in n and "not judged" in n for n in verdict.notes)
