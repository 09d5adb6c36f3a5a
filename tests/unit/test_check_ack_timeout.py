"""The client's ack timeout in a trace (a ``nack`` with ``cause = "ack_timeout"``) on the checker, both ways.

Pulsar's ``KeySharedSubscriptionTest.receiveAndCheck``: c1 acknowledges every other message; after the timeout
exactly the other half comes back and nothing acknowledged does.  The correct broker's trace is valid (also with
every event at t = 0); a broker that sends an acknowledged message back is ``redelivered_after_ack``; one that
never sends the released half back leaves it ``undelivered``; an ack logged after the release, which may never
have arrived, excuses the copy that comes back (``tests/support/ack_timeout_traces.py``).
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from ack_timeout_traces import ACK_TIMEOUT_CASES

from conformance.checks import check_trace
from conformance.trace.builder import TraceBuilder
from conformance.trace.events import Event


def _flat(b: TraceBuilder) -> list[Event]:
    return [replace(e, t=0, extra={**e.extra, "t0": 0} if "t0" in e.extra else e.extra) for e in b.events]


@pytest.mark.parametrize("case", sorted(ACK_TIMEOUT_CASES))
@pytest.mark.parametrize("flat", [False, True], ids=["timed", "equal-timestamps"])
def test_the_ack_timeout_release_is_judged_as_the_holders_nack(case: str, flat: bool) -> None:
    build, expected = ACK_TIMEOUT_CASES[case]
    b = build()
    verdict = check_trace(_flat(b) if flat else b.events, header=b.header)
    assert [v.kind.value for v in verdict.all_violations()] == expected, verdict.render()
    assert verdict.valid is (expected == [])
