"""Message expiry (TTL) on the checker, both ways (``tests/support/expiry_traces.py``).

A message the broker may have expired (sent more than the TTL before the expiry was recorded) is acknowledged by
the broker: not ``undelivered``, and its holder's hold ends, so a joiner may take the key.  One too young to have
expired is still owed and still held.  With every event at t = 0 the clock shows no age, so everything may have
expired (the rule excuses, never condemns).
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from expiry_traces import EXPIRY_CASES

from conformance.checks import check_trace
from conformance.checks.expiry import may_expire
from conformance.trace.builder import TraceBuilder
from conformance.trace.events import Event


def _flat(b: TraceBuilder) -> list[Event]:
    return [replace(e, t=0, extra={**e.extra, "t0": 0} if "t0" in e.extra else e.extra) for e in b.events]


@pytest.mark.parametrize("case", sorted(EXPIRY_CASES))
@pytest.mark.parametrize("flat", [False, True], ids=["timed", "equal-timestamps"])
def test_an_expired_message_is_acknowledged_by_the_broker(case: str, flat: bool) -> None:
    build, timed, equal = EXPIRY_CASES[case]
    b = build()
    verdict = check_trace(_flat(b) if flat else b.events, header=b.header)
    assert sorted(v.kind.value for v in verdict.all_violations()) == (equal if flat else timed), verdict.render()


def test_an_expiry_is_no_fault_for_misassigned() -> None:
    b = EXPIRY_CASES["joiner-after-expiry"][0]()
    verdict = check_trace(b.events, header=b.header)
    assert not any("not judged after the fault" in note for note in verdict.notes), verdict.notes


@pytest.mark.parametrize(
    ("t0", "t", "seconds", "expected"),
    [
        (0, 3_000_000_000, 2, True),
        (0, 2_000_000_000, 2, False),  # exactly the TTL old: not older than it
        (1, 1, 2, True),  # the clock did not move
        (None, 5, 2, True),  # send time unknown
        (0, 3_000_000_000, "2", True),  # malformed TTL: no evidence
    ],
)
def test_may_expire(t0: int | None, t: int, seconds: object, expected: bool) -> None:
    assert may_expire(t0, t, seconds) is expected
